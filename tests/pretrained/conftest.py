"""Tiny random models of every supported family, built once per session with transformers (the reference), saved
as safetensors with a byte-level BPE tokenizer trained here; and one of this app's own models, trained here.

No download: HF_HUB_OFFLINE=1, configs built in code. Weights are redrawn larger than transformers' init (std 0.02
gives near-uniform attention, which would hide mistakes in masks and positions).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

LINES = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention is all you need; attention weights sum to one.",
    "Mary and John went to the store. John gave a drink to Mary.",
    "1 2 3 4 5 6 7 8 9 10, and then again: 1 2 3 4 5 6 7 8 9 10",
    "Héllo wörld — naïve café ☕ and a newline\nhere\ttab.",
]
TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"  # the tests' modules repeat it
VOCAB = 400
SPECIALS = ["<|endoftext|>", "<s>", "</s>"]


def train_tokenizer(bos: bool = False):
    """A byte-level BPE (GPT-2's scheme) trained on LINES; with ``bos`` a post-processor adds <s> (as Llama's)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=380, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(LINES * 4, trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def _redraw(model, seed: int) -> None:
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and ("norm" in name or "ln" in name) and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5 * 1.5)


def _configs():
    import transformers as T

    small = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2)
    return {
        "gpt2": T.GPT2Config(n_layer=2, n_head=4, n_embd=32, n_positions=64, **small),
        "gpt2-untied": T.GPT2Config(n_layer=2, n_head=4, n_embd=32, n_positions=64, tie_word_embeddings=False,
                                    scale_attn_by_inverse_layer_idx=True, **small),
        "llama": T.LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                               intermediate_size=64, max_position_embeddings=64, rms_norm_eps=1e-5, **small),
        "llama-tied": T.LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                                    hidden_size=32, intermediate_size=48, max_position_embeddings=64,
                                    tie_word_embeddings=True,
                                    rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                     "original_max_position_embeddings": 16}, **small),
        "gpt_neox": T.GPTNeoXConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                                    max_position_embeddings=64, rotary_pct=0.5, **small),
        "gpt_neox-sequential": T.GPTNeoXConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32,
                                               intermediate_size=64, max_position_embeddings=64, rotary_pct=1.0,
                                               use_parallel_residual=False, tie_word_embeddings=True, **small),
        "gpt_neo": T.GPTNeoConfig(num_layers=2, num_heads=4, hidden_size=32, max_position_embeddings=64,
                                  attention_types=[[["global", "local"], 1]], window_size=4, **small),
        "qwen2": T.Qwen2Config(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                               intermediate_size=64, max_position_embeddings=64, use_sliding_window=True,
                               sliding_window=5, max_window_layers=1, **small),
        "mistral": T.MistralConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                                   hidden_size=32, intermediate_size=64, max_position_embeddings=64,
                                   sliding_window=6, **small),
    }


BOS_FAMILIES = ("llama", "llama-tied", "mistral")


@pytest.fixture(scope="session")
def hf_models(tmp_path_factory) -> dict[str, Path]:
    """name → folder (config.json, model.safetensors, tokenizer.json); "gpt2-sharded" holds an index + shards."""
    pytest.importorskip("transformers")
    import torch
    import transformers as T

    root = tmp_path_factory.mktemp("hf")
    plain, with_bos = train_tokenizer(), train_tokenizer(bos=True)
    out = {}
    for i, (name, cfg) in enumerate(_configs().items()):
        torch.manual_seed(i)
        model = T.AutoModelForCausalLM.from_config(cfg)
        _redraw(model, i)
        folder = root / name
        model.save_pretrained(folder, safe_serialization=True)
        (with_bos if name in BOS_FAMILIES else plain).save(str(folder / "tokenizer.json"))
        out[name] = folder
        if name == "gpt2":
            sharded = root / "gpt2-sharded"
            model.save_pretrained(sharded, safe_serialization=True, max_shard_size="20KB")
            plain.save(str(sharded / "tokenizer.json"))
            out["gpt2-sharded"] = sharded
    return out


@pytest.fixture(scope="session")
def hf_reference(hf_models):
    """name → (transformers model in eval, eager attention, float32); loaded lazily, once."""
    import torch
    import transformers as T

    cache: dict = {}

    def get(name: str):
        if name not in cache:
            m = T.AutoModelForCausalLM.from_pretrained(hf_models[name], attn_implementation="eager",
                                                       dtype=torch.float32)
            cache[name] = m.eval()
        return cache[name]

    return get


@pytest.fixture(scope="session")
def own_model_dir(tmp_path_factory) -> Path:
    """This app's induction recipe, trained here (seeded, ~2-4 s) and saved as ``attention-playground train``
    saves a run: model.safetensors (config in its metadata) and config.json."""
    from attention_core import save_checkpoint, task_recipe, train_task

    config = task_recipe("induction", seed=0, cpu_threads=1)
    trainer = train_task(config)
    out = tmp_path_factory.mktemp("own") / "induction-run"
    out.mkdir()
    save_checkpoint(out / "model.safetensors", trainer.model, extra={"train_config": config.to_dict()})
    (out / "config.json").write_text(json.dumps({"model_config": config.model_config().to_dict(),
                                                 "train_config": config.to_dict()}, indent=2))
    return out


@pytest.fixture(scope="session")
def family_decoders(tmp_path_factory) -> dict[str, Path]:
    """The newer decoder families of family_models.py and a Gemma 3 image-text checkpoint, built once per session
    for the generation tests (generate_families.py)."""
    pytest.importorskip("transformers")
    from tests.pretrained.generate_families import build_families

    return build_families(tmp_path_factory.mktemp("families"))
