"""A heatmap's colours: the colour maps, honest fixed levels, the light/dark theme of its plot and title.

- ``kind="weights"`` is always [0, 1] on a sequential map; ``kind="signed"`` is symmetric around 0 (±max|v| over
  the finite values) on a diverging map, so white always means 0.
- Both maps are Peter Kovesi's perceptually uniform colorcet maps, as pyqtgraph ships them: equal steps in value
  look like equal steps in colour. CET-L18 (white → yellow → red) changes in lightness only in one direction, so
  it reads in greyscale and for every kind of colour blindness; CET-D1A runs blue → white → red, the two hues a
  red-green colour-blind viewer still tells apart (tests/widgets/test_theme.py simulates it). The maps do not change
  with the theme: a colour means the same number on screen, in an export and in a screenshot.
- A view may pass levels decided by its model instead (the Steps view: ``app.playground.model.colour_range`` shares one
  range across ①–③ and keeps it stable across edits); ``levels_for`` is the default for every other map.
- The plot around the map (background, axes, colour bar, title) follows the theme through ``app.widgets.theme``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.common.levels import MIN_LEVEL
from app.widgets.theme import AXES as AXES  # re-exported: app/widgets/heatmap/view.py lays out every axis
from app.widgets.theme import colors_for, style_plot, style_view

KINDS = ("signed", "weights")
_CMAP_NAMES = {"signed": "CET-D1A", "weights": "CET-L18"}
_CMAPS: dict[str, Any] = {}


def colormap(kind: str) -> Any:
    """The pyqtgraph ColorMap for a kind ("signed": diverging blue-white-red; "weights": white-orange-red)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind not in _CMAPS:
        _CMAPS[kind] = pg.colormap.get(_CMAP_NAMES[kind])
    return _CMAPS[kind]




def levels_for(values: np.ndarray, kind: str) -> tuple[float, float]:
    """Colour levels: [0, 1] for weights; symmetric +-max|v| (finite values only) for signed data."""
    if kind == "weights":
        return 0.0, 1.0
    finite = values[np.isfinite(values)]
    m = float(np.max(np.abs(finite))) if finite.size else 0.0
    # a range of tiny (e.g. subnormal 1e-320) values overflows pyqtgraph's 255 / range: such maps read as zero
    # (found by the window monkey test)
    if m < MIN_LEVEL:
        m = 1.0
    return -m, m


def text_is_dark(image: np.ndarray, levels: tuple[float, float], kind: str) -> np.ndarray:
    """Per cell: True where the cell's colour is light, so its number is drawn in dark text."""
    lo, hi = levels
    norm = (image - lo) / (hi - lo)
    rgb = colormap(kind).map(np.clip(norm, 0, 1).ravel(), mode="float")
    lum = (0.299 * rgb[:, 0] + 0.587 * rgb[:, 1] + 0.114 * rgb[:, 2]).reshape(image.shape)
    return np.asarray(lum > 0.5)


def title_color(dark: bool) -> str:
    return colors_for(dark).text


def apply_plot_theme(graphics: Any, plot: Any, colorbar: Any, dark: bool) -> None:
    """Background, axes, title and colour bar for the light or dark theme."""
    c = colors_for(dark)
    style_view(graphics, c)
    style_plot(plot, c)
    style_plot(colorbar, c)


def let_title_overflow(label: Any) -> None:
    """pyqtgraph makes a title's text width the plot's minimum width, so a long title in a narrow widget pushes
    the colour bar out of view. Keep the height rule, drop the width rule: the title may overflow instead."""

    def update_min() -> None:
        bounds = label.itemRect()
        label.setMinimumWidth(0)
        label.setMinimumHeight(bounds.height())
        size = {Qt.SizeHint.MinimumSize: (0, bounds.height()),
                Qt.SizeHint.PreferredSize: (bounds.width(), bounds.height()),
                Qt.SizeHint.MaximumSize: (-1, -1), Qt.SizeHint.MinimumDescent: (0, 0)}
        label._sizeHint = size
        label.updateGeometry()

    label.updateMin = update_min


def show_range_note(colorbar: Any, note: str, dark: bool) -> None:
    """Write ``note`` (e.g. "shared ①②③ ±2", "⚠ range changed") along a colour bar, on the side away
    from its numbers; "" hides it. The model words the note; this only places it."""
    axis = colorbar.getAxis("left")
    if note:
        axis.setLabel(note, color=colors_for(dark).text, **{"font-size": "8pt"})
        axis.setStyle(showValues=False)
    axis.showLabel(bool(note))
