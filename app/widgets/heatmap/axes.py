"""A heatmap's axis labels: query labels on the left, key labels below, row sums on the right.

Labels are laid out from the cells' size in pixels: narrow key cells first get a smaller font (down to
``MIN_TICK_PT``), then shortened labels ("because" -> "bec…"), and only then does every n-th label show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF

MAX_LABEL_CHARS = 12
MIN_TICK_PT = 7.0  # key labels shrink down to this size in narrow maps before any is shortened or skipped


def elide(label: str, n: int = MAX_LABEL_CHARS) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def update_ticks(plot: Any, font: QFont, rows: Sequence[str], cols: Sequence[str], row_sums: bool,
                 col_tick_pt: float | None) -> tuple[float, int]:
    """Set the left, bottom and right axes' ticks for the plot's current size.

    ``col_tick_pt``: the key-label point size set last time (the font is only set again when it changes).
    Returns the key-label point size now in use and the stride of the query labels (every n-th row labelled).
    """
    fm = QFontMetricsF(font)
    vb = plot.getViewBox()
    width = max(vb.width(), 60.0)
    height = max(vb.height(), 60.0)
    per_col = width / max(len(cols), 1)
    # narrow cells: a smaller key font (down to MIN_TICK_PT) before shortening or skipping any label
    col_font = QFont(font)
    base_pt = col_font.pointSizeF() if col_font.pointSizeF() > 0 else 9.0
    col_fm = fm
    pt = base_pt
    while True:
        col_w = max((col_fm.horizontalAdvance(elide(c)) for c in cols), default=10.0) + 3
        if col_w <= per_col or pt - 1 < MIN_TICK_PT:
            break
        pt -= 1
        col_font.setPointSizeF(pt)
        col_fm = QFontMetricsF(col_font)
    if pt != col_tick_pt:
        plot.getAxis("bottom").setStyle(tickFont=col_font if pt != base_pt else None)
    stride_c = max(1, math.ceil(col_w / per_col))
    col_text = [elide(c) for c in cols]
    if stride_c > 1 and per_col - 5 >= col_fm.horizontalAdvance("ab…"):
        # every key keeps a label: shorten them ("because" -> "bec…") rather than skip some
        col_text = [col_fm.elidedText(c, Qt.TextElideMode.ElideRight, per_col - 5) for c in cols]
        stride_c = 1
    stride_r = max(1, math.ceil((fm.height() + 2) / (height / max(len(rows), 1))))
    plot.getAxis("bottom").setTicks([[(j + 0.5, t) for j, t in enumerate(col_text) if j % stride_c == 0], []])
    plot.getAxis("left").setTicks([[(i + 0.5, elide(r)) for i, r in enumerate(rows) if i % stride_r == 0], []])
    right = plot.getAxis("right")
    right.setStyle(showValues=row_sums)
    if not row_sums:
        right.setTicks([[], []])
    return pt, stride_r


def update_row_sums(plot: Any, values: np.ndarray, blocked: np.ndarray | None, stride: int) -> None:
    """Each row's sum on the right axis ("Σ 1.000"; a row with every key blocked says so)."""
    sums = values.sum(axis=1) if values.size else np.zeros(0)
    ticks = []
    for i, s in enumerate(sums.tolist()):
        if i % stride:
            continue
        if blocked is not None and blocked[i].all():
            ticks.append((i + 0.5, "Σ 0 ⚠ all blocked"))
        else:
            ticks.append((i + 0.5, f"Σ {s:.3f}"))
    plot.getAxis("right").setTicks([ticks, []])
