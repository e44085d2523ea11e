"""The one error a pretrained model refuses bad input with, and the readers of config values that raise it.

A subclass of ``ValueError`` so callers that already catch ``ValueError`` (the CLI, the app's models) need nothing new;
every message names the file (or folder) and the reason, so a user can act on it without a traceback.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

ACTIVATIONS = ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "relu", "silu", "swish", "quick_gelu")


class PretrainedError(ValueError):
    """A model folder, file or input text cannot be used; the message names the file and the reason."""


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
