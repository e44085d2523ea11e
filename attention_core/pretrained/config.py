"""``config.json`` → ``ArchSpec``: one flat description of the architecture that the forward pass follows.

Every supported family reduces to the same few choices (how positions enter, which norm, which MLP, whether attention
and MLP read the same input, the scale and the window of each layer), so one forward pass serves them all and the
differences stay visible in one place. Keys are read the way Hugging Face transformers reads them, including the older
spellings of 4.x configs (``n_embd``, ``rotary_pct``, ``rotary_emb_base``, ``rope_theta`` + ``rope_scaling``) and
the newer ``rope_parameters`` of 5.x, with the same defaults, so a model behaves as it does there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import PretrainedError, _act, _bos, _check_heads, _float, _int

FAMILIES = {"gpt2": "gpt2", "llama": "llama", "mistral": "llama", "qwen2": "llama", "gpt_neox": "gpt_neox",
            "gpt_neo": "gpt_neo", "qwen3": "qwen3", "olmo2": "olmo2", "phi3": "phi3", "smollm3": "llama",
            "gemma2": "gemma2", "gemma3_text": "gemma3", "gemma3": "gemma3", "bert": "bert", "roberta": "roberta",
            "distilbert": "distilbert"}
"""config.json ``model_type`` → the family whose weight layout and forward pass it uses."""
DECODER_LIKE_LLAMA = ("llama", "qwen3", "olmo2", "phi3", "gemma2", "gemma3")
"""Families whose tensors are named as Llama's (``model.layers.N.self_attn.q_proj``…), with their own extras."""
ENCODERS = ("bert", "roberta", "distilbert")
SUPPORTED = tuple(FAMILIES)
OWN_FAMILY = "attention-playground"
ROPE_TYPES = ("default", "linear", "dynamic", "llama3")


@dataclass(frozen=True)
class ArchSpec:
    """What the forward pass needs to know. Layer-indexed tuples: ``scales`` (the multiplier of q·k: 1/√d_head,
    GPT-Neo's 1.0, GPT-2's optional 1/(layer+1)) and ``windows`` (None = all earlier keys; w = the last w keys,
    the query's own included: GPT-Neo's local layers, Mistral's sliding window)."""

    family: str
    model_type: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_model: int
    d_head: int
    d_mlp: int
    vocab_size: int
    max_positions: int
    norm: str = "layer"  # "layer" (LayerNorm with bias) or "rms" (RMSNorm, weight only)
    norm_eps: float = 1e-5
    act: str = "gelu_new"
    gated_mlp: bool = False  # SwiGLU: down(act(gate(x)) * up(x))
    positions: str = "learned"  # learned, rotary, sinusoidal, none
    rotary_dim: int = 0
    rotary_style: str = "half"  # "half": HF's rotate-half layout; "interleaved": pairs (2i, 2i+1), this app's
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] = field(default_factory=dict)
    parallel_residual: bool = False
    scales: tuple[float, ...] = ()
    windows: tuple[int | None, ...] = ()
    causal: bool = True
    qkv_bias: bool = True
    o_bias: bool = True
    mlp_bias: bool = True
    tie_embeddings: bool = True
    bos_token_id: int | None = None
    name_or_path: str | None = None
    qk_norm: str = ""  # "head": an RMSNorm over each head's q and k (Qwen3, Gemma 3); "proj": over the projection
    norm_place: str = "pre"  # pre: x + f(norm(x)); post: x + norm(f(x)) (OLMo-2); both (Gemma); after: norm(x + f(x))
    embed_scale: float = 1.0  # Gemma multiplies the embeddings by √d_model
    softcap: float | None = None  # attention scores c·tanh(s/c) after the scale, before the mask (Gemma 2)
    final_softcap: float | None = None  # the same on the logits
    rotary_layers: tuple[bool, ...] = ()  # () = every layer; SmolLM3's NoPE layers are False
    local_rope: tuple[float, dict[str, Any]] | None = None  # (theta, scaling) of the windowed layers (Gemma 3)
    fused: bool = False  # Phi-3: one qkv_proj ([q | k | v]) and one gate_up_proj ([gate | up])
    position_offset: int = 0  # RoBERTa: learned positions start at padding_idx + 1
    token_types: int = 0  # BERT: rows of the token type table (type 0 is added to every token)
    masked_lm: bool = False  # an encoder: the logits predict each position's own (masked) token, not the next one

    @property
    def kv_group(self) -> int:
        """Query heads per key/value head (1 without grouped-query attention)."""
        return self.n_heads // self.n_kv_heads

    def rope_of(self, layer: int) -> tuple[float, dict[str, Any]] | None:
        """(theta, scaling) of the rotary positions of ``layer``; None where the layer has none (NoPE)."""
        if self.positions != "rotary" or (self.rotary_layers and not self.rotary_layers[layer]):
            return None
        if self.local_rope is not None and self.windows[layer] is not None:
            return self.local_rope
        return self.rope_theta, self.rope_scaling


def _rope(cfg: dict[str, Any], where: Path, partial_default: float, params: Any = None,
          theta_default: float = 10000.0) -> tuple[float, float, dict[str, Any]]:
    """(theta, partial rotary factor, scaling params) from 5.x ``rope_parameters`` or 4.x keys (``params``: one
    layer type's entry of a per-layer-type ``rope_parameters``)."""
    if params is None:
        params = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise PretrainedError(f"{where}: rope_parameters must be an object, got {params!r}")
    if any(isinstance(v, dict) for v in params.values()):
        raise PretrainedError(f"{where}: per-layer-type rope_parameters are not supported")
    theta = params.get("rope_theta", cfg.get("rope_theta", cfg.get("rotary_emb_base", theta_default)))
    partial = params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", cfg.get("rotary_pct",
                                                                                           partial_default)))
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise PretrainedError(f"{where}: rope type {rope_type!r} is not supported (supported: {', '.join(ROPE_TYPES)})")
    if not isinstance(theta, (int, float)) or not theta > 0:
        raise PretrainedError(f"{where}: rope_theta must be a positive number, got {theta!r}")
    if not isinstance(partial, (int, float)) or not 0 < partial <= 1:
        raise PretrainedError(f"{where}: partial rotary factor must be in (0, 1], got {partial!r}")
    scaling = {k: v for k, v in params.items() if k not in ("rope_theta", "partial_rotary_factor", "type")}
    scaling["rope_type"] = rope_type
    if rope_type in ("linear", "llama3") and not isinstance(scaling.get("factor"), (int, float)):
        raise PretrainedError(f"{where}: rope type {rope_type!r} needs a numeric factor")
    if rope_type == "llama3":
        scaling.setdefault("original_max_position_embeddings", cfg.get("max_position_embeddings"))
    return float(theta), float(partial), scaling


def _gpt2(cfg: dict[str, Any], where: Path) -> ArchSpec:
    d = _int(cfg, where, "n_embd", "hidden_size")
    heads = _int(cfg, where, "n_head", "num_attention_heads")
    layers = _int(cfg, where, "n_layer", "num_hidden_layers")
    _check_heads(where, d, heads, heads)
    base = (d // heads) ** -0.5 if cfg.get("scale_attn_weights", True) else 1.0
    by_layer = bool(cfg.get("scale_attn_by_inverse_layer_idx", False))
    scales = tuple(base / (i + 1) if by_layer else base for i in range(layers))
    return ArchSpec(
        "gpt2", "gpt2", layers, heads, heads, d, d // heads, _int(cfg, where, "n_inner", default=4 * d),
        _int(cfg, where, "vocab_size"), _int(cfg, where, "n_positions", "max_position_embeddings", default=1024),
        norm_eps=_float(cfg, where, "layer_norm_epsilon", 1e-5),
        act=_act(cfg.get("activation_function", "gelu_new"), where, "activation_function"),
        scales=scales, windows=(None,) * layers, tie_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        bos_token_id=_bos(cfg))


def _gpt_neo(cfg: dict[str, Any], where: Path) -> ArchSpec:
    d = _int(cfg, where, "hidden_size")
    heads = _int(cfg, where, "num_heads", "num_attention_heads")
    layers = _int(cfg, where, "num_layers", "num_hidden_layers")
    _check_heads(where, d, heads, heads)
    kinds = cfg.get("attention_layers")
    if not kinds:
        kinds = [k for kinds_, n in cfg.get("attention_types") or [[["global", "local"], 12]] for _ in range(n)
                 for k in kinds_]
    if len(kinds) != layers or any(k not in ("global", "local") for k in kinds):
        raise PretrainedError(f"{where}: attention_layers {kinds!r} must name 'global' or 'local' for each of the "
                              f"{layers} layers")
    window = _int(cfg, where, "window_size", default=256)
    return ArchSpec(
        "gpt_neo", "gpt_neo", layers, heads, heads, d, d // heads, _int(cfg, where, "intermediate_size", default=4 * d),
        _int(cfg, where, "vocab_size"), _int(cfg, where, "max_position_embeddings", default=2048),
        norm_eps=_float(cfg, where, "layer_norm_epsilon", 1e-5),
        act=_act(cfg.get("activation_function", "gelu_new"), where, "activation_function"),
        scales=(1.0,) * layers,  # GPT-Neo does not scale q·k (as trained)
        windows=tuple(window if k == "local" else None for k in kinds), qkv_bias=False,
        tie_embeddings=bool(cfg.get("tie_word_embeddings", True)), bos_token_id=_bos(cfg))


def _gpt_neox(cfg: dict[str, Any], where: Path) -> ArchSpec:
    d = _int(cfg, where, "hidden_size")
    heads = _int(cfg, where, "num_attention_heads")
    layers = _int(cfg, where, "num_hidden_layers")
    _check_heads(where, d, heads, heads)
    d_head = d // heads
    theta, partial, scaling = _rope(cfg, where, 0.25)
    bias = bool(cfg.get("attention_bias", True))
    return ArchSpec(
        "gpt_neox", "gpt_neox", layers, heads, heads, d, d_head, _int(cfg, where, "intermediate_size", default=4 * d),
        _int(cfg, where, "vocab_size"), _int(cfg, where, "max_position_embeddings", default=2048),
        norm_eps=_float(cfg, where, "layer_norm_eps", 1e-5),
        act=_act(cfg.get("hidden_act", "gelu"), where, "hidden_act"), positions="rotary",
        rotary_dim=int(d_head * partial), rope_theta=theta, rope_scaling=scaling,
        parallel_residual=bool(cfg.get("use_parallel_residual", True)), scales=(d_head ** -0.5,) * layers,
        windows=(None,) * layers, qkv_bias=bias, o_bias=bias,
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)), bos_token_id=_bos(cfg))


def _llama(cfg: dict[str, Any], where: Path, model_type: str) -> ArchSpec:
    d = _int(cfg, where, "hidden_size")
    heads = _int(cfg, where, "num_attention_heads")
    kv = _int(cfg, where, "num_key_value_heads", default=heads)
    layers = _int(cfg, where, "num_hidden_layers")
    _check_heads(where, d, heads, kv)
    d_head = _int(cfg, where, "head_dim", default=d // heads)
    theta, partial, scaling = _rope(cfg, where, 1.0)
    windows: tuple[int | None, ...] = (None,) * layers
    if model_type == "mistral":
        sw = cfg.get("sliding_window", 4096)
        windows = (int(sw),) * layers if isinstance(sw, int) else windows
    elif model_type == "qwen2":
        sw = cfg.get("sliding_window") if cfg.get("use_sliding_window", False) else None
        kinds = cfg.get("layer_types") or [
            "sliding_attention" if sw is not None and i >= int(cfg.get("max_window_layers", 28)) else "full_attention"
            for i in range(layers)]
        if len(kinds) != layers:
            raise PretrainedError(f"{where}: layer_types names {len(kinds)} layers, the model has {layers}")
        windows = tuple(int(sw) if k == "sliding_attention" and isinstance(sw, int) else None for k in kinds)
    attention_bias = bool(cfg.get("attention_bias", False))
    return ArchSpec(
        "llama", model_type, layers, heads, kv, d, d_head, _int(cfg, where, "intermediate_size"),
        _int(cfg, where, "vocab_size"), _int(cfg, where, "max_position_embeddings", default=2048), norm="rms",
        norm_eps=_float(cfg, where, "rms_norm_eps", 1e-6), act=_act(cfg.get("hidden_act", "silu"), where, "hidden_act"),
        gated_mlp=True, positions="rotary", rotary_dim=int(d_head * partial), rope_theta=theta, rope_scaling=scaling,
        scales=(d_head ** -0.5,) * layers, windows=windows, qkv_bias=attention_bias or model_type == "qwen2",
        o_bias=attention_bias, mlp_bias=bool(cfg.get("mlp_bias", False)),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)), bos_token_id=_bos(cfg))


def _kinds(cfg: dict[str, Any], where: Path, layers: int, default: list[str]) -> list[str]:
    kinds = cfg.get("layer_types") or default
    if len(kinds) != layers or any(k not in ("full_attention", "sliding_attention") for k in kinds):
        raise PretrainedError(f"{where}: layer_types must name 'full_attention' or 'sliding_attention' for each of "
                              f"the {layers} layers, got {kinds!r}")
    return list(kinds)


def _window(cfg: dict[str, Any], where: Path, default: int | None) -> int | None:
    sw = cfg.get("sliding_window", default)
    if sw is not None and (isinstance(sw, bool) or not isinstance(sw, int) or sw < 1):
        raise PretrainedError(f"{where}: sliding_window must be a positive integer, got {sw!r}")
    return sw


def _decoder(cfg: dict[str, Any], where: Path, model_type: str) -> ArchSpec:
    """Qwen3, OLMo-2, Phi-3, SmolLM3, Gemma 2 and Gemma 3: Llama's block with their own changes (see the fields
    of ``ArchSpec`` they set), read with transformers' defaults for each."""
    family = FAMILIES[model_type]
    gemma = family in ("gemma2", "gemma3")
    if cfg.get("use_bidirectional_attention"):
        raise PretrainedError(f"{where}: use_bidirectional_attention (an embedding model) is not supported")
    d = _int(cfg, where, "hidden_size")
    heads = _int(cfg, where, "num_attention_heads")
    kv = _int(cfg, where, "num_key_value_heads", default=heads)
    layers = _int(cfg, where, "num_hidden_layers")
    _check_heads(where, d, heads, kv)
    head_default = {"qwen3": 128, "gemma2": 256, "gemma3": 256}.get(family, d // heads)
    d_head = _int(cfg, where, "head_dim", default=head_default)
    rope = cfg.get("rope_parameters")
    local = None
    if family == "gemma3":
        per_type = rope if isinstance(rope, dict) and isinstance(rope.get("full_attention"), dict) else None
        full = per_type["full_attention"] if per_type else (cfg.get("rope_scaling") or {})
        theta, partial, scaling = _rope(cfg, where, 1.0, full, 1_000_000.0)
        sliding = per_type.get("sliding_attention") if per_type else None
        local_theta, _, local_scaling = _rope({"rope_theta": cfg.get("rope_local_base_freq", 10000.0)}, where, 1.0,
                                              sliding or {})
        local = (local_theta, local_scaling)
    else:
        theta, partial, scaling = _rope(cfg, where, 1.0, None, 2_000_000.0 if family == "llama" else 10000.0)
    sw = _window(cfg, where, 4096 if gemma else None)
    rotary: tuple[bool, ...] = ()
    if family in ("qwen3", "llama"):  # qwen3, smollm3
        if family == "llama":
            interval = _int(cfg, where, "no_rope_layer_interval", default=4)
            flags = cfg.get("no_rope_layers") or [int((i + 1) % max(interval, 1) != 0) for i in range(layers)]
            if len(flags) != layers:
                raise PretrainedError(f"{where}: no_rope_layers names {len(flags)} layers, the model has {layers}")
            rotary = tuple(bool(f) for f in flags)
            default = ["sliding_attention" if cfg.get("use_sliding_window") and sw is not None and not rotary[i]
                       else "full_attention" for i in range(layers)]
        else:
            default = ["sliding_attention" if cfg.get("use_sliding_window") and sw is not None
                       and i >= int(cfg.get("max_window_layers", 28)) else "full_attention" for i in range(layers)]
        on = bool(cfg.get("use_sliding_window", False))
        kinds = _kinds(cfg, where, layers, default)
        windows = tuple(sw if on and k == "sliding_attention" else None for k in kinds)
    elif gemma:
        pattern = cfg.get("sliding_window_pattern", cfg.get("_sliding_window_pattern", 2 if family == "gemma2" else 6))
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            raise PretrainedError(f"{where}: sliding_window_pattern must be a positive integer, got {pattern!r}")
        kinds = _kinds(cfg, where, layers, ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                            for i in range(layers)])
        windows = tuple(sw if k == "sliding_attention" else None for k in kinds)
    else:  # phi3: one window for every layer; olmo2: none
        windows = (sw if family == "phi3" else None,) * layers
    if gemma:
        scalar = _float(cfg, where, "query_pre_attn_scalar", 256.0)
        if scalar <= 0:
            raise PretrainedError(f"{where}: query_pre_attn_scalar must be positive, got {scalar}")
        scale = scalar ** -0.5
    else:
        scale = d_head ** -0.5
    caps = []
    for key, default_cap in (("attn_logit_softcapping", 50.0 if family == "gemma2" else None),
                             ("final_logit_softcapping", 30.0 if family == "gemma2" else None)):
        cap = cfg.get(key, default_cap)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap > 0):
            raise PretrainedError(f"{where}: {key} must be a positive number or null, got {cap!r}")
        caps.append(None if cap is None else float(cap))
    if family == "gemma3":  # its config may carry attn_logit_softcapping; its attention never applies it
        caps[0] = None
    act_key = "hidden_activation" if gemma and "hidden_activation" in cfg else "hidden_act"
    bias = bool(cfg.get("attention_bias", False))
    return ArchSpec(
        family, model_type, layers, heads, kv, d, d_head, _int(cfg, where, "intermediate_size"),
        _int(cfg, where, "vocab_size"), _int(cfg, where, "max_position_embeddings", default=2048),
        norm="gemma" if gemma else "olmo" if family == "olmo2" else "rms",
        norm_eps=_float(cfg, where, "rms_norm_eps", 1e-5 if family in ("olmo2", "phi3") else 1e-6),
        act=_act(cfg.get(act_key, "gelu_pytorch_tanh" if gemma else "silu"), where, act_key), gated_mlp=True,
        positions="rotary", rotary_dim=int(d_head * partial), rope_theta=theta, rope_scaling=scaling,
        scales=(scale,) * layers, windows=windows, qkv_bias=bias and family != "phi3",
        o_bias=bias and family != "phi3", mlp_bias=bool(cfg.get("mlp_bias", False)),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", family in ("gemma2", "gemma3", "llama"))),
        bos_token_id=_bos(cfg), qk_norm={"qwen3": "head", "gemma3": "head", "olmo2": "proj"}.get(family, ""),
        norm_place={"olmo2": "post", "gemma2": "both", "gemma3": "both"}.get(family, "pre"),
        embed_scale=d ** 0.5 if gemma else 1.0, softcap=caps[0], final_softcap=caps[1], rotary_layers=rotary,
        local_rope=local, fused=family == "phi3")


def _encoder(cfg: dict[str, Any], where: Path, model_type: str) -> ArchSpec:
    """BERT, RoBERTa, DistilBERT: no causal mask, post-LN, LayerNorm'd embeddings (+ token type 0), a masked-LM head;
    RoBERTa's positions start at padding_idx + 1, so its table holds that many rows more than a text may use."""
    if model_type == "distilbert":
        d, heads, layers = (_int(cfg, where, k) for k in ("dim", "n_heads", "n_layers"))
        d_mlp = _int(cfg, where, "hidden_dim", default=4 * d)
        act = _act(cfg.get("activation", "gelu"), where, "activation")
        eps, offset, types = 1e-12, 0, 0
    else:
        if cfg.get("is_decoder") or cfg.get("add_cross_attention"):
            raise PretrainedError(f"{where}: a {model_type} decoder (is_decoder / cross-attention) is not supported")
        d, heads, layers = (_int(cfg, where, k) for k in ("hidden_size", "num_attention_heads", "num_hidden_layers"))
        d_mlp = _int(cfg, where, "intermediate_size", default=4 * d)
        act = _act(cfg.get("hidden_act", "gelu"), where, "hidden_act")
        eps = _float(cfg, where, "layer_norm_eps", 1e-12)
        offset = _int(cfg, where, "pad_token_id", default=1) + 1 if model_type == "roberta" else 0
        types = _int(cfg, where, "type_vocab_size", default=2)
        if types < 1:
            raise PretrainedError(f"{where}: type_vocab_size must be >= 1")
    _check_heads(where, d, heads, heads)
    table = _int(cfg, where, "max_position_embeddings", default=512)
    if table <= offset:
        raise PretrainedError(f"{where}: max_position_embeddings {table} leaves no position after the offset {offset}")
    return ArchSpec(
        model_type, model_type, layers, heads, heads, d, d // heads, d_mlp, _int(cfg, where, "vocab_size"),
        table - offset, norm_eps=eps, act=act, positions="learned", scales=((d // heads) ** -0.5,) * layers,
        windows=(None,) * layers, causal=False, tie_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        norm_place="after", position_offset=offset, token_types=types, masked_lm=True)


def parse_config(cfg: dict[str, Any], where: Path) -> ArchSpec:
    """The spec of a Hugging Face ``config.json`` (already parsed); ``where`` names the file in messages."""
    model_type = cfg.get("model_type")
    if model_type not in FAMILIES:
        raise PretrainedError(f"{where}: model_type {model_type!r} is not supported (supported: "
                              f"{', '.join(SUPPORTED)})")
    if model_type == "gemma3":  # the text part of a Gemma 3 image-text checkpoint
        text = cfg.get("text_config")
        if not isinstance(text, dict):
            raise PretrainedError(f"{where}: a gemma3 config without a text_config object")
        cfg = {**text, "model_type": "gemma3", "_name_or_path": cfg.get("_name_or_path"),
               "tie_word_embeddings": text.get("tie_word_embeddings", cfg.get("tie_word_embeddings", True))}
    family = FAMILIES[model_type]
    if family in ENCODERS:
        spec = _encoder(cfg, where, model_type)
    elif model_type in ("llama", "mistral", "qwen2"):
        spec = _llama(cfg, where, model_type)
    elif family in DECODER_LIKE_LLAMA:
        spec = _decoder(cfg, where, model_type)
    elif family == "gpt2":
        spec = _gpt2(cfg, where)
    elif family == "gpt_neo":
        spec = _gpt_neo(cfg, where)
    elif family == "gpt_neox":
        spec = _gpt_neox(cfg, where)
    else:
        raise PretrainedError(f"{where}: model_type {model_type!r} has no reader")  # FAMILIES names a reader for each
    if spec.n_layers < 1 or spec.vocab_size < 1 or spec.max_positions < 1:
        raise PretrainedError(f"{where}: layers, vocab_size and max positions must be >= 1")
    if spec.positions == "rotary" and spec.rotary_dim % 2:
        raise PretrainedError(f"{where}: the rotary width {spec.rotary_dim} must be even")
    name = cfg.get("_name_or_path")
    from dataclasses import replace

    return replace(spec, name_or_path=name if isinstance(name, str) and name else None)
