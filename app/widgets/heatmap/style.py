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
from PySide6.QtGui import QFont, QFontMetricsF

from app.common.levels import MIN_LEVEL
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
    """Per cell: True where the cell's colour is light, so its number is drawn in dark text.

    The luminance of the colour the map gives each value: the maps interpolate their stops linearly, so this is
    the stops' luminance interpolated once (not their three colours through ``ColorMap.map``: every edit asks)."""
    lo, hi = levels
    norm = np.clip((image - lo) / (hi - lo), 0, 1)
    pos, lum = _stop_luminance(kind)
    return np.asarray(np.interp(norm, pos, lum) > 0.5)


_LUMINANCE: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _stop_luminance(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The positions of ``kind``'s colour stops and the luminance (Rec. 601) of each."""
    if kind not in _LUMINANCE:
        pos, rgb = colormap(kind).getStops(pg.ColorMap.FLOAT)
        _LUMINANCE[kind] = (np.asarray(pos), 0.299 * rgb[:, 0] + 0.587 * rgb[:, 1] + 0.114 * rgb[:, 2])
    return _LUMINANCE[kind]


THEME_FONT_PT = 10.0
"""The widgets' font size in the theme's style sheets (``resources/styles/*.qss``): a map whose font is larger is
zoomed (Ctrl+=, presentation mode: ``app.shell.presentation``)."""


def text_scale(font_pt: float) -> float:
    """How much a map's numbers and labels are zoomed, from its font's size (never below 1: a smaller desktop
    font leaves them as they are)."""
    return max(1.0, font_pt / THEME_FONT_PT) if font_pt > 0 else 1.0


def title_color(dark: bool) -> str:
    return colors_for(dark).text


def apply_plot_theme(graphics: Any, plot: Any, colorbar: Any, dark: bool) -> None:
    """Background, axes, title and colour bar for the light or dark theme."""
    c = colors_for(dark)
    style_view(graphics, c)
    style_plot(plot, c)
    style_plot(colorbar, c)


def elided_title(title: str, font: QFont, room: float) -> str:
    """``title`` cut with "…" to ``room`` px in ``font``, or whole when it fits or when there is no room to speak of
    (40 px or less: a plot not laid out yet). The one rule of the maps' and plots' titles; the caller puts the whole
    title in a tooltip when this differs from it."""
    return title if room <= 40 else QFontMetricsF(font).elidedText(title, Qt.TextElideMode.ElideRight, room)


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
    axis._range_note = (note, dark)
    if not getattr(axis, "_fits_note", False):  # a shorter bar (a smaller map) fits the note again
        axis._fits_note = True
        axis.geometryChanged.connect(lambda a=axis: _refit_range_note(a))
    _fit_range_note(axis)


def _refit_range_note(axis: Any) -> None:
    """The colour bar's new height: fit the note again. In a teardown (PySide's exit hook deletes what is left in
    no fixed order) the C++ axis can still report a geometry while its Python side or its title label is gone
    ("Internal C++ object (AxisItem) already deleted" was printed at exit): nothing is left to fit then."""
    import shiboken6

    if shiboken6.isValid(axis) and shiboken6.isValid(axis.label):
        _fit_range_note(axis)


NOTE_POINTS = (8.0, 7.0, 6.0)
"""The sizes a colour bar's note may take, largest first: the first that fits the bar's height is used."""


def _fit_range_note(axis: Any) -> None:
    """Write the axis's note as large as fits along it (``NOTE_POINTS``), shortened with "…" where even the
    smallest does not (it was clipped mid-word at the ends of a short bar)."""
    from PySide6.QtGui import QFontMetricsF

    note, dark = axis._range_note
    if note:
        room = max(axis.geometry().height() - 4.0, 0.0)
        font = axis.label.font()
        for pt in NOTE_POINTS:
            font.setPointSizeF(pt)
            fm = QFontMetricsF(font)
            if fm.horizontalAdvance(note) <= room:
                break
        text = note if fm.horizontalAdvance(note) <= room else fm.elidedText(note, Qt.TextElideMode.ElideRight, room)
        if (text, pt, dark) != getattr(axis, "_note_shown", None):
            axis._note_shown = (text, pt, dark)
            axis.label.setFont(font)  # the size in the item's font, not in the label's HTML: measurable
            axis.setLabel(text, color=colors_for(dark).text)
        axis.setStyle(showValues=False)
    else:
        axis._note_shown = None
    axis.showLabel(bool(note))
