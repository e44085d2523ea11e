"""A heatmap paints each cell in its colour map's colour at its levels, and a repaint builds no colour table.

pyqtgraph rendered a float map with a 256-colour map as an indexed image, its colour table built in Python
(256 ``qRgb`` calls) on every repaint: five maps on every keystroke (edit latency). The map now renders
through ``app.widgets.heatmap.image.MapImage``: the same colours, looked up with numpy."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication

from app.widgets.heatmap.style import colormap
from app.widgets.heatmap.view import HeatmapWidget


def expected_rgb(values: np.ndarray, levels: tuple[float, float], kind: str) -> np.ndarray:
    """pyqtgraph's own mapping: 256 colours over the levels, the index truncated and clipped."""
    lut = colormap(kind).getLookupTable(nPts=256)
    lo, hi = levels
    index = np.clip((values - lo) * (256 / (hi - lo)), 0, 255).astype(np.uint8)
    return lut[index][..., :3]


@pytest.mark.parametrize("kind", ["signed", "weights"])
def test_every_cell_is_painted_in_its_colour(qtbot, kind):
    hm = HeatmapWidget(title="map")
    qtbot.addWidget(hm)
    rng = np.random.default_rng(3)
    values = rng.uniform(-2, 2, (4, 6)) if kind == "signed" else rng.uniform(0, 1, (4, 6))
    values[0, 0] = 1e9  # beyond the levels: clipped to the last colour
    hm.set_data(values, list("abcd"), list("uvwxyz"), kind=kind, levels=(-2.0, 2.0) if kind == "signed" else None)
    hm.resize(360, 260)
    hm.show()
    qtbot.waitExposed(hm)
    QApplication.processEvents()
    image = hm.image.qimage
    assert image.format() != QImage.Format.Format_Indexed8  # no colour table built in Python per repaint
    painted = np.array([[QColor(image.pixel(j, i)).getRgb()[:3] for j in range(6)] for i in range(4)])
    np.testing.assert_array_equal(painted, expected_rgb(values, hm.levels(), kind))
    # what tests and files read stays: the values and the levels
    np.testing.assert_array_equal(hm.image.image, values)
    assert tuple(hm.image.getLevels()) == hm.levels()


def test_an_edit_repaints_with_the_new_colours(qtbot):
    hm = HeatmapWidget(title="map")
    qtbot.addWidget(hm)
    values = np.linspace(-1, 1, 12).reshape(3, 4)
    hm.set_data(values, list("abc"), list("wxyz"), kind="signed", levels=(-1.0, 1.0))
    hm.resize(300, 240)
    hm.show()
    qtbot.waitExposed(hm)
    QApplication.processEvents()
    values = values.copy()
    values[1, 2] = -0.9
    before = hm.paint_count
    hm.set_data(values, list("abc"), list("wxyz"), kind="signed", levels=(-1.0, 1.0))
    qtbot.waitUntil(lambda: hm.paint_count > before)
    painted = QColor(hm.image.qimage.pixel(2, 1)).getRgb()[:3]
    assert painted == tuple(expected_rgb(values, (-1.0, 1.0), "signed")[1, 2])


def test_row_sums_that_stay_the_same_are_not_drawn_again(qtbot):
    """A row of weights always sums to 1: an edit gave the right axis the same "Σ 1.000" ticks, and pyqtgraph threw
    its drawing away and drew them again on every keystroke. Ticks that change are still drawn."""
    hm = HeatmapWidget(title="weights")
    qtbot.addWidget(hm)
    weights = np.full((3, 4), 0.25)
    hm.set_data(weights, list("abc"), list("wxyz"), kind="weights")
    hm.resize(300, 240)
    hm.show()
    qtbot.waitExposed(hm)
    QApplication.processEvents()
    right = hm.plot.getAxis("right")
    right.update()
    QApplication.processEvents()
    drawn = right.picture
    assert drawn is not None
    weights = weights.copy()
    weights[1] = [0.7, 0.1, 0.1, 0.1]  # still sums to 1
    hm.set_data(weights, list("abc"), list("wxyz"), kind="weights")
    QApplication.processEvents()
    assert right.picture is drawn
    weights[2] = [0.5, 0.1, 0.1, 0.1]  # sums to 0.8 now: said
    hm.set_data(weights, list("abc"), list("wxyz"), kind="weights")
    QApplication.processEvents()
    assert [t for _, t in right._tickLevels[0]] == ["Σ 1.000", "Σ 1.000", "Σ 0.800"]


@pytest.mark.parametrize("kind", ["signed", "weights"])
def test_text_colour_follows_the_colour_under_it(kind, monkeypatch):
    """Dark numbers on light cells: the luminance of the map's colour at each value (one interpolation of the
    stops' luminance, not four of their colours through pyqtgraph on each edit)."""
    from app.widgets.heatmap import style

    rng = np.random.default_rng(5)
    image = rng.uniform(-3, 3, (16, 64))
    levels = (-2.0, 2.0) if kind == "signed" else (0.0, 1.0)
    norm = np.clip((image - levels[0]) / (levels[1] - levels[0]), 0, 1)
    rgb = colormap(kind).map(norm.ravel(), mode="float")
    lum = (0.299 * rgb[:, 0] + 0.587 * rgb[:, 1] + 0.114 * rgb[:, 2]).reshape(image.shape)
    calls = []
    monkeypatch.setattr(type(colormap(kind)), "map", lambda *a, **k: calls.append(a) or rgb)
    np.testing.assert_array_equal(style.text_is_dark(image, levels, kind), lum > 0.5)
    assert calls == []
