"""Each family's tensor names and shapes, and how its tensors become ``ModelWeights`` (the BERT family's
beside the decoders').

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
from .layers import LayerWeights, Linear, ModelWeights, Norm

ENCODER_PREFIXES = {"bert": "bert.", "roberta": "roberta.", "distilbert": "distilbert."}
ENCODER_HEADS = {"bert": "cls.predictions.decoder.weight", "roberta": "lm_head.decoder.weight",
                 "distilbert": "vocab_projector.weight"}
LLAMA_LIKE = ("llama", "qwen3", "olmo2", "phi3", "gemma2", "gemma3")
PREFIXES: dict[str, tuple[str, ...]] = {
    "gpt2": ("transformer.",), "gpt_neo": ("transformer.",), "gpt_neox": ("gpt_neox.",),
    **{f: ("model.",) for f in LLAMA_LIKE},
    "gemma3": ("model.language_model.", "language_model.model.", "model."),  # text under an image-text model's prefix
    **{f: (p,) for f, p in ENCODER_PREFIXES.items()}}
HEADS = {"gpt2": "lm_head.weight", "gpt_neo": "lm_head.weight", "gpt_neox": "embed_out.weight",
         **{f: "lm_head.weight" for f in LLAMA_LIKE}, **ENCODER_HEADS}
"""The unembedding's name (outside the prefix); absent and tied, the token embedding serves."""
IGNORED = re.compile(r"(^|\.)(attn\.bias|attn\.masked_bias|attention\.bias|attention\.masked_bias|"
                     r"rotary_emb\.inv_freq|embeddings\.position_ids|embeddings\.token_type_ids|pooler\.dense\.\w+|"
                     r"cls\.seq_relationship\.\w+|predictions\.decoder\.bias|lm_head\.decoder\.bias)$|"
                     r"^(model\.)?(vision_tower|multi_modal_projector)\.")
"""Tensors that hold no weights of the text model: mask and rotary buffers, BERT's pooler and next-sentence head
(its masked-LM head is used), a decoder bias tied to the head's bias, Gemma 3's image tower."""

Shapes = dict[str, tuple[int, ...]]
Get = Callable[[str], torch.Tensor]


def canonical(name: str, family: str) -> str:
    """A file's tensor name without the family's prefix; an old BERT LayerNorm's gamma/beta as weight/bias."""
    for prefix in PREFIXES[family]:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    if family == "gemma3" and name == "language_model.lm_head.weight":
        return "lm_head.weight"
    if family in ENCODER_PREFIXES and name.endswith((".gamma", ".beta")):
        return name.rsplit(".", 1)[0] + (".weight" if name.endswith(".gamma") else ".bias")
    return name


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
    elif f in LLAMA_LIKE:
        s["embed_tokens.weight"] = (V, d)
        for i in range(spec.n_layers):
            p = f"layers.{i}."
            for name in _block_norms(spec):
                _ln(s, p + name, d, bias=False)
            if spec.fused:
                _lin(s, p + "self_attn.qkv_proj", hd + 2 * kvd, d, False)
                _lin(s, p + "mlp.gate_up_proj", 2 * m, d, False)
            else:
                _lin(s, p + "self_attn.q_proj", hd, d, spec.qkv_bias)
                _lin(s, p + "self_attn.k_proj", kvd, d, spec.qkv_bias)
                _lin(s, p + "self_attn.v_proj", kvd, d, spec.qkv_bias)
                _lin(s, p + "mlp.gate_proj", m, d, spec.mlp_bias)
                _lin(s, p + "mlp.up_proj", m, d, spec.mlp_bias)
            _lin(s, p + "self_attn.o_proj", d, hd, spec.o_bias)
            _lin(s, p + "mlp.down_proj", d, m, spec.mlp_bias)
            if spec.qk_norm:
                per_head = spec.qk_norm == "head"
                _ln(s, p + "self_attn.q_norm", spec.d_head if per_head else hd, bias=False)
                _ln(s, p + "self_attn.k_norm", spec.d_head if per_head else kvd, bias=False)
        _ln(s, "norm", d, bias=False)
    else:
        return expected_encoder(spec)
    s[HEADS[f]] = (V, d)
    return s


def _block_norms(spec: ArchSpec) -> tuple[str, ...]:
    """A block's norms in the order (before attention, after it, before the MLP, after it) that exist."""
    return {"pre": ("input_layernorm", "post_attention_layernorm"),
            "post": ("post_attention_layernorm", "post_feedforward_layernorm"),
            "both": ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm")}[spec.norm_place]


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
    elif f in LLAMA_LIKE:
        embed, final = get("embed_tokens.weight"), ln("norm")
        for i in range(spec.n_layers):
            layers.append(_llama_like(spec, f"layers.{i}.", get, ln, lin))
    else:
        return build_encoder(spec, get, have_head)
    head = Linear(embed) if spec.tie_embeddings or not have_head else Linear(get(HEADS[f]))
    return ModelWeights(embed, layers, final, head, pos)


def _llama_like(spec: ArchSpec, p: str, get: Get, ln: Callable[[str], Norm], lin: Callable[[str], Linear]
                ) -> LayerWeights:
    """One block of the Llama-named families: Phi-3's fused projections are split into row views (no copy), the
    norms are placed as the family places them (``ArchSpec.norm_place``), q/k norms where it has them."""
    a = p + "self_attn."
    if spec.fused:
        hd, kvd, m = spec.n_heads * spec.d_head, spec.n_kv_heads * spec.d_head, spec.d_mlp
        qkv, gate_up = get(a + "qkv_proj.weight"), get(p + "mlp.gate_up_proj.weight")
        q, k, v = Linear(qkv[:hd]), Linear(qkv[hd:hd + kvd]), Linear(qkv[hd + kvd:])
        gate, up = Linear(gate_up[:m]), Linear(gate_up[m:])
    else:
        q, k, v = lin(a + "q_proj"), lin(a + "k_proj"), lin(a + "v_proj")
        gate, up = lin(p + "mlp.gate_proj"), lin(p + "mlp.up_proj")
    norms = {name: ln(p + name) for name in _block_norms(spec)}
    qk = (ln(a + "q_norm"), ln(a + "k_norm")) if spec.qk_norm else (None, None)
    if spec.norm_place == "post":
        ln1, ln2, post1, post2 = None, None, norms["post_attention_layernorm"], norms["post_feedforward_layernorm"]
    elif spec.norm_place == "both":
        ln1, ln2 = norms["input_layernorm"], norms["pre_feedforward_layernorm"]
        post1, post2 = norms["post_attention_layernorm"], norms["post_feedforward_layernorm"]
    else:
        ln1, ln2, post1, post2 = norms["input_layernorm"], norms["post_attention_layernorm"], None, None
    return LayerWeights(ln1, ln2, lin(a + "o_proj"), up, lin(p + "mlp.down_proj"), q=q, k=k, v=v, mlp_gate=gate,
                        q_norm=qk[0], k_norm=qk[1], post1=post1, post2=post2)


# --- the BERT family (bert, roberta, distilbert) ------------------------------------------------------------------
# Encoders differ from the decoders in four places the forward pass reads from the spec: no causal mask (every token
# sees every other), LayerNorm *after* each residual add (post-LN), embeddings made of token + learned position (+ token
# type 0 for BERT and RoBERTa) put through a LayerNorm, and a masked-language-model head (dense → activation →
# LayerNorm → the tied unembedding + a bias) whose logits at a position predict the token *at* that position — the
# one a ``[MASK]``/``<mask>`` hides — not the next one. RoBERTa's positions start at ``padding_idx + 1`` (fairseq's
# convention), so its table has ``padding_idx + 1`` rows more than the positions a text may use.


def _names(spec: ArchSpec) -> dict[str, str]:
    """Our roles → the family's tensor names (canonical: without the family's prefix), per layer with ``{i}``."""
    if spec.family == "distilbert":
        a = "transformer.layer.{i}."
        return {"embed": "embeddings.word_embeddings", "pos": "embeddings.position_embeddings",
                "embed_norm": "embeddings.LayerNorm", "q": a + "attention.q_lin", "k": a + "attention.k_lin",
                "v": a + "attention.v_lin", "o": a + "attention.out_lin", "ln1": a + "sa_layer_norm",
                "mlp_in": a + "ffn.lin1", "mlp_out": a + "ffn.lin2", "ln2": a + "output_layer_norm",
                "transform": "vocab_transform", "head_norm": "vocab_layer_norm", "head_bias": "vocab_projector.bias"}
    a = "encoder.layer.{i}."
    head = "cls.predictions." if spec.family == "bert" else "lm_head."
    return {"embed": "embeddings.word_embeddings", "pos": "embeddings.position_embeddings",
            "types": "embeddings.token_type_embeddings", "embed_norm": "embeddings.LayerNorm",
            "q": a + "attention.self.query", "k": a + "attention.self.key", "v": a + "attention.self.value",
            "o": a + "attention.output.dense", "ln1": a + "attention.output.LayerNorm",
            "mlp_in": a + "intermediate.dense", "mlp_out": a + "output.dense", "ln2": a + "output.LayerNorm",
            "transform": head + ("transform.dense" if spec.family == "bert" else "dense"),
            "head_norm": head + ("transform.LayerNorm" if spec.family == "bert" else "layer_norm"),
            "head_bias": head + "bias"}


def expected_encoder(spec: ArchSpec) -> Shapes:
    """Every tensor (canonical name → shape) of an encoder with its masked-LM head, the unembedding included."""
    n, d, m = _names(spec), spec.d_model, spec.d_mlp
    s: Shapes = {n["embed"] + ".weight": (spec.vocab_size, d),
                 n["pos"] + ".weight": (spec.max_positions + spec.position_offset, d)}
    if "types" in n:
        s[n["types"] + ".weight"] = (spec.token_types, d)
    for role, shape in (("embed_norm", (d,)), ("head_norm", (d,))):
        s[n[role] + ".weight"] = s[n[role] + ".bias"] = shape
    s[n["transform"] + ".weight"], s[n["transform"] + ".bias"] = (d, d), (d,)
    s[n["head_bias"]] = (spec.vocab_size,)
    for i in range(spec.n_layers):
        for role, out_f, in_f in (("q", d, d), ("k", d, d), ("v", d, d), ("o", d, d), ("mlp_in", m, d),
                                  ("mlp_out", d, m)):
            s[n[role].format(i=i) + ".weight"], s[n[role].format(i=i) + ".bias"] = (out_f, in_f), (out_f,)
        for role in ("ln1", "ln2"):
            s[n[role].format(i=i) + ".weight"] = s[n[role].format(i=i) + ".bias"] = (d,)
    s[HEADS[spec.family]] = (spec.vocab_size, d)
    return s


def build_encoder(spec: ArchSpec, get: Callable[[str], torch.Tensor], have_head: bool) -> ModelWeights:
    """``ModelWeights`` of an encoder: post-LN blocks, embeddings LayerNorm, token type 0, the masked-LM head."""
    n = _names(spec)

    def norm(name: str) -> Norm:
        return Norm(get(name + ".weight"), get(name + ".bias"), spec.norm_eps, "layer")

    def lin(name: str) -> Linear:
        return Linear(get(name + ".weight"), get(name + ".bias"))

    layers = []
    for i in range(spec.n_layers):
        r = {role: name.format(i=i) for role, name in n.items()}
        layers.append(LayerWeights(norm(r["ln1"]), norm(r["ln2"]), lin(r["o"]), lin(r["mlp_in"]), lin(r["mlp_out"]),
                                   q=lin(r["q"]), k=lin(r["k"]), v=lin(r["v"])))
    embed = get(n["embed"] + ".weight")
    head_eps = 1e-12 if spec.family == "distilbert" else spec.norm_eps  # DistilBERT's head norm: always 1e-12
    head = Linear(embed if spec.tie_embeddings or not have_head else get(HEADS[spec.family]), get(n["head_bias"]))
    return ModelWeights(embed, layers, None, head, get(n["pos"] + ".weight"),
                        embed_norm=norm(n["embed_norm"]),
                        token_type=get(n["types"] + ".weight")[0] if "types" in n else None,
                        head_transform=lin(n["transform"]),
                        head_norm=Norm(get(n["head_norm"] + ".weight"), get(n["head_norm"] + ".bias"), head_eps))
