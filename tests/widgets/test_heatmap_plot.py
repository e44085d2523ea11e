"""A heatmap's plot and colour bar without pyqtgraph's menus (launch): no menu is built, the bar shows the
colour map from the low level (bottom) to the high one (top) and hands its map and levels to the image, and the
axes show the labels given, unscaled."""

from __future__ import annotations

import numpy as np
from axis_drawing import drawn_labels
from PySide6.QtGui import QColor, QFontMetricsF
from PySide6.QtWidgets import QApplication, QMenu
from qt_settle import settled

from app.widgets.heatmap.style import colormap
from app.widgets.heatmap.view import HeatmapWidget


def test_building_a_heatmap_builds_no_plot_menu(qtbot):
    from pyqtgraph.graphicsItems.ViewBox.ViewBoxMenu import ViewBoxMenu

    first = HeatmapWidget(title="map")  # (any menu made once per process is made by now)
    qtbot.addWidget(first)
    before = {id(w) for w in QApplication.allWidgets()}
    hm = HeatmapWidget(title="another")
    qtbot.addWidget(hm)
    made = [w for w in QApplication.allWidgets() if isinstance(w, QMenu) and id(w) not in before]
    # a PlotItem-based map made four: the plot's and the colour bar's "Plot Options" and their view boxes' menus
    assert [m for m in made if isinstance(m, ViewBoxMenu) or m.title() == "Plot Options"] == []
    assert hm.plot.getViewBox().menu is None and hm.colorbar.getViewBox().menu is None


def test_the_colour_bar_shows_its_map_low_to_high_and_colours_the_image(qtbot):
    hm = HeatmapWidget(title="map")
    qtbot.addWidget(hm)
    values = np.array([[-3.0, 0.0, 3.0]])
    hm.set_data(values, ["q"], ["a", "b", "c"], kind="signed", levels=(-3.0, 3.0))
    assert hm.colorbar.levels() == (-3.0, 3.0) and tuple(hm.image.getLevels()) == (-3.0, 3.0)
    assert hm.colorbar.colorMap() is colormap("signed") and hm.image.getColorMap() is colormap("signed")
    hm.set_data(values.clip(0, 1), ["q"], ["a", "b", "c"], kind="weights")
    assert hm.colorbar.colorMap() is colormap("weights") and tuple(hm.image.getLevels()) == (0.0, 1.0)
    hm.resize(360, 260)
    hm.show()
    qtbot.waitExposed(hm)
    QApplication.processEvents()
    image = hm.grab().toImage()
    bar = hm.colorbar.bar
    top = hm.graphics.mapFromScene(bar.mapToScene(bar.boundingRect().center().x(), 1.0))
    bottom = hm.graphics.mapFromScene(bar.mapToScene(bar.boundingRect().center().x(), 255.0))
    lut = colormap("weights").getLookupTable(nPts=256)
    got_low = QColor(image.pixel(hm.graphics.mapTo(hm, top))).getRgb()[:3]
    got_high = QColor(image.pixel(hm.graphics.mapTo(hm, bottom))).getRgb()[:3]
    # the bar's row 0 (level 0) is at the bottom of the view (y up): near y=1 the lowest colours, near 255 the highest
    assert np.abs(np.array(got_low) - lut[1][:3]).max() <= 12
    assert np.abs(np.array(got_high) - lut[255][:3]).max() <= 12


def test_a_new_range_rewrites_no_axis_title(qtbot, monkeypatch):
    """A map's axes carry no SI prefix: with one, every change of an axis's range (a new shape, new levels) wrote
    its title's HTML again, ~90 times while a map was built, though no title changed."""
    import pyqtgraph as pg

    hm = HeatmapWidget(title="map")
    qtbot.addWidget(hm)
    hm.set_data(np.ones((2, 3)), ["a", "b"], ["x", "y", "z"], kind="signed")
    written: list[object] = []
    original = pg.AxisItem._updateLabel
    monkeypatch.setattr(pg.AxisItem, "_updateLabel", lambda axis: (written.append(axis), original(axis)))
    hm.set_data(np.full((4, 5), 0.0004), list("abcd"), list("vwxyz"), kind="signed")  # new shape, new levels
    assert written == []
    axis = hm.colorbar.getAxis("right")
    assert axis.range == [-0.0004, 0.0004] and axis.autoSIPrefixScale == 1.0  # the levels, as they are


def test_a_short_colour_bar_draws_only_the_level_labels_it_has_room_for(qtbot):
    """A 40 px bar (the Model tab's picked head at 1024 x 640) drew 0, 0.2 … 1.0 on top of each other: pyqtgraph
    always draws its first level of ticks. Now no two labels overlap, the ends are named while two lines fit, and a
    tall bar keeps every label it had."""
    hm = HeatmapWidget(title="map")
    qtbot.addWidget(hm)
    hm.set_data(np.eye(6) * 0.9, list("abcdef"), list("uvwxyz"), kind="weights")
    hm.show()
    axis = hm.colorbar.getAxis("right")
    hm.resize(320, 400)
    qtbot.waitUntil(lambda: len(drawn_labels(axis)) >= 6, timeout=5_000)  # 0, 0.2 … 1.0: room for all
    for height in (150, 110, 95, 80):
        hm.resize(320, height)
        settled(qtbot)
        QApplication.processEvents()
        labels = drawn_labels(axis)
        rects = [rect for _t, rect in labels]
        assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:]), (height, labels)
        if axis.geometry().height() >= 1.2 * QFontMetricsF(axis.font()).height():  # room for two: both ends
            assert {float(t) for t, _r in labels} >= {0.0, 1.0}, (height, labels)
