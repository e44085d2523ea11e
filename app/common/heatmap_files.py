"""A heatmap's numbers as a file, without Qt: the formats an export accepts, validation, the CSV, atomic writes
and the export size of an image. The Qt renderers (``app.widgets.rendering``) and the CLI both build on it."""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

FORMATS = (".png", ".svg", ".pdf", ".csv")
IMAGE_FORMATS = (".png", ".svg", ".pdf")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    from attention_core.fileio import atomic_write

    atomic_write(path, lambda fh: fh.write(data))
    umask = os.umask(0)
    os.umask(umask)
    try:  # mkstemp makes the file 0600; an exported figure should be readable like any other file
        os.chmod(path, 0o666 & ~umask)
    except OSError:
        pass


def check_heatmap(path: str | Path, values: Any, row_labels: Sequence[str], col_labels: Sequence[str],
                  blocked: Any = None) -> tuple[Path, np.ndarray, np.ndarray | None]:
    """Validate an export: a known suffix, 2-D values, one label per row and column. Returns them as arrays."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"export: unsupported file type {suffix or '(none)'!r}; use .png, .svg, .pdf or .csv")
    vals = np.asarray(values, dtype=np.float64)
    if vals.ndim != 2:
        raise ValueError(f"export: values must be 2-D, got shape {vals.shape}")
    if len(row_labels) != vals.shape[0] or len(col_labels) != vals.shape[1]:
        raise ValueError(f"export: {len(row_labels)} row / {len(col_labels)} column labels for shape {vals.shape}")
    blk = None if blocked is None else np.broadcast_to(np.asarray(blocked, dtype=bool), vals.shape)
    return path, vals, blk


def write_heatmap_csv(path: Path, values: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str],
                      blocked: np.ndarray | None, kind: str) -> None:
    """A corner cell then the column labels; one row per query, label then numbers in full precision (``repr``);
    blocked cells of scores as ``-inf``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["", *[str(c) for c in col_labels]])
    for i, label in enumerate(row_labels):
        row = []
        for j, v in enumerate(values[i].tolist()):
            if blocked is not None and blocked[i, j] and kind != "weights" and math.isfinite(v):
                row.append("-inf")  # a blocked score is -inf whatever number sits under it
            else:
                row.append(repr(float(v)))
        w.writerow([str(label), *row])
    atomic_write_bytes(path, buf.getvalue().encode("utf-8"))


def export_size(rows: int, cols: int, max_label: int = 6) -> tuple[int, int]:
    """Pixel size of an exported heatmap: ~56 px cells when small, shrinking so big matrices stay < ~2000 px."""
    cell = 56 if max(rows, cols) <= 12 else 40 if max(rows, cols) <= 20 else 26 if max(rows, cols) <= 40 else 18
    label_w = 30 + 7 * min(max_label, 12)
    width = label_w + cols * cell + 190
    height = 90 + rows * cell + 70
    return int(min(max(width, 520), 2400)), int(min(max(height, 300), 2000))
