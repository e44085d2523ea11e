"""Our loader and forward pass against transformers' eager attention, family by family, to 1e-5 in float32."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import AttentionSteps, PretrainedError, load_pretrained  # noqa: E402
from attention_core.pretrained.tokenizer import SPACE  # noqa: E402
from tests.tolerance import assert_close

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"  # = conftest.TEXT

FAMILIES = ["gpt2", "gpt2-untied", "llama", "llama-tied", "gpt_neox", "gpt_neox-sequential", "gpt_neo", "qwen2",
            "mistral", "gpt2-sharded"]


def _reference(hf_reference, name: str, ids: np.ndarray):
    ref = hf_reference(name.replace("-sharded", ""))
    with torch.no_grad():
        out = ref(torch.as_tensor(ids)[None], output_attentions=True)
    return out.logits[0].numpy(), torch.stack(out.attentions)[:, 0].numpy()


@pytest.mark.parametrize("name", FAMILIES)
def test_logits_and_every_attention_equal_transformers(hf_models, hf_reference, name):
    from transformers import PreTrainedTokenizerFast

    model = load_pretrained(hf_models[name])
    trace = model.trace(TEXT)
    hf_tok = PreTrainedTokenizerFast(tokenizer_file=str(hf_models[name] / "tokenizer.json"))
    assert trace.ids.tolist() == hf_tok(TEXT)["input_ids"]
    logits, attentions = _reference(hf_reference, name, trace.ids)
    assert trace.logits.shape == logits.shape and trace.attentions.shape == attentions.shape
    assert_close(trace.logits, logits)
    assert_close(trace.attentions, attentions)
    for layer in range(model.info.layers):
        for head in range(model.info.heads):
            steps = trace.head_steps(layer, head)
            assert isinstance(steps, AttentionSteps)
            assert_close(steps.weights, trace.attentions[layer, head])
            np.testing.assert_allclose(steps.scores, trace.scores[layer, head], atol=1e-4, rtol=1e-5)


def test_windows_masks_and_scales_are_the_models(hf_models):
    neo = load_pretrained(hf_models["gpt_neo"]).trace(TEXT)
    local = neo.mask(1)  # attention_types global, local; window_size 4
    assert local is not None and local.sum(axis=1).max() == 4 and not local[10, 6] and local[10, 7]
    assert neo.head_steps(1, 0).scale == 1.0 == neo.head_steps(0, 0).scale  # GPT-Neo does not scale q·k
    assert np.all(neo.attentions[1][:, ~local] == 0)
    qwen = load_pretrained(hf_models["qwen2"]).trace(TEXT)  # max_window_layers=1: layer 1 slides over 5
    assert qwen.mask(0).sum(axis=1).max() == len(qwen) and qwen.mask(1).sum(axis=1).max() == 5
    gpt2 = load_pretrained(hf_models["gpt2-untied"]).trace(TEXT)  # scale_attn_by_inverse_layer_idx
    assert gpt2.head_steps(1, 0).scale == pytest.approx(8 ** -0.5 / 2)


def test_grouped_query_attention_shares_keys(hf_models):
    model = load_pretrained(hf_models["llama"])
    trace = model.trace(TEXT)
    assert (model.info.heads, model.info.kv_heads) == (4, 2)
    assert trace.k.shape[1] == 2 and trace.q.shape[1] == 4 and trace.kv_head(3) == 1
    assert_close(trace.head_steps(0, 2).k_rotated, trace.k[0, 1])  # K/V head 1


def test_tied_and_untied_heads(hf_models):
    tied = load_pretrained(hf_models["gpt2"])
    assert tied.weights.lm_head.weight is tied.weights.embed
    untied = load_pretrained(hf_models["gpt2-untied"])
    assert untied.weights.lm_head.weight is not untied.weights.embed
    llama, llama_tied = load_pretrained(hf_models["llama"]), load_pretrained(hf_models["llama-tied"])
    assert llama.weights.lm_head.weight is not llama.weights.embed
    assert llama_tied.weights.lm_head.weight is llama_tied.weights.embed
    # a tied unembedding is counted once, as transformers counts parameters
    from transformers import AutoModelForCausalLM

    ref = AutoModelForCausalLM.from_pretrained(hf_models["gpt2"])
    assert tied.info.parameters == ref.num_parameters()
    assert tied.info.bytes == 4 * tied.info.parameters


def test_sharded_checkpoint_loads_from_its_index(hf_models):
    folder = hf_models["gpt2-sharded"]
    assert (folder / "model.safetensors.index.json").is_file() and len(list(folder.glob("*.safetensors"))) > 2
    a, b = load_pretrained(folder).trace(TEXT), load_pretrained(hf_models["gpt2"]).trace(TEXT)
    np.testing.assert_array_equal(a.logits, b.logits)
    for inside in ("model.safetensors.index.json", "config.json"):  # a file of the folder opens the folder
        assert load_pretrained(folder / inside).info == load_pretrained(folder).info


def test_keys_without_the_transformer_prefix(hf_models, tmp_path):
    """GPT-2's original checkpoints name tensors 'h.0.attn…' (no 'transformer.'), carry attn.bias buffers and no
    lm_head; they load the same."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "gpt2-old"
    shutil.copytree(hf_models["gpt2"], folder)
    tensors = load_file(str(folder / "model.safetensors"))
    old = {k.removeprefix("transformer."): v for k, v in tensors.items()}
    old["h.0.attn.bias"] = torch.tril(torch.ones(1, 1, 64, 64))
    old["h.0.attn.masked_bias"] = torch.tensor(-1e4)
    save_file(old, str(folder / "model.safetensors"))
    a, b = load_pretrained(folder).trace(TEXT), load_pretrained(hf_models["gpt2"]).trace(TEXT)
    np.testing.assert_array_equal(a.logits, b.logits)


def test_trace_api(hf_models):
    model = load_pretrained(hf_models["llama"])
    trace = model.trace(TEXT)
    assert model.name == hf_models["llama"].name and trace.name == model.name
    assert trace.tokens[0] == "<s>" and any(t.startswith(SPACE) for t in trace.tokens)  # BOS, visible spaces
    assert "".join(trace.tokens[1:]).replace(SPACE, " ") == TEXT
    top = trace.top_next(3)
    assert len(top) == len(trace) and len(top[0]) == 3
    probs = [p for _, _, p in top[5]]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-9
    best_id = int(np.argmax(trace.logits[5]))
    assert top[5][0][1] == best_id and top[5][0][0] == model.token_strings([best_id])[0]
    info = trace.info.to_dict()
    assert info["family"] == "llama" and info["kv_heads"] == 2 and info["dtype"] == "float32"
    assert info["max_positions"] == 64 and info["vocab"] == 400 and info["d_head"] == 8
    # ids in, the same numbers out; head outputs are weights · v
    again = model.trace(trace.ids.tolist())
    np.testing.assert_array_equal(again.attentions, trace.attentions)
    assert_close(trace.head_outputs[1, 2], trace.attentions[1, 2] @ trace.v[1, 1])
    with pytest.raises(ValueError, match="layer 2 out of range"):
        trace.head_steps(2, 0)


def test_display_strings_show_spaces_newlines_and_split_characters(hf_models):
    model = load_pretrained(hf_models["gpt2"])
    ids = model.encode("a b\nc ☕")
    shown = model.token_strings(ids)
    joined = "".join(shown)
    assert "␣" in joined and "↵" in joined and " " not in joined
    assert "☕" in joined or "\\x" in joined  # a character split over tokens shows its bytes


def test_ablation_zero_and_mean_change_only_that_head(hf_models):
    model = load_pretrained(hf_models["gpt2"])
    ids = model.encode(TEXT)
    clean = model.forward(ids, record={"head_out", "weights"})
    off = model.forward(ids, ablate={(1, 2): "zero"}, record={"head_out", "weights"})
    assert torch.equal(off.records["weights"][0], clean.records["weights"][0])  # earlier layers untouched
    assert torch.all(off.records["head_out"][1][0, 2] == 0)
    assert not torch.allclose(off.logits, clean.logits)
    mean = clean.records["head_out"][1][0, 2].mean(dim=0).numpy()
    meaned = model.forward(ids, ablate={(1, 2): mean}, record={"head_out"})
    assert_close(meaned.records["head_out"][1][0, 2].numpy(), np.broadcast_to(mean, (len(ids), 8)))
    with pytest.raises(ValueError, match="no layer 5 head 0"):
        model.forward(ids, ablate={(5, 0): "zero"})


def test_bfloat16_loads_and_is_close(hf_models):
    for name in ("gpt2", "llama"):
        full = load_pretrained(hf_models[name]).trace(TEXT)
        half_model = load_pretrained(hf_models[name], dtype="bfloat16")
        half = half_model.trace(TEXT)
        assert half.info.dtype == "bfloat16" and half.info.bytes * 2 == full.info.bytes
        assert half.attentions.dtype == np.float32  # attention is computed in float32
        assert np.abs(half.attentions - full.attentions).max() < 0.05
        assert np.abs(half.logits - full.logits).max() < 0.25 * np.abs(full.logits).max()
        assert_close(half.head_steps(1, 1).weights, half.attentions[1, 1])
    with pytest.raises(PretrainedError, match="dtype must be one of float32, bfloat16"):
        load_pretrained(hf_models["gpt2"], dtype="float16")


def test_greedy_continuation_of_gpt2_small_from_the_local_cache():
    """Runs only where GPT-2 small is already in the local Hugging Face cache (never downloads)."""
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download("gpt2", local_files_only=True,
                                   allow_patterns=["config.json", "model.safetensors", "tokenizer.json"])
    except Exception:
        pytest.skip("GPT-2 small is not in the local Hugging Face cache")
    from pathlib import Path

    from transformers import AutoModelForCausalLM

    if not (Path(folder) / "model.safetensors").is_file() or not (Path(folder) / "tokenizer.json").is_file():
        pytest.skip("the cached GPT-2 lacks model.safetensors or tokenizer.json")
    model = load_pretrained(folder)
    ids = model.encode("The Eiffel Tower is in the city of")
    for _ in range(5):
        ids.append(int(np.argmax(model.trace(ids).logits[-1])))
    ref = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    prompt = torch.as_tensor(ids[:-5])[None]
    with torch.no_grad():
        expect = ref.generate(prompt, max_new_tokens=5, do_sample=False, pad_token_id=50256)[0].tolist()
    assert ids == expect


def test_sentencepiece_pieces_and_byte_fallback_display(tmp_path):
    """Llama/Mistral tokenizers mark a leading space with ▁ and spell raw bytes <0xNN>: shown as ␣ and the byte."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from attention_core.pretrained.tokenizer import HFTokenizer

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(["the cat sat on the mat"] * 5, trainers.BpeTrainer(
        vocab_size=60, special_tokens=["<unk>", "<s>"], show_progress=False))
    tok.add_tokens(["<0x0A>"])
    tok.save(str(tmp_path / "tokenizer.json"))
    wrapped = HFTokenizer(tmp_path / "tokenizer.json")
    assert not wrapped.byte_level and wrapped.special_ids == {0, 1}
    shown = wrapped.display(wrapped.encode("the cat"))
    assert shown[0].startswith("␣") and "▁" not in "".join(shown) and "".join(shown) == "␣the␣cat"
    assert wrapped.display([tok.token_to_id("<0x0A>"), 1]) == ["↵", "<s>"]


def test_threads_are_set_for_the_call_and_restored(hf_models):
    before = torch.get_num_threads()
    model = load_pretrained(hf_models["gpt2"], threads=1)
    seen = []
    real = model.forward_pass.run
    model.forward_pass.run = lambda *a, **k: seen.append(torch.get_num_threads()) or real(*a, **k)
    model.trace("The quick")
    assert seen == [1] and torch.get_num_threads() == before
    with pytest.raises(PretrainedError, match="threads must be a positive integer"):
        load_pretrained(hf_models["gpt2"], threads=0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_matches_the_cpu(hf_models, own_model_dir):
    for folder in (hf_models["llama"], hf_models["gpt_neox"], own_model_dir):
        cpu = load_pretrained(folder).trace([1, 5, 9, 3, 12, 5, 9, 3])
        gpu_model = load_pretrained(folder, device="cuda")
        assert gpu_model.device.type == "cuda"
        gpu = gpu_model.trace([1, 5, 9, 3, 12, 5, 9, 3])
        np.testing.assert_allclose(gpu.attentions, cpu.attentions, atol=1e-4)
        np.testing.assert_allclose(gpu.logits, cpu.logits, atol=1e-3)
