"""A heatmap's axis labels: query labels on the left, key labels below, row sums on the right.

Labels are laid out from the cells' size in pixels: narrow key cells first get a smaller font (down to
``MIN_TICK_PT``), then shortened labels ("because" -> "bec…"), and only then does every n-th label show. Big cells
(a map alone on a projector) get bigger labels, in proportion (``label_pt``), and so do the axis titles; the zoom
(Ctrl+=, presentation mode) scales them too. In the ordinary layout they keep the axes' default font.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont

from app.widgets.heatmap.cells import font_at

MAX_LABEL_CHARS = 12
MIN_TICK_PT = 7.0  # key labels shrink down to this size in narrow maps before any is shortened or skipped
LABEL_GROWTH = 0.1
"""Points of token label per pixel of cell height once cells outgrow the axes' font: ~30 pt labels beside the
~50 pt numbers of a 3 × 3 map alone on a 1920 × 1080 projector."""
ROOM_SHARE = 0.8  # about the share of a map's height its cells get (the rest: title, key labels, margins)
QUERY_SHARE = 0.25  # query labels grown with the cells take at most this share of the map's width


def elide(label: str, n: int = MAX_LABEL_CHARS) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def label_pt(per_row: float, base_pt: float, scale: float = 1.0) -> float:
    """The size token labels would like beside cells ``per_row`` px high: the axes' font × the zoom, or in
    proportion to the cells when that is larger."""
    return max(base_pt * scale, LABEL_GROWTH * per_row)


def _shrunk(font: QFont, pt: float, texts: Sequence[str], room: float, floor: float) -> float:
    """``pt``, made smaller (not below ``floor``) until the widest of ``texts`` fits ``room`` px."""
    while pt > floor:
        widest = max((font_at(font, pt)[1].horizontalAdvance(t) for t in texts), default=10.0) + 3
        if widest <= room:
            break
        pt = max(floor, min(pt - 1, pt * room / widest))
    return pt


def update_ticks(plot: Any, rows: Sequence[str], cols: Sequence[str], row_sums: bool, scale: float,
                 pts: tuple[float, float] | None, room: float | None = None) -> tuple[float, float, int]:
    """Set the left, bottom and right axes' ticks (and the axis titles' size) for the plot's current size.

    ``scale``: the zoom (the map's font over the theme's); ``pts``: the key and query label sizes set last time
    (fonts are only set again when they change); ``room``: the whole map's height in px, which the label size
    follows (not the plot's, which the labels themselves shrink: bigger labels, smaller plot, smaller labels … never
    settled). Returns the key and query label point sizes now in use and the
    stride of the query labels (every n-th row labelled).
    """
    axis_font = plot.getAxis("left").font()  # what the axes paint with when given no font of their own
    base_pt = axis_font.pointSizeF() if axis_font.pointSizeF() > 0 else 9.0
    vb = plot.getViewBox()
    width = max(vb.width(), 60.0)
    height = max(vb.height(), 60.0)
    per_col = width / max(len(cols), 1)
    per_row = height / max(len(rows), 1)
    want = label_pt(ROOM_SHARE * room / max(len(rows), 1) if room else per_row, base_pt, scale)
    # narrow cells: a smaller key font (down to MIN_TICK_PT) before shortening or skipping any label
    col_pt = _shrunk(axis_font, want, [elide(c) for c in cols], per_col, MIN_TICK_PT)
    col_fm = font_at(axis_font, col_pt)[1]
    col_w = max((col_fm.horizontalAdvance(elide(c)) for c in cols), default=10.0) + 3
    row_pt = _shrunk(axis_font, want, [elide(r) for r in rows], QUERY_SHARE * width, min(want, base_pt * scale))
    if (col_pt, row_pt) != pts:
        plot.getAxis("bottom").setStyle(tickFont=None if col_pt == base_pt else font_at(axis_font, col_pt)[0])
        row_font = None if row_pt == base_pt else font_at(axis_font, row_pt)[0]
        for name in ("left", "right"):
            plot.getAxis(name).setStyle(tickFont=row_font)
        set_axis_title_pt(plot, None if want == base_pt else want)
    stride_c = max(1, math.ceil(col_w / per_col))
    col_text = [elide(c) for c in cols]
    if stride_c > 1 and per_col - 5 >= col_fm.horizontalAdvance("ab…"):
        # every key keeps a label: shorten them ("because" -> "bec…") rather than skip some
        col_text = [col_fm.elidedText(c, Qt.TextElideMode.ElideRight, per_col - 5) for c in cols]
        stride_c = 1
    stride_r = max(1, math.ceil((font_at(axis_font, row_pt)[1].height() + 2) / per_row))
    plot.getAxis("bottom").setTicks([[(j + 0.5, t) for j, t in enumerate(col_text) if j % stride_c == 0], []])
    plot.getAxis("left").setTicks([[(i + 0.5, elide(r)) for i, r in enumerate(rows) if i % stride_r == 0], []])
    right = plot.getAxis("right")
    right.setStyle(showValues=row_sums)
    if not row_sums:
        right.setTicks([[], []])
    return col_pt, row_pt, stride_r


def set_axis_title_pt(plot: Any, pt: float | None) -> None:
    """The axis titles ("query", "key") at ``pt``, or (None) in the axes' default font; their colour is kept."""
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        style = dict(axis.labelStyle)
        if pt is None:
            style.pop("font-size", None)
        else:
            style["font-size"] = f"{pt:.1f}pt"
        if style != axis.labelStyle:
            axis.labelStyle = style
            if axis.labelText:
                axis.setLabel(axis.labelText, **style)


def update_row_sums(plot: Any, values: np.ndarray, blocked: np.ndarray | None, stride: int) -> None:
    """Each row's sum on the right axis ("Σ 1.000"; a row with every key blocked says so)."""
    sums = np.nansum(values, axis=1) if values.size else np.zeros(0)  # NaN: a cell with no value (not 0.00)
    ticks = []
    for i, s in enumerate(sums.tolist()):
        if i % stride:
            continue
        if blocked is not None and blocked[i].all():
            ticks.append((i + 0.5, "Σ 0 ⚠ all blocked"))
        else:
            ticks.append((i + 0.5, f"Σ {s:.3f}"))
    right = plot.getAxis("right")
    if getattr(right, "_tickLevels", None) != [ticks, []]:  # a row of weights stays "Σ 1.000" across edits: its
        right.setTicks([ticks, []])  # drawing is kept (setTicks throws it away and draws again)
