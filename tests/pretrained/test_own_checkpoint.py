"""This app's own trained models open through ``load_pretrained`` and trace to the TinyTransformer's own numbers."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import PretrainedError, causal_mask, load_checkpoint, load_pretrained  # noqa: E402
from tests.tolerance import assert_close


def _reference(path, ids, causal=True):
    model, _ = load_checkpoint(path)
    with torch.no_grad():
        logits, weights = model(torch.as_tensor([ids]), causal_mask(len(ids)) if causal else None)
    return logits[0].numpy(), torch.stack(weights)[:, 0].numpy()


def test_folder_and_file_open_as_the_app_family(own_model_dir):
    for path in (own_model_dir, own_model_dir / "model.safetensors"):
        model = load_pretrained(path)
        assert model.family == "attention-playground" and model.info.family == "attention-playground"
        assert model.name == "induction-run (induction)"
        assert (model.info.layers, model.info.heads, model.info.d_model, model.info.max_positions) == (2, 4, 32, 12)


def test_attentions_equal_the_tiny_transformers_own(own_model_dir):
    model = load_pretrained(own_model_dir)
    ids = [5, 9, 3, 12, 5, 9, 3, 12, 5, 9]
    trace = model.trace(" ".join(map(str, ids)))
    assert trace.ids.tolist() == ids and trace.tokens == [str(i) for i in ids]
    logits, weights = _reference(own_model_dir / "model.safetensors", ids)
    assert_close(trace.attentions, weights)
    assert_close(trace.logits, logits)
    for layer in range(2):
        for head in range(4):
            assert_close(trace.head_steps(layer, head).weights, weights[layer, head])
    assert model.trace("SEP pad 3").ids.tolist() == [1, 0, 3]
    assert model.trace([1, 0, 3]).tokens == ["SEP", "PAD", "3"]


@pytest.mark.parametrize(("positional", "causal"), [("rotary", True), ("sinusoidal", True), ("none", True),
                                                    ("learned", False)])
def test_every_position_kind_and_the_unmasked_model(tmp_path, positional, causal):
    from attention_core import save_checkpoint, train_task
    from attention_core.tiny.config import TrainConfig

    config = TrainConfig(steps=3, positional=positional, causal=causal, seed=1, cpu_threads=1)
    trainer = train_task(config)
    path = tmp_path / "m.safetensors"
    save_checkpoint(path, trainer.model, extra={"train_config": config.to_dict()})
    model = load_pretrained(path)
    ids = [4, 7, 2, 9, 1, 9, 2, 7, 4]
    trace = model.trace(ids)
    logits, weights = _reference(path, ids, causal)
    assert_close(trace.attentions, weights)
    assert_close(trace.logits, logits)
    assert (trace.mask(0) is None) == (not causal)
    assert_close(trace.head_steps(1, 3).weights, weights[1, 3])


def test_own_vocabulary_refusals(own_model_dir):
    model = load_pretrained(own_model_dir)
    with pytest.raises(PretrainedError, match="'cat' is not a token of this model"):
        model.trace("3 cat 5")
    with pytest.raises(PretrainedError, match="token 16 is outside the vocabulary 0-15"):
        model.trace("3 16")
    with pytest.raises(PretrainedError, match="13 tokens, longer than the model's 12 positions"):
        model.trace([3] * 13)


def test_a_damaged_app_checkpoint_names_the_file(own_model_dir, tmp_path):
    bad = tmp_path / "model.safetensors"
    data = (own_model_dir / "model.safetensors").read_bytes()
    bad.write_bytes(data[:-100])
    with pytest.raises(PretrainedError, match="not a complete safetensors file") as e:
        load_pretrained(bad)
    assert str(bad) in str(e.value)
    foreign = tmp_path / "other.safetensors"
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, str(foreign))
    with pytest.raises(PretrainedError, match="not saved by this app, and no config.json beside it"):
        load_pretrained(foreign)
