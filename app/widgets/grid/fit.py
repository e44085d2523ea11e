"""A grid of maps shown whole in a view narrower than the grid needs: laid out at its minimum width, scaled down.

Why: a ``GraphicsLayoutWidget`` lays its items out to the view's width, but never below the items' minimum widths;
narrower than that, the layout ran past the view's right edge and was cut there. On the Training tab at 1280 px with
the Learn dock open (a first launch), the head grid's column is ~290 px, four heads and the colour bar need ~343, and
the colour bar lost its numbers. Scaled to fit, everything stays in view, its text a little smaller (0.85 x there).
Wide enough again, the grid is laid out 1:1 as before. Not below ``MIN_SCALE``: sixteen heads in ~380 px (1024 px)
came out at 0.4 x, every number unreadable, so a grid that much too wide is laid out 1:1 and cut at the edge, as
before (it loses its last heads; more room: a wider window, or the Learn dock closed).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRectF

MIN_SCALE = 0.7
"""The smallest scale a grid is drawn at to fit (its 8 pt numbers at ~5.6 pt); below, it is cut at the edge."""


def fit_to_view(view: Any) -> float:
    """Fit ``view``'s (a ``pg.GraphicsLayoutWidget``) layout into its width; return the scale shown (1.0: none)."""
    width, height = view.width(), view.height()
    need = view.ci.minimumWidth()
    if width <= 0 or height <= 0:
        return 1.0
    scale = width / need if need > width + 0.5 else 1.0
    if MIN_SCALE <= scale < 1.0:
        view.setRange(QRectF(0, 0, need, height / scale), padding=0)  # laid out at ``need``, drawn ``scale`` x
        return scale
    if not view.autoPixelRange:  # wide enough again: one scene unit per pixel, as pyqtgraph has it by default
        view.autoPixelRange = True
        view.setRange(QRectF(0, 0, width, height), padding=0, disableAutoPixel=False)
    return 1.0
