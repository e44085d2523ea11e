"""Checkpoints as safetensors (no pickle, ever) with the model config in the file's metadata.

A file is refused with a clear ``CheckpointError`` when it is not safetensors, was not written by this
package, or its tensors do not fit the config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from ..fileio import atomic_write
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

    from ..devices import resolve_device

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


def save_model_files(path: str | Path, model: TinyTransformer, train_config: dict[str, Any], *, step: int,
                     probe: list[int] | None = None, config_path: str | Path | None = None,
                     extra: dict[str, Any] | None = None) -> Path:
    """Save a trained model the one way the app and the CLI do: ``path`` (safetensors: weights, with the training
    config, step and probe in its metadata — what loading reads) and a JSON file with the same config for people
    and other tools (``config_path``, default ``path`` with the suffix ``.json``). Returns the JSON's path."""
    extra = {"train_config": dict(train_config), "step": int(step), **(extra or {})}
    if probe is not None:
        extra["probe"] = [int(t) for t in probe]
    save_checkpoint(path, model, extra=extra)
    text = json.dumps({"model_config": model.config.to_dict(), **extra}, indent=2)
    json_path = Path(config_path) if config_path is not None else Path(path).with_suffix(".json")
    atomic_write(json_path, lambda fh: fh.write(text), text=True)
    return json_path


HISTORY_FORMAT = "attention-playground/training-history"
_REPORT_SCALARS = ("step", "total_steps", "epoch", "loss", "train_accuracy", "evaluated", "test_loss",
                   "reversal_accuracy", "sequence_accuracy", "train_sequence_accuracy", "seconds", "wall_seconds")

_REPORT_ARRAYS = ("head_task_scores", "head_entropy")


def history_path(model_path: str | Path) -> Path:
    """Where a model's recorded history lives: ``NAME.history.safetensors`` beside ``NAME.safetensors``."""
    p = Path(model_path)
    return p.with_name(p.stem + ".history.safetensors")


def save_history(path: str | Path, entries: list[tuple[Any, list[int], dict[str, Any] | None]]) -> None:
    """A run's recorded steps as safetensors (never pickle): per entry ``(TrainingReport, probe tokens, parameters
    as numpy arrays or None)``. Scalars and probes go into the metadata as JSON; maps, head scores and parameters
    are tensors named ``NNNNN/...``."""
    import numpy as np
    from safetensors.numpy import save

    tensors: dict[str, Any] = {}
    rows = []
    for i, (report, probe, params) in enumerate(entries):
        key = f"{i:05d}"
        row = {name: getattr(report, name) for name in _REPORT_SCALARS}
        row["evaluated"] = bool(row["evaluated"])
        row["probe"] = [int(t) for t in probe]
        row["layers"] = len(report.probe_weights)
        row["has_params"] = params is not None
        rows.append(row)
        tensors[f"{key}/head_reversal_scores"] = np.ascontiguousarray(report.head_reversal_scores, dtype=np.float64)
        for name in _REPORT_ARRAYS:  # optional (None in a history recorded before they existed)
            value = getattr(report, name, None)
            if value is not None:
                tensors[f"{key}/{name}"] = np.ascontiguousarray(value, dtype=np.float64)
        for li, w in enumerate(report.probe_weights):
            tensors[f"{key}/probe_weights/{li}"] = np.ascontiguousarray(w, dtype=np.float64)
        for name, value in (params or {}).items():
            tensors[f"{key}/param/{name}"] = np.ascontiguousarray(value)
    metadata = {"format": HISTORY_FORMAT, "format_version": "1", "reports": json.dumps(rows)}
    blob = save(tensors, metadata=metadata)
    atomic_write(path, lambda fh: fh.write(blob))


def load_history(path: str | Path) -> list[tuple[Any, list[int], dict[str, Any] | None]]:
    """Read what ``save_history`` wrote; raises ``CheckpointError`` with the reason for a damaged file (a newer
    format version, NaN or infinity in a tensor included, as ``load_checkpoint`` refuses them)."""
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file

    from .report import TrainingReport

    path = Path(path)
    try:
        with safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
        tensors = load_file(str(path))
        if meta.get("format") != HISTORY_FORMAT:
            raise ValueError(f"format {meta.get('format')!r}, expected {HISTORY_FORMAT!r}")
        version = int(meta.get("format_version", "1"))
        if version > 1:
            raise ValueError(f"written by a newer version (format {version} > 1)")
        for name, t in tensors.items():
            if np.issubdtype(t.dtype, np.floating) and not np.isfinite(t).all():
                raise ValueError(f"tensor {name} contains NaN or infinity")
        rows = json.loads(meta["reports"])
        out: list[tuple[Any, list[int], dict[str, Any] | None]] = []
        for i, row in enumerate(rows):
            key = f"{i:05d}"
            weights = [tensors[f"{key}/probe_weights/{li}"] for li in range(int(row["layers"]))]
            prefix = f"{key}/param/"
            params = ({k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
                      if row.get("has_params") else None)
            arrays: dict[str, Any] = {name: tensors.get(f"{key}/{name}") for name in _REPORT_ARRAYS}
            report = TrainingReport(**{name: row[name] for name in _REPORT_SCALARS},
                                    head_reversal_scores=tensors[f"{key}/head_reversal_scores"],
                                    probe_weights=weights, **arrays)
            out.append((report, [int(t) for t in row["probe"]], params))
    except CheckpointError:
        raise
    except Exception as exc:
        raise CheckpointError(f"{path}: damaged training history ({exc})") from None
    return out
