"""Presentation mode for the back of the room: on a 1920 × 1080 projector a 3 × 3 map shown alone
(F11, then a double-click on the map) has numbers the last row can read, measured from the rendered pixels; the
token labels grow with them; and zooming in never leaves a map's cells smaller than its numbers.

Before: the numbers stayed 11 pt (~11 px digits) however big the cells were, the token labels kept the default
9 pt, and at the highest zoom the Steps maps shrank until their numbers were dropped."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFontMetricsF, QImage
from qt_settle import settled

from app.shell.presentation import ZOOM_STOP
from app.widgets.settings import ZOOM_RANGE

PROJECTOR = (1920, 1080)


def present_at(window, qtbot, size=PROJECTOR) -> None:
    """F11, on a screen of ``size``: offscreen, full screen is the virtual screen's size, so the window is given the
    projector's size once presenting."""
    window.load_preset("cat-sat-mat")  # 3 queries × 3 keys
    window.presenter.set_presenting(True)
    settled(qtbot, window)
    window.setGeometry(0, 0, *size)
    settled(qtbot, window)


def cell_rect(hm, i: int, j: int) -> QRectF:
    """Cell (i, j) in the pixels of ``hm.graphics.viewport()``."""
    vb = hm.plot.getViewBox()
    top_left = hm.graphics.mapFromScene(vb.mapViewToScene(QPointF(j, i)))
    bottom_right = hm.graphics.mapFromScene(vb.mapViewToScene(QPointF(j + 1, i + 1)))
    return QRectF(QPointF(top_left), QPointF(bottom_right)).normalized()


def glyph_height(hm, i: int, j: int) -> int:
    """The height in pixels of the text painted in cell (i, j): the rows holding pixels far from the cell's own
    colour (its most common one), measured in a grab of the map."""
    image = hm.graphics.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    w, h = image.width(), image.height()
    pixels = np.frombuffer(image.constBits(), dtype=np.uint8, count=image.bytesPerLine() * h)
    rgb = pixels.reshape(h, image.bytesPerLine() // 4, 4)[:, :w, :3].astype(int)
    r = cell_rect(hm, i, j).adjusted(4, 4, -4, -4).toRect()
    cell = rgb[r.top():r.bottom() + 1, r.left():r.right() + 1]
    colours, counts = np.unique(cell.reshape(-1, 3), axis=0, return_counts=True)
    background = colours[np.argmax(counts)]
    text = np.abs(cell - background).sum(axis=2) > 90
    rows = np.flatnonzero(text.any(axis=1))
    return int(rows[-1] - rows[0] + 1) if rows.size else 0


def test_a_3x3_map_alone_on_a_projector_has_numbers_48_px_tall(window, qtbot):
    present_at(window, qtbot)
    p = window.presenter
    p.show_alone("steps", "weights")
    settled(qtbot, window)
    hm = p.solo.heatmap
    assert hm.values().shape == (3, 3)
    assert cell_rect(hm, 0, 0).height() > 200  # the map fills the screen
    heights = [glyph_height(hm, i, j) for i in range(3) for j in range(3)]
    assert min(heights) >= 48, heights
    # the token labels grow with the numbers: at least twice the 9 pt they had (digits ~11 px, labels ~9 px)
    for name in ("left", "bottom"):
        font = hm.plot.getAxis(name).style["tickFont"]
        assert font is not None and QFontMetricsF(font).capHeight() >= 20, name
    assert "font-size" in hm.plot.getAxis("bottom").labelStyle  # the axis title ("key") too


def test_the_ordinary_layout_keeps_its_sizes(window, qtbot):
    """At the window's usual size and zoom nothing changes: numbers up to 11 pt (about 0.38 of a smaller cell's
    height), the axes' default font."""
    window.load_preset("cat-sat-mat")
    settled(qtbot, window)
    for hm in window.pipeline.heatmaps.values():
        r = cell_rect(hm, 0, 0)
        assert r.height() < 64
        font = hm.overlay.number_font(r.width(), r.height())
        assert font is not None and abs(font.pointSizeF() - min(11.0, 0.38 * r.height())) < 0.05
        for name in ("left", "bottom", "right"):
            assert hm.plot.getAxis(name).style["tickFont"] is None
        assert "font-size" not in hm.plot.getAxis("bottom").labelStyle


def full_size_numbers(hm, factor: float) -> bool:
    """Whether ``hm``'s cells hold its numbers at the zoom's size, 11 pt × ``factor``, or larger (not shrunk to fit
    smaller cells, nor dropped)."""
    r = cell_rect(hm, 0, 0)
    font = hm.overlay.number_font(r.width(), r.height())
    return (font is not None and font.pointSizeF() >= 11.0 * factor - 0.01
            and QFontMetricsF(font).height() <= r.height())


def test_zooming_in_never_makes_cells_smaller_than_their_numbers(window, qtbot):
    """Ctrl+= on the projector, all five steps shown: the numbers grow with the zoom, and where one more step would
    leave a map's cells too small for them, zooming in stops there and says so."""
    present_at(window, qtbot)
    p = window.presenter
    zooms = []
    while (not zooms or p.zoom != zooms[-1]) and len(zooms) < 12:
        zooms.append(p.zoom)
        for name, hm in window.pipeline.heatmaps.items():
            assert full_size_numbers(hm, p.factor()), (p.zoom, name)
        p.zoom_in_action.trigger()  # Ctrl+=
        settled(qtbot, window)
    assert zooms[-1] > 1.5, zooms  # the words did get bigger
    if zooms[-1] < ZOOM_RANGE[1]:
        assert window.statusBar().currentMessage() == ZOOM_STOP
    # one map alone has the room for every zoom up to the largest
    p.show_alone("steps", "weights")
    settled(qtbot, window)
    for _ in range(12):
        before = p.zoom
        p.zoom_in_action.trigger()
        settled(qtbot, window)
        assert p.zoom > before or p.zoom == ZOOM_RANGE[1], (before, window.statusBar().currentMessage())
        assert full_size_numbers(p.solo.heatmap, p.factor()), p.zoom
