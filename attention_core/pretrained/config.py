"""``config.json`` → ``ArchSpec``: one flat description of the architecture that the forward pass follows.

Every supported family reduces to the same few choices (how positions enter, which norm, which MLP, whether attention
and MLP read the same input, the scale and the window of each layer), so one forward pass serves them all and the
differences stay visible in one place. Keys are read the way Hugging Face transformers reads them, including the older
spellings of 4.x configs (``n_embd``, ``rotary_pct``, ``rotary_emb_base``, ``rope_theta`` + ``rope_scaling``) and
the newer ``rope_parameters`` of 5.x, with the same defaults, so a model behaves as it does there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import PretrainedError

FAMILIES = {"gpt2": "gpt2", "llama": "llama", "mistral": "llama", "qwen2": "llama", "gpt_neox": "gpt_neox",
            "gpt_neo": "gpt_neo"}
"""config.json ``model_type`` → the family whose weight layout and forward pass it uses."""
SUPPORTED = tuple(FAMILIES)
OWN_FAMILY = "attention-playground"
ROPE_TYPES = ("default", "linear", "dynamic", "llama3")
ACTIVATIONS = ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "relu", "silu", "swish", "quick_gelu")


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

    @property
    def kv_group(self) -> int:
        """Query heads per key/value head (1 without grouped-query attention)."""
        return self.n_heads // self.n_kv_heads


def _int(cfg: dict[str, Any], where: Path, *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PretrainedError(f"{where}: {key} must be a non-negative integer, got {value!r}")
            return value
    if default is None:
        raise PretrainedError(f"{where}: lacks {' / '.join(keys)}")
    return default


def _float(cfg: dict[str, Any], where: Path, key: str, default: float) -> float:
    value = cfg.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PretrainedError(f"{where}: {key} must be a number, got {value!r}")
    return float(value)


def _act(name: Any, where: Path, key: str) -> str:
    if name not in ACTIVATIONS:
        raise PretrainedError(f"{where}: activation {key}={name!r} is not supported (supported: "
                              f"{', '.join(ACTIVATIONS)})")
    return str(name)


def _bos(cfg: dict[str, Any]) -> int | None:
    bos = cfg.get("bos_token_id")
    return bos if isinstance(bos, int) and not isinstance(bos, bool) else None


def _check_heads(where: Path, d_model: int, heads: int, kv_heads: int) -> None:
    if heads < 1 or kv_heads < 1 or heads % kv_heads:
        raise PretrainedError(f"{where}: {heads} attention heads cannot share {kv_heads} key/value heads")
    if d_model < 1:
        raise PretrainedError(f"{where}: hidden size must be >= 1, got {d_model}")


def _rope(cfg: dict[str, Any], where: Path, partial_default: float) -> tuple[float, float, dict[str, Any]]:
    """(theta, partial rotary factor, scaling params) from 5.x ``rope_parameters`` or 4.x keys."""
    params = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise PretrainedError(f"{where}: rope_parameters must be an object, got {params!r}")
    if any(isinstance(v, dict) for v in params.values()):
        raise PretrainedError(f"{where}: per-layer-type rope_parameters are not supported")
    theta = params.get("rope_theta", cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000.0)))
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


def parse_config(cfg: dict[str, Any], where: Path) -> ArchSpec:
    """The spec of a Hugging Face ``config.json`` (already parsed); ``where`` names the file in messages."""
    model_type = cfg.get("model_type")
    if model_type not in FAMILIES:
        raise PretrainedError(f"{where}: model_type {model_type!r} is not supported (supported: "
                              f"{', '.join(SUPPORTED)})")
    family = FAMILIES[model_type]
    if family == "gpt2":
        spec = _gpt2(cfg, where)
    elif family == "gpt_neo":
        spec = _gpt_neo(cfg, where)
    elif family == "gpt_neox":
        spec = _gpt_neox(cfg, where)
    else:
        spec = _llama(cfg, where, model_type)
    if spec.n_layers < 1 or spec.vocab_size < 1 or spec.max_positions < 1:
        raise PretrainedError(f"{where}: layers, vocab_size and max positions must be >= 1")
    if spec.positions == "rotary" and spec.rotary_dim % 2:
        raise PretrainedError(f"{where}: the rotary width {spec.rotary_dim} must be even")
    name = cfg.get("_name_or_path")
    from dataclasses import replace

    return replace(spec, name_or_path=name if isinstance(name, str) and name else None)
