"""Each family's tensor names and shapes, and how its tensors become ``ModelWeights``.

Names are compared with the family's prefix (``transformer.``, ``model.``, ``gpt_neox.``) removed, so files saved
with or without it (GPT-2's original checkpoints have none) both load. ``expected`` gives every tensor the config
implies with its exact shape, so a config that does not match its weights is caught, tensor by tensor, before
anything is read; ``IGNORED`` are buffers some files carry that hold no weights (causal-mask tables, rotary tables).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import torch

from .config import ArchSpec
from .forward import LayerWeights, ModelWeights
from .layers import Linear, Norm

PREFIXES = {"gpt2": "transformer.", "gpt_neo": "transformer.", "gpt_neox": "gpt_neox.", "llama": "model."}
HEADS = {"gpt2": "lm_head.weight", "gpt_neo": "lm_head.weight", "gpt_neox": "embed_out.weight",
         "llama": "lm_head.weight"}
"""The unembedding's name (outside the prefix); absent and tied, the token embedding serves."""
IGNORED = re.compile(r"(^|\.)(attn\.bias|attn\.masked_bias|attention\.bias|attention\.masked_bias|"
                     r"rotary_emb\.inv_freq)$")

Shapes = dict[str, tuple[int, ...]]
Get = Callable[[str], torch.Tensor]


def canonical(name: str, family: str) -> str:
    """A file's tensor name without the family's prefix."""
    prefix = PREFIXES[family]
    return name[len(prefix):] if name.startswith(prefix) else name


def _ln(shapes: Shapes, name: str, d: int, bias: bool = True) -> None:
    shapes[f"{name}.weight"] = (d,)
    if bias:
        shapes[f"{name}.bias"] = (d,)


def _lin(shapes: Shapes, name: str, out_f: int, in_f: int, bias: bool, in_out: bool = False) -> None:
    shapes[f"{name}.weight"] = (in_f, out_f) if in_out else (out_f, in_f)
    if bias:
        shapes[f"{name}.bias"] = (out_f,)


def expected(spec: ArchSpec) -> Shapes:
    """Every tensor (canonical name → shape) the config implies, the unembedding included even when tied."""
    d, V, P, m = spec.d_model, spec.vocab_size, spec.max_positions, spec.d_mlp
    hd, kvd = spec.n_heads * spec.d_head, spec.n_kv_heads * spec.d_head
    s: Shapes = {}
    f = spec.family
    if f in ("gpt2", "gpt_neo"):
        s["wte.weight"], s["wpe.weight"] = (V, d), (P, d)
        for i in range(spec.n_layers):
            p = f"h.{i}."
            _ln(s, p + "ln_1", d)
            _ln(s, p + "ln_2", d)
            if f == "gpt2":
                _lin(s, p + "attn.c_attn", 3 * d, d, True, in_out=True)
                _lin(s, p + "attn.c_proj", d, d, True, in_out=True)
                _lin(s, p + "mlp.c_fc", m, d, True, in_out=True)
                _lin(s, p + "mlp.c_proj", d, m, True, in_out=True)
            else:
                for n in ("q", "k", "v"):
                    _lin(s, p + f"attn.attention.{n}_proj", d, d, False)
                _lin(s, p + "attn.attention.out_proj", d, d, True)
                _lin(s, p + "mlp.c_fc", m, d, True)
                _lin(s, p + "mlp.c_proj", d, m, True)
        _ln(s, "ln_f", d)
    elif f == "gpt_neox":
        s["embed_in.weight"] = (V, d)
        for i in range(spec.n_layers):
            p = f"layers.{i}."
            _ln(s, p + "input_layernorm", d)
            _ln(s, p + "post_attention_layernorm", d)
            _lin(s, p + "attention.query_key_value", 3 * d, d, spec.qkv_bias)
            _lin(s, p + "attention.dense", d, d, spec.o_bias)
            _lin(s, p + "mlp.dense_h_to_4h", m, d, True)
            _lin(s, p + "mlp.dense_4h_to_h", d, m, True)
        _ln(s, "final_layer_norm", d)
    else:  # llama, mistral, qwen2
        s["embed_tokens.weight"] = (V, d)
        for i in range(spec.n_layers):
            p = f"layers.{i}."
            _ln(s, p + "input_layernorm", d, bias=False)
            _ln(s, p + "post_attention_layernorm", d, bias=False)
            _lin(s, p + "self_attn.q_proj", hd, d, spec.qkv_bias)
            _lin(s, p + "self_attn.k_proj", kvd, d, spec.qkv_bias)
            _lin(s, p + "self_attn.v_proj", kvd, d, spec.qkv_bias)
            _lin(s, p + "self_attn.o_proj", d, hd, spec.o_bias)
            _lin(s, p + "mlp.gate_proj", m, d, spec.mlp_bias)
            _lin(s, p + "mlp.up_proj", m, d, spec.mlp_bias)
            _lin(s, p + "mlp.down_proj", d, m, spec.mlp_bias)
        _ln(s, "norm", d, bias=False)
    s[HEADS[f]] = (V, d)
    return s


def head_optional(spec: ArchSpec) -> bool:
    """May the unembedding be absent? When tied, and always for GPT-2 (its files never carry it)."""
    return spec.tie_embeddings or spec.family == "gpt2"


def _opt(get: Get, shapes: Shapes, name: str) -> torch.Tensor | None:
    return get(name) if name in shapes else None


def build(spec: ArchSpec, get: Get, have_head: bool) -> ModelWeights:
    """``ModelWeights`` from the canonical tensors (``get(name)``), the head tied when absent or tied."""
    s = expected(spec)
    f, eps = spec.family, spec.norm_eps

    def ln(name: str) -> Norm:
        return Norm(get(f"{name}.weight"), _opt(get, s, f"{name}.bias"), eps, spec.norm)

    def lin(name: str, in_out: bool = False) -> Linear:
        return Linear(get(f"{name}.weight"), _opt(get, s, f"{name}.bias"), in_out)

    layers: list[LayerWeights] = []
    pos = None
    if f in ("gpt2", "gpt_neo"):
        embed, pos, final = get("wte.weight"), get("wpe.weight"), ln("ln_f")
        for i in range(spec.n_layers):
            p = f"h.{i}."
            if f == "gpt2":
                layers.append(LayerWeights(ln(p + "ln_1"), ln(p + "ln_2"), lin(p + "attn.c_proj", True),
                                           lin(p + "mlp.c_fc", True), lin(p + "mlp.c_proj", True),
                                           qkv=lin(p + "attn.c_attn", True), qkv_layout="gpt2"))
            else:
                a = p + "attn.attention."
                layers.append(LayerWeights(ln(p + "ln_1"), ln(p + "ln_2"), lin(a + "out_proj"), lin(p + "mlp.c_fc"),
                                           lin(p + "mlp.c_proj"), q=lin(a + "q_proj"), k=lin(a + "k_proj"),
                                           v=lin(a + "v_proj")))
    elif f == "gpt_neox":
        embed, final = get("embed_in.weight"), ln("final_layer_norm")
        for i in range(spec.n_layers):
            p = f"layers.{i}."
            layers.append(LayerWeights(ln(p + "input_layernorm"), ln(p + "post_attention_layernorm"),
                                       lin(p + "attention.dense"), lin(p + "mlp.dense_h_to_4h"),
                                       lin(p + "mlp.dense_4h_to_h"), qkv=lin(p + "attention.query_key_value"),
                                       qkv_layout="neox"))
    else:
        embed, final = get("embed_tokens.weight"), ln("norm")
        for i in range(spec.n_layers):
            p = f"layers.{i}."
            a = p + "self_attn."
            layers.append(LayerWeights(ln(p + "input_layernorm"), ln(p + "post_attention_layernorm"),
                                       lin(a + "o_proj"), lin(p + "mlp.up_proj"), lin(p + "mlp.down_proj"),
                                       q=lin(a + "q_proj"), k=lin(a + "k_proj"), v=lin(a + "v_proj"),
                                       mlp_gate=lin(p + "mlp.gate_proj")))
    head = Linear(embed) if spec.tie_embeddings or not have_head else Linear(get(HEADS[f]))
    return ModelWeights(embed, layers, final, head, pos)
