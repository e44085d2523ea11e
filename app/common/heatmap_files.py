"""A heatmap's numbers as a file, without Qt: the formats an export accepts, validation, the CSV, atomic writes
and the export size of an image. The Qt renderers (``app.widgets.rendering``) and the CLI both build on it."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.common.titles import ExportContext, full_title, plain_title, scale_text

READ_BACK = "numpy.genfromtxt(path, comments='#', delimiter=',')"
"""The one call that reads every CSV the app writes: the ``#`` lines are skipped, the numbers come back."""

FORMATS = (".png", ".svg", ".pdf", ".csv")
IMAGE_FORMATS = (".png", ".svg", ".pdf")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    from attention_core.fileio import atomic_write

    atomic_write(path, lambda fh: fh.write(data))  # with the umask's mode, as every file the app writes


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


def context_comments(title: str, context: ExportContext | str | None = None) -> list[str]:
    """The ``#`` lines that open a CSV: what it shows and in which setting, from the same ``ExportContext`` an
    image's title names (view, preset or "edited", mode, mask, scale; for training task, step and accuracy),
    each number exact (``repr``). Every CSV the app writes starts with them."""
    lines = [f"# Attention Playground: {full_title(title, context)}"]
    if plain_title(title):
        lines.append(f"# view: {plain_title(title)}")
    if isinstance(context, str):
        if plain_title(context):
            lines.append(f"# setting: {plain_title(context)}")
        return lines
    if context is None:
        return lines
    c = context
    lines += [f"# {key}: {plain_title(value)}" for key, value in (("preset", c.preset), ("mode", c.mode),
                                                                   ("mask", c.mask)) if value is not None]
    if c.scale is not None:
        lines.append(f"# scale: {float(c.scale)!r} ({scale_text(c.scale, c.d_k)})")
    lines += [f"# {key}: {plain_title(words)}" for key, words in c.options()]  # rotary, window, soft-cap, …
    if c.task is not None:
        lines.append(f"# task: {plain_title(c.task)}")
    if c.step is not None:
        lines.append(f"# step: {c.step}" + (f" of {c.total_steps}" if c.total_steps is not None else ""))
    if c.accuracy is not None:
        when = f" (measured at step {c.accuracy_step})" if c.accuracy_step not in (None, c.step) else ""
        lines.append(f"# test sequence accuracy: {float(c.accuracy)!r}{when}")
    if c.causal is not None:
        lines.append(f"# causal mask in training: {'yes' if c.causal else 'no'}")
    if c.positional is not None:
        lines.append(f"# positions: {plain_title(c.positional)}")
    if c.attention_dropout is not None:
        lines.append(f"# attention dropout: {float(c.attention_dropout)!r}")
    return lines


def labels_comment(what: str, labels: Sequence[str]) -> str:
    """A ``#`` line naming the rows or columns, as a JSON list (any token, commas and ``#`` included, reads back
    exactly with ``json.loads`` after the colon)."""
    return f"# {what}: {json.dumps([str(x) for x in labels], ensure_ascii=False)}"


def write_heatmap_csv(path: Path, values: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str],
                      blocked: np.ndarray | None, kind: str, title: str = "",
                      context: ExportContext | str | None = None, row_title: str = "", col_title: str = "") -> None:
    """``#`` lines first (``context_comments``, then the row and column labels as JSON lists), then the numbers
    only: one line per row (query), one column per key, in full precision (``repr``); blocked cells of scores as
    ``-inf``. ``READ_BACK`` returns exactly the matrix shown."""
    buf = io.StringIO()
    for line in context_comments(title, context):
        buf.write(line + "\n")
    buf.write(labels_comment(f"rows ({row_title or 'query'})", row_labels) + "\n")
    buf.write(labels_comment(f"columns ({col_title or 'key'})", col_labels) + "\n")
    buf.write(f"# numbers: {len(row_labels)} rows x {len(col_labels)} columns; read them with {READ_BACK}\n")
    w = csv.writer(buf, lineterminator="\n")
    for i in range(len(row_labels)):
        row = []
        for j, v in enumerate(values[i].tolist()):
            if blocked is not None and blocked[i, j] and kind != "weights" and math.isfinite(v):
                row.append("-inf")  # a blocked score is -inf whatever number sits under it
            else:
                row.append(repr(float(v)))
        w.writerow(row)
    atomic_write_bytes(path, buf.getvalue().encode("utf-8"))


def export_size(rows: int, cols: int, max_label: int = 6) -> tuple[int, int]:
    """Pixel size of an exported heatmap: ~56 px cells when small, shrinking so big matrices stay < ~2000 px."""
    cell = 56 if max(rows, cols) <= 12 else 40 if max(rows, cols) <= 20 else 26 if max(rows, cols) <= 40 else 18
    label_w = 30 + 7 * min(max_label, 12)
    width = label_w + cols * cell + 190
    height = 90 + rows * cell + 70
    return int(min(max(width, 520), 2400)), int(min(max(height, 300), 2000))
