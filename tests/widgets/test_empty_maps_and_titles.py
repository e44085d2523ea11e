"""The Model tab before a model is open: its layer × head mosaic and its maps are empty, and their axes said
-0.3 … 1.3 and 0.1 … 0.9, numbers of nothing. They draw no numbers until maps arrive, then the layers' and heads'
names or the tokens. A narrow map's title stays inside it."""

from __future__ import annotations

import numpy as np
from axis_drawing import drawn_labels

from app.widgets.grid.mosaic import MosaicGrid
from app.widgets.heatmap.view import HeatmapWidget


def drawn_texts(axis) -> list[str]:
    """The strings the axis draws at its current size (pyqtgraph's own drawing plan)."""
    return [text for text, _rect in drawn_labels(axis)]


def shown(qtbot, widget, width: int, height: int):
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_an_empty_mosaic_draws_no_numbers_and_a_filled_one_names_layers_and_heads(qtbot):
    mosaic = shown(qtbot, MosaicGrid(), 600, 400)
    for name in ("left", "top"):
        assert drawn_texts(mosaic.plot.getAxis(name)) == [], name
    weights = np.full((2, 3, 4, 4), 0.25)
    mosaic.set_maps(weights, list("abcd"), causal=False)
    # (once laid out again: under load the axes may still have their old size for a while)
    qtbot.waitUntil(lambda: drawn_texts(mosaic.plot.getAxis("left")) == ["L0", "L1"]
                    and drawn_texts(mosaic.plot.getAxis("top")) == ["H0", "H1", "H2"], timeout=5_000)


def test_an_empty_heatmap_draws_no_numbers_along_its_sides(qtbot):
    hm = shown(qtbot, HeatmapWidget(title="Pick a head in the score grid"), 300, 240)
    for name in ("left", "bottom"):
        assert drawn_texts(hm.plot.getAxis(name)) == [], name
    hm.set_data(np.eye(3), list("abc"), list("xyz"), kind="weights")
    qtbot.waitUntil(lambda: drawn_texts(hm.plot.getAxis("left")) == list("abc"), timeout=5_000)


def test_a_narrow_maps_title_stays_inside_it(qtbot):
    """A title is centred over the cells: with labels on the left and the colour bar on the right the cells' centre
    is off the widget's, and a title elided to the widget's width ran past its left edge."""
    hm = HeatmapWidget(title="Pick a head in the score grid to see its pattern here")
    hm.set_data(np.eye(3), ["a long token", "b", "c"], list("xyz"), kind="weights")
    shown(qtbot, hm, 220, 200)

    def inside() -> bool:
        text = hm.plot.titleLabel.item.sceneBoundingRect()
        return text.left() >= 0 and text.right() <= hm.graphics.width()

    qtbot.waitUntil(inside, timeout=5_000)
    assert hm.graphics.toolTip() == hm.title()  # the whole title is a hover away
