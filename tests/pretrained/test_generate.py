"""Decoding over the key/value cache against transformers, family by family (tiny random models, float32):
greedy tokens equal ``generate(do_sample=False)``, each step's logits equal a whole forward of the same tokens, and
each step's attention row equals the last row of eager attention. This app's own model is checked against its own
``TinyTransformer`` (transformers cannot read it)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import Generation, load_pretrained  # noqa: E402
from tests.pretrained.generate_families import GENERATE_FAMILIES, folder_for, reference_for, text_for  # noqa: E402
from tests.tolerance import assert_close, tolerance

HF_FAMILIES = [name for name in GENERATE_FAMILIES if name != "own"]
NEW = 12


def _hf_whole(ref, ids: list[int]):
    with torch.no_grad():
        out = ref(torch.tensor([ids]), output_attentions=True)
    return out.logits[0].numpy(), torch.stack(out.attentions)[:, 0].numpy()  # layers, heads, T, T


@pytest.mark.parametrize("name", HF_FAMILIES)
def test_greedy_tokens_logits_and_rows_equal_transformers(hf_models, hf_reference, family_decoders, name):
    model = load_pretrained(folder_for(name, hf_models, None, family_decoders))
    ref = reference_for(name, hf_reference, family_decoders)
    gen = model.generate(text_for(name), max_new_tokens=NEW)  # both stop at the end-of-text token (id 2)
    assert isinstance(gen, Generation) and len(gen.steps) == len(gen.new_ids) >= 1
    p = len(gen.prompt_ids)
    windows = [w for w in model.spec.windows if w]
    assert p > max(windows, default=0)  # every sliding layer drops keys out of the cache's reach
    with torch.no_grad():
        hf = ref.generate(torch.tensor([gen.prompt_ids]), do_sample=False, max_new_tokens=NEW,
                          attention_mask=torch.ones(1, p, dtype=torch.long), output_logits=True,
                          return_dict_in_generate=True)
    assert gen.new_ids == hf.sequences[0, p:].tolist()
    assert gen.stopped == ("eos" if gen.new_ids[-1] == 2 else "max_new_tokens")
    logits, attentions = _hf_whole(ref, gen.ids)
    rows = np.arange(p - 1, p - 1 + len(gen.steps))
    # float32: a one-row run sums in another order than a whole run: the rule's tolerance (tests/tolerance.py), or,
    # where transformers' own cache moves the logits further from its whole forward (Gemma's large hidden states:
    # 1.3e-5 on gemma3_text), twice that drift (the sums' order differs from transformers' too).
    drift = float(np.abs(torch.cat(hf.logits).numpy() - logits[rows]).max())
    atol = max(tolerance(step_logits := np.stack([s.logits for s in gen.steps]), logits[rows]), 2 * drift)
    for i, step in enumerate(gen.steps):
        q = p - 1 + i
        assert step.index == i and step.query_position == q and step.cache_positions == list(range(q + 1))
        np.testing.assert_allclose(step_logits[i], logits[q], atol=atol, rtol=0)
        assert step.attentions.shape == (model.info.layers, model.info.heads, q + 1)
        assert step.attentions.dtype == np.float32
        assert_close(step.attentions, attentions[:, :, q, : q + 1])
        assert step.kl_from_full is None and step.top_changed is None and step.evicted == []
    for layer, window in enumerate(model.spec.windows):  # a sliding layer's row is zero outside its window
        if window:
            assert not step.attentions[layer, :, : q + 1 - window].any() and step.attentions[layer, :, -1].all()


def test_an_end_of_text_token_ends_the_generation(hf_models):
    """A model made to favour the end-of-text token (id 2 in conftest's configs) writes it once and stops; with
    stop_at_eos=False it writes on."""
    from attention_core.pretrained.layers import Linear

    model = load_pretrained(hf_models["gpt2-untied"])
    head = model.weights.lm_head
    bias = torch.zeros(model.spec.vocab_size)
    bias[2] = 1e4
    model.weights.lm_head = Linear(head.weight, bias, head.in_out)
    gen = model.generate(text_for("gpt2"), max_new_tokens=5)
    assert gen.new_ids == [2] and gen.stopped == "eos"
    decoder = model.decoder(text_for("gpt2"))
    assert decoder.step() is not None and decoder.done and decoder.step() is None
    assert model.generate(text_for("gpt2"), max_new_tokens=5, stop_at_eos=False).new_ids == [2] * 5


def test_own_model_decodes_as_its_tiny_transformer(own_model_dir):
    from attention_core import causal_mask, load_checkpoint

    model = load_pretrained(own_model_dir)
    net, _ = load_checkpoint(own_model_dir / "model.safetensors")
    net.eval()
    prompt = [3, 7, 1, 9, 4]
    gen = model.generate(prompt, max_new_tokens=20)
    assert gen.stopped == "context" and len(gen.ids) == model.spec.max_positions  # 12 positions
    ids = list(prompt)
    with torch.no_grad():
        for step in gen.steps:
            logits = net(torch.tensor([ids]), causal_mask(len(ids)))[0][0, -1]
            assert_close(step.logits, logits.numpy())
            ids.append(int(torch.argmax(logits)))
    assert ids == gen.ids


def test_cache_bytes_count_keys_and_values_of_every_layer(hf_models):
    model = load_pretrained(hf_models["llama"])  # 2 layers, 2 kv heads (4 query heads), d_head 8, float32
    gen = model.generate(text_for("llama"), max_new_tokens=4, stop_at_eos=False)
    for step in gen.steps:
        kept = step.query_position + 1
        assert step.cache_bytes == step.full_cache_bytes == 2 * 2 * 2 * kept * 8 * 4
    windowed = model.generate(text_for("llama"), max_new_tokens=4, cache="window", window=5, stop_at_eos=False)
    step = windowed.steps[-1]
    assert step.cache_bytes == 2 * 2 * 2 * 5 * 8 * 4 and step.full_cache_bytes == 2 * 2 * 2 * (step.query_position
                                                                                                + 1) * 8 * 4
    assert gen.summary()["cache_bytes"] == gen.steps[-1].cache_bytes
