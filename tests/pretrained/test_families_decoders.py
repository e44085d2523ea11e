"""The newer decoder families against transformers' eager attention, to 1e-5 in float32: Qwen3 (q/k norms per head,
and sliding layers), OLMo-2 (q/k norms over the projection, norms after the sublayers), Phi-3 (fused projections,
a sliding window, partial rotary), SmolLM3 (NoPE layers, a sliding one) and SmolLM2 (``llama``), Gemma 2 (soft-caps,
alternating windows, scaled embeddings, (1 + w) norms) and Gemma 3 (q/k norms, a local rope base), and a Gemma 3
image-text checkpoint's text part. The text is longer than every window, so the sliding layers cut keys off."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from family_models import DECODERS, LONG_TEXT, build, reference  # noqa: E402

from attention_core import PretrainedError, load_pretrained  # noqa: E402
from tests.tolerance import assert_close


@pytest.fixture(scope="module")
def decoders(tmp_path_factory):
    return build(tmp_path_factory.mktemp("decoders"), DECODERS)


def _hf(folder, ids):
    ref = reference(folder)
    with torch.no_grad():
        out = ref(torch.as_tensor(ids)[None], output_attentions=True)
    return out.logits[0].numpy(), torch.stack(out.attentions)[:, 0].numpy()


@pytest.mark.parametrize("name", DECODERS)
def test_ids_logits_and_every_attention_equal_transformers(decoders, name):
    from transformers import PreTrainedTokenizerFast

    model = load_pretrained(decoders[name])
    trace = model.trace(LONG_TEXT)
    hf_tok = PreTrainedTokenizerFast(tokenizer_file=str(decoders[name] / "tokenizer.json"))
    assert trace.ids.tolist() == hf_tok(LONG_TEXT)["input_ids"]
    assert trace.prediction == "next"
    logits, attentions = _hf(decoders[name], trace.ids)
    assert trace.attentions.shape == attentions.shape
    assert_close(trace.logits, logits)
    assert_close(trace.attentions, attentions)
    for layer in range(model.info.layers):
        for head in range(model.info.heads):
            steps = trace.head_steps(layer, head)
            assert_close(steps.weights, attentions[layer, head])


def test_windows_softcaps_and_ropes_are_the_configs(decoders):
    n = len(load_pretrained(decoders["gemma2"]).encode(LONG_TEXT))
    assert n > 7  # longer than every window below
    gemma2 = load_pretrained(decoders["gemma2"]).trace(LONG_TEXT)  # layers: sliding, full, sliding; window 5
    assert [gemma2.head_setting(i, 0)["window"] for i in range(3)] == [5, None, 5]
    assert gemma2.mask(0).sum(axis=1).max() == 5 and gemma2.mask(1).sum(axis=1).max() == len(gemma2)
    setting = gemma2.head_setting(0, 3)
    assert setting["softcap"] == 3.0 and setting["scale"] == pytest.approx(12 ** -0.5) and setting["kv_head"] == 1
    steps = gemma2.head_steps(0, 3)
    assert steps.capped is not None and np.abs(steps.capped).max() <= 3.0
    assert np.abs(steps.scaled).max() > 3.0  # the cap bends scores that reach past it
    phi3 = load_pretrained(decoders["phi3"]).trace(LONG_TEXT)
    assert {phi3.head_setting(i, 0)["window"] for i in range(3)} == {7}
    smol = load_pretrained(decoders["smollm3"]).trace(LONG_TEXT)  # no_rope_layers [1, 0, 1]; layer 1 slides
    nope = smol.head_setting(1, 0)
    assert nope["rotary_base"] is None and "NoPE" in nope["note"] and nope["window"] == 6
    assert smol.head_setting(0, 0)["rotary_base"] == 2_000_000.0
    gemma3 = load_pretrained(decoders["gemma3_text"]).trace(LONG_TEXT)
    local = gemma3.head_setting(0, 0)
    assert local["rotary_base"] == 50.0 and local["window"] == 6  # the local base of a sliding layer
    glob = gemma3.head_setting(1, 0)  # linear rope scaling on the full layers: given already rotated
    assert glob["rotary_base"] is None and "linear" in glob["note"] and glob["window"] is None
    np.testing.assert_array_equal(glob["q"], gemma3.q[1, 0])


def test_qk_norms_and_fused_projections_load(decoders):
    qwen3 = load_pretrained(decoders["qwen3"])
    assert qwen3.info.family == "qwen3" and qwen3.info.d_head == 16  # head_dim wider than hidden / heads
    lw = qwen3.weights.layers[0]
    assert lw.q_norm is not None and lw.q_norm.weight.shape == (16,)
    olmo = load_pretrained(decoders["olmo2"]).weights.layers[0]
    assert olmo.ln1 is None and olmo.q_norm is not None and olmo.q_norm.weight.shape == (32,)
    phi = load_pretrained(decoders["phi3"]).weights.layers[0]  # qkv_proj (64, 32): q 32 rows, k 16, v 16
    assert phi.q is not None and phi.k is not None and phi.v is not None and phi.mlp_gate is not None
    assert (phi.q.weight.shape, phi.k.weight.shape, phi.v.weight.shape) == ((32, 32), (16, 32), (16, 32))
    shared = {t.untyped_storage().data_ptr() for t in (phi.q.weight, phi.k.weight, phi.v.weight)}
    assert len(shared) == 1  # row views of the one fused tensor, not copies


def test_ablation_on_gemma2_changes_only_that_head(decoders):
    model = load_pretrained(decoders["gemma2"])
    ids = model.encode(LONG_TEXT)
    clean = model.trace(ids)
    off = model.trace(ids, ablate={(1, 2): "zero"})
    assert off.ablated == ((1, 2),)
    np.testing.assert_array_equal(off.attentions[:2], clean.attentions[:2])  # that layer and before: unchanged
    assert np.all(off.head_outputs[1, 2] == 0) and not np.allclose(off.attentions[2], clean.attentions[2])
    assert not np.allclose(off.logits, clean.logits)


def test_gemma3_text_under_an_image_text_prefix(decoders, tmp_path):
    """A Gemma 3 image-text checkpoint keeps its text model under model.language_model. (and older files under
    language_model.model.), beside a vision tower: the text part loads and traces as the text model does."""
    import shutil

    from safetensors.torch import load_file, save_file

    src = decoders["gemma3_text"]
    plain = load_pretrained(src).trace(LONG_TEXT)
    for prefix in ("model.language_model.", "language_model.model."):
        folder = tmp_path / prefix.replace(".", "_")
        folder.mkdir()
        shutil.copy(src / "tokenizer.json", folder)
        text_cfg = json.loads((src / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({"model_type": "gemma3", "text_config": text_cfg,
                                                        "vision_config": {"hidden_size": 8}}))
        tensors = {prefix + k.removeprefix("model."): v for k, v in load_file(str(src / "model.safetensors")).items()}
        tensors["model.vision_tower.patch.weight"] = torch.zeros(2, 2)
        tensors["multi_modal_projector.mm_input_projection_weight"] = torch.zeros(2, 2)
        save_file(tensors, str(folder / "model.safetensors"))
        model = load_pretrained(folder)
        assert model.info.family == "gemma3" and model.info.layers == 4
        trace = model.trace(LONG_TEXT)
        np.testing.assert_array_equal(trace.logits, plain.logits)


def test_unsupported_types_are_refused_naming_the_supported(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 8}))
    with pytest.raises(PretrainedError) as err:
        load_pretrained(tmp_path)
    for name in ("qwen3", "gemma2", "gemma3_text", "phi3", "olmo2", "smollm3", "bert", "roberta", "distilbert"):
        assert name in str(err.value)
