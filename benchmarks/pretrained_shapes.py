"""Random-weight models of real shapes, written as a Hugging Face folder (config.json, model.safetensors float32,
tokenizer.json): GPT-2-small (124 M parameters) and Qwen2-0.5B (494 M, grouped-query attention, tied embeddings).

No download and no transformers needed to build them; both load in this app (``load_pretrained``) and in
transformers (``AutoModelForCausalLM.from_pretrained``) from the same file, so a side-by-side comparison reads the
same weights. The weights are random (std 0.02): the numbers measure cost, not behaviour. Builders run best in a
child process (``python pretrained_shapes.py SHAPE FOLDER``) so the memory they use is not the measuring process's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

LINES = ["The quick brown fox jumps over the lazy dog.", "Attention is all you need.",
         "A transformer reads every token and decides where to look.", "Induction heads copy what came next."]


def write_tokenizer(folder: Path, special: str = "<|endoftext|>") -> None:
    """A small byte-level BPE (ids 0..~400 are enough: the benchmarks pass ids, not text)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(LINES * 10, trainers.BpeTrainer(
        vocab_size=400, special_tokens=[special], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok.save(str(folder / "tokenizer.json"))


QWEN2_05B: dict[str, Any] = {
    "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "intermediate_size": 4864,
    "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
    "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu",
    "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": None, "max_window_layers": 24,
    "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float32",
}


def build_qwen2_05b(folder: Path, seed: int = 0, **overrides: Any) -> int:
    """Qwen2-0.5B's shape (``overrides`` change the config, e.g. fewer layers); returns the weight bytes."""
    import torch
    from safetensors.torch import save_file

    cfg = {**QWEN2_05B, **overrides}
    d, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    heads, kv, vocab = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"]
    dh = d // heads
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen) * 0.02

    tensors = {"model.embed_tokens.weight": rand(vocab, d), "model.norm.weight": torch.ones(d)}
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors.update({
            p + "input_layernorm.weight": torch.ones(d), p + "post_attention_layernorm.weight": torch.ones(d),
            p + "self_attn.q_proj.weight": rand(heads * dh, d), p + "self_attn.q_proj.bias": rand(heads * dh),
            p + "self_attn.k_proj.weight": rand(kv * dh, d), p + "self_attn.k_proj.bias": rand(kv * dh),
            p + "self_attn.v_proj.weight": rand(kv * dh, d), p + "self_attn.v_proj.bias": rand(kv * dh),
            p + "self_attn.o_proj.weight": rand(d, heads * dh),
            p + "mlp.gate_proj.weight": rand(inter, d), p + "mlp.up_proj.weight": rand(inter, d),
            p + "mlp.down_proj.weight": rand(d, inter)})
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    write_tokenizer(folder)
    return sum(t.numel() * t.element_size() for t in tensors.values())


def build_gpt2_small(folder: Path, seed: int = 0) -> int:
    """GPT-2-small (the same builder as bench_pretrained's); returns the weight bytes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_pretrained import build_gpt2_small as build

    return build(folder, seed)


BUILDERS = {"gpt2-small": build_gpt2_small, "qwen2-0.5b": build_qwen2_05b}


def ensure(shape: str, folder: Path) -> Path:
    """Build ``shape`` into ``folder`` in a child process unless it is there already; returns the folder."""
    if not (folder / "model.safetensors").is_file():
        subprocess.run([sys.executable, __file__, shape, str(folder)], check=True)
    return folder


if __name__ == "__main__":
    BUILDERS[sys.argv[1]](Path(sys.argv[2]))
