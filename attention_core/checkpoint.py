"""Checkpoints as safetensors (no pickle, ever) with the model config in the file's metadata.

A file is refused with a clear ``CheckpointError`` when it is not safetensors, was not written by this
package, or its tensors do not fit the config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from .fileio import atomic_write
from .model import ModelConfig, TinyTransformer

FORMAT = "attention-playground/tiny-transformer"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """The file cannot be loaded as a TinyTransformer checkpoint; the message says why."""


def save_checkpoint(path: str | Path, model: TinyTransformer, extra: dict[str, Any] | None = None) -> None:
    """Save weights + ``model.config`` (+ optional JSON-able ``extra``, e.g. the training config)."""
    from safetensors.torch import save

    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    metadata = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "model_config": json.dumps(model.config.to_dict()),
        "extra": json.dumps(extra or {}),
    }
    blob = save(tensors, metadata=metadata)
    atomic_write(path, lambda fh: fh.write(blob))


def read_checkpoint_metadata(path: str | Path) -> dict[str, Any]:
    """The file's metadata (format, model_config, extra), validated; raises CheckpointError."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
    except Exception as exc:
        raise CheckpointError(f"{path}: not a safetensors file ({exc})") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path}: not an Attention Playground model (format {meta.get('format')!r}, expected {FORMAT!r})"
        )
    try:
        version = int(meta.get("format_version", "0"))
        model_config = json.loads(meta["model_config"])
        extra = json.loads(meta.get("extra", "{}"))
    except (KeyError, ValueError) as exc:
        raise CheckpointError(f"{path}: damaged metadata ({exc})") from None
    if version > FORMAT_VERSION:
        raise CheckpointError(f"{path}: written by a newer version (format {version} > {FORMAT_VERSION})")
    return {"format_version": version, "model_config": model_config, "extra": extra}


def load_checkpoint(path: str | Path, device: str = "cpu") -> tuple[TinyTransformer, dict[str, Any]]:
    """Rebuild the model; returns (model, metadata with ``model_config`` and ``extra``)."""
    from safetensors.torch import load_file

    from .devices import resolve_device

    meta = read_checkpoint_metadata(path)
    try:
        config = ModelConfig.from_dict(meta["model_config"])
        model = TinyTransformer.from_config(config)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: invalid model config ({exc})") from None
    try:
        tensors = load_file(str(path))
    except Exception as exc:
        raise CheckpointError(f"{path}: tensors unreadable ({exc})") from None
    expected = model.state_dict()
    missing, unexpected = set(expected) - set(tensors), set(tensors) - set(expected)
    if missing or unexpected:
        raise CheckpointError(
            f"{path}: tensors do not match the config (missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]})"
        )
    for name, t in tensors.items():
        if t.shape != expected[name].shape:
            raise CheckpointError(
                f"{path}: tensor {name} has shape {tuple(t.shape)}, config needs {tuple(expected[name].shape)}"
            )
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise CheckpointError(f"{path}: tensor {name} contains NaN or infinity")
    model.load_state_dict(tensors)
    model.eval()
    return model.to(resolve_device(device)), meta
