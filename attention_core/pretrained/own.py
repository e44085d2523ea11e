"""This app's own trained models (``save_checkpoint`` files) as pretrained models, family "attention-playground".

The checkpoint is read by ``checkpoint.load_checkpoint`` (its validation, its messages) and the TinyTransformer's
tensors are handed to the same forward pass as every other family: pre-norm blocks, LayerNorm (eps 1e-5), exact GELU,
learned or sinusoidal positions added to the embeddings, or rotary positions in the app's interleaved-pair layout,
scale 1/√d_k, and the causal mask only when the model was trained with it (``train_config.causal``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from .config import OWN_FAMILY, ArchSpec
from .errors import PretrainedError
from .layers import LayerWeights, Linear, ModelWeights, Norm
from .tokenizer import OwnVocab


def own_checkpoint(path: Path) -> bool:
    """Is this a safetensors file written by ``checkpoint.save_checkpoint`` (its metadata says so)?"""
    from safetensors import safe_open

    from ..tiny.checkpoint import FORMAT

    if not path.is_file():
        return False
    try:
        with safe_open(str(path), framework="pt") as f:
            return (f.metadata() or {}).get("format") == FORMAT
    except Exception:  # not safetensors at all: the caller says why
        return False


def load_own(path: Path, dtype: torch.dtype, device: str) -> tuple[ArchSpec, ModelWeights, OwnVocab, str]:
    """(spec, weights, vocabulary, name) of an app checkpoint; ``CheckpointError`` becomes ``PretrainedError``."""
    from ..steps import default_scale
    from ..tiny.checkpoint import CheckpointError, load_checkpoint

    try:
        model, meta = load_checkpoint(path)
    except CheckpointError as exc:
        raise PretrainedError(str(exc)) from None
    cfg = model.config
    train: dict[str, Any] = dict(meta.get("extra", {}).get("train_config") or {})
    state = {k: v.detach().to(device=device, dtype=dtype) for k, v in model.state_dict().items()}

    def lin(name: str) -> Linear:
        return Linear(state[f"{name}.weight"], state.get(f"{name}.bias"))

    def norm(name: str) -> Norm:
        return Norm(state[f"{name}.weight"], state[f"{name}.bias"], 1e-5)

    layers = [LayerWeights(norm(f"layers.{i}.norm1"), norm(f"layers.{i}.norm2"), lin(f"layers.{i}.attention.W_o"),
                           lin(f"layers.{i}.ffn.0"), lin(f"layers.{i}.ffn.2"), q=lin(f"layers.{i}.attention.W_q"),
                           k=lin(f"layers.{i}.attention.W_k"), v=lin(f"layers.{i}.attention.W_v"))
              for i in range(cfg.num_layers)]
    pos = None
    if cfg.positional == "learned":
        pos = state["pos_emb.weight"]
    elif cfg.positional == "sinusoidal":
        pos = model.pos_table.detach().to(device=device, dtype=dtype)
    weights = ModelWeights(state["token_emb.weight"], layers, norm("norm"), lin("head"), pos)
    d_head = cfg.d_model // cfg.num_heads
    spec = ArchSpec(
        OWN_FAMILY, OWN_FAMILY, cfg.num_layers, cfg.num_heads, cfg.num_heads, cfg.d_model, d_head, 4 * cfg.d_model,
        cfg.vocab_size, cfg.max_seq_len, act="gelu",
        positions={"learned": "learned", "sinusoidal": "learned", "rotary": "rotary"}.get(cfg.positional, "none"),
        rotary_dim=d_head, rotary_style="interleaved", scales=(default_scale(d_head),) * cfg.num_layers,
        windows=(None,) * cfg.num_layers, causal=bool(train.get("causal", True)), tie_embeddings=False)
    name = path.parent.name if path.name == "model.safetensors" else path.stem
    if train.get("task"):
        name = f"{name} ({train['task']})"
    return spec, weights, OwnVocab(cfg.vocab_size, path), name


def own_config_json(folder: Path) -> bool:
    """A folder's config.json as ``attention-playground train`` writes it (``model_config``, no ``model_type``)."""
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "model_config" in data and "model_type" not in data
