"""Every bad input refused with ``PretrainedError``, naming the file and the reason, before any weight is read."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")

from attention_core import PretrainedError, load_pretrained  # noqa: E402
from attention_core.pretrained import weights as weights_module  # noqa: E402


@pytest.fixture()
def gpt2_copy(hf_models, tmp_path):
    folder = tmp_path / "gpt2"
    shutil.copytree(hf_models["gpt2"], folder)
    return folder


@pytest.fixture()
def no_tensor_reads(monkeypatch):
    """Fails the test if a refused load read a single tensor (nothing half-loaded)."""
    reads = []
    real = weights_module.WeightSet.tensor
    monkeypatch.setattr(weights_module.WeightSet, "tensor", lambda self, *a: reads.append(a) or real(self, *a))
    return reads


def _edit_config(folder, **changes):
    path = folder / "config.json"
    cfg = json.loads(path.read_text())
    cfg.update(changes)
    path.write_text(json.dumps(cfg))


def test_missing_folder_file_and_tokenizer(gpt2_copy, tmp_path):
    with pytest.raises(PretrainedError, match="no such file or folder") as e:
        load_pretrained(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(e.value)
    (gpt2_copy / "tokenizer.json").unlink()
    with pytest.raises(PretrainedError, match="no tokenizer.json") as e:
        load_pretrained(gpt2_copy)
    assert str(gpt2_copy) in str(e.value)
    (gpt2_copy / "config.json").unlink()
    with pytest.raises(PretrainedError, match="no config.json"):
        load_pretrained(gpt2_copy)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1,
                                                   "vocab_size": 10}))
    with pytest.raises(PretrainedError, match=r"no model\.safetensors"):
        load_pretrained(empty)


def test_unsupported_model_type_names_the_supported(gpt2_copy):
    _edit_config(gpt2_copy, model_type="t5")
    with pytest.raises(PretrainedError, match="model_type 't5' is not supported") as e:
        load_pretrained(gpt2_copy)
    for name in ("gpt2", "llama", "mistral", "qwen2", "gpt_neox", "gpt_neo"):
        assert name in str(e.value)
    assert "config.json" in str(e.value)


def test_damaged_config_and_unsupported_rope(gpt2_copy, hf_models, tmp_path):
    (gpt2_copy / "config.json").write_text("{not json")
    with pytest.raises(PretrainedError, match="config.json: not valid JSON"):
        load_pretrained(gpt2_copy)
    llama = tmp_path / "llama"
    shutil.copytree(hf_models["llama"], llama)
    _edit_config(llama, rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0})
    with pytest.raises(PretrainedError, match="rope type 'yarn' is not supported"):
        load_pretrained(llama)


def test_config_that_does_not_match_the_weights_names_tensor_and_shapes(gpt2_copy, no_tensor_reads):
    _edit_config(gpt2_copy, n_inner=64)
    with pytest.raises(PretrainedError) as e:
        load_pretrained(gpt2_copy)
    msg = str(e.value)
    assert "transformer.h.0.mlp.c_fc.weight" in msg and "(32, 128)" in msg and "(32, 64)" in msg
    assert "model.safetensors" in msg and "does not match" in msg
    _edit_config(gpt2_copy, n_inner=None, n_layer=3)
    with pytest.raises(PretrainedError, match=r"lacks tensor h\.2\.ln_1\.weight"):
        load_pretrained(gpt2_copy)
    _edit_config(gpt2_copy, n_layer=1)
    with pytest.raises(PretrainedError, match=r"tensor transformer\.h\.1\.\S+ is not part of the model"):
        load_pretrained(gpt2_copy)
    assert no_tensor_reads == []


def test_untied_model_without_its_head_is_refused(hf_models, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "llama"
    shutil.copytree(hf_models["llama"], folder)
    tensors = load_file(str(folder / "model.safetensors"))
    del tensors["lm_head.weight"]
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(PretrainedError, match=r"lacks tensor lm_head\.weight"):
        load_pretrained(folder)


def test_truncated_and_foreign_weights(gpt2_copy):
    weights = gpt2_copy / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(PretrainedError, match="not a complete safetensors file") as e:
        load_pretrained(gpt2_copy)
    assert str(weights) in str(e.value)
    weights.write_bytes(b"this is not a safetensors file at all")
    with pytest.raises(PretrainedError, match="not a complete safetensors file"):
        load_pretrained(gpt2_copy)


def test_sharded_index_naming_a_missing_shard(hf_models, tmp_path):
    folder = tmp_path / "sharded"
    shutil.copytree(hf_models["gpt2-sharded"], folder)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    gone = sorted(set(index["weight_map"].values()))[1]
    (folder / gone).unlink()
    with pytest.raises(PretrainedError, match=f"names the shard '{gone}', which is missing"):
        load_pretrained(folder)


def test_pickle_checkpoints_are_refused_never_unpickled(gpt2_copy, tmp_path, monkeypatch):
    import torch

    def boom(*a, **k):
        raise AssertionError("torch.load must never be called")

    (gpt2_copy / "model.safetensors").unlink()
    torch.save({"w": torch.zeros(2)}, gpt2_copy / "pytorch_model.bin")
    monkeypatch.setattr(torch, "load", boom)
    with pytest.raises(PretrainedError, match="never unpickled") as e:
        load_pretrained(gpt2_copy)
    assert "pytorch_model.bin" in str(e.value) and "convert it to safetensors" in str(e.value).lower()
    with pytest.raises(PretrainedError, match="pickle checkpoint"):
        load_pretrained(gpt2_copy / "pytorch_model.bin")
    pt = tmp_path / "weights.pt"
    shutil.copy(gpt2_copy / "pytorch_model.bin", pt)
    with pytest.raises(PretrainedError, match="never unpickled"):
        load_pretrained(pt)
    # a pickle saved under the safetensors name is recognised by its first bytes
    shutil.move(gpt2_copy / "pytorch_model.bin", gpt2_copy / "model.safetensors")
    with pytest.raises(PretrainedError, match="pickle checkpoint"):
        load_pretrained(gpt2_copy)


def test_a_model_larger_than_the_memory_is_refused_before_loading(hf_models, no_tensor_reads):
    with pytest.raises(PretrainedError, match="needs about .* but only .* is available") as e:
        load_pretrained(hf_models["gpt2"], memory_limit=10_000)
    assert "model.safetensors" in str(e.value) and "nothing was loaded" in str(e.value)
    assert "bfloat16" in str(e.value)
    assert no_tensor_reads == []
    load_pretrained(hf_models["gpt2"], memory_limit=10_000_000)  # enough


def test_available_memory_reads_meminfo(tmp_path):
    from attention_core.pretrained.memory import available_memory

    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal: 100 kB\nMemAvailable:    2048 kB\n")
    assert available_memory(fake) == (2048 * 1024, "MemAvailable in /proc/meminfo")
    assert available_memory(tmp_path / "none")[0] > 0


def test_text_longer_than_the_positions(hf_models):
    model = load_pretrained(hf_models["gpt2"])  # 64 positions
    long_ids = list(range(3, 3 + 80))
    with pytest.raises(PretrainedError, match="80 tokens, longer than the model's 64 positions") as e:
        model.trace(long_ids)
    assert "truncate=True" in str(e.value)
    trace = model.trace(long_ids, truncate=True)
    assert len(trace) == 64 and trace.note and "first 64 of 80 tokens" in trace.note
    assert "(" not in trace.note  # the Model tab's status puts the note in parentheses: none nested inside
    assert model.trace(long_ids[:10]).note is None
    with pytest.raises(PretrainedError, match="longer than the model's 64 positions"):
        model.trace("word " * 200)


def test_bad_ids_and_empty_text(hf_models):
    model = load_pretrained(hf_models["gpt2"])
    with pytest.raises(PretrainedError, match="token id 400 is outside the vocabulary"):
        model.trace([1, 400])
    with pytest.raises(PretrainedError, match="has no tokens"):
        model.trace("")
    with pytest.raises(PretrainedError, match="flat list of integers"):
        model.trace([[1, 2]])
    with pytest.raises(PretrainedError, match="device"):
        load_pretrained(hf_models["gpt2"], device="tpu")
