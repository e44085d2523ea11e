"""Narrow windows: the head grid's titles and the accuracy legend shorten instead of running into each other."""

from __future__ import annotations

from qt_settle import settled

from app.training.qt.plots import NARROW_NAMES, SERIES, TrainingPlots
from app.widgets.grid.head_grid import HeadGrid


def legend_names(plots: TrainingPlots) -> list[str]:
    return [label.text for _sample, label in plots.acc_legend.items]


def test_accuracy_legend_fits_inside_a_narrow_plot_and_widens_back(qtbot):
    plots = TrainingPlots()
    qtbot.addWidget(plots)
    plots.resize(330, 290)
    plots.show()
    qtbot.waitExposed(plots)
    settled(qtbot)
    assert legend_names(plots) == list(NARROW_NAMES.values())
    legend = plots.acc_legend.sceneBoundingRect()
    frame = plots.acc_plot.sceneBoundingRect()
    assert frame.left() <= legend.left() and legend.right() <= frame.right() + 1
    plots.resize(400, 290)
    settled(qtbot)
    assert legend_names(plots) == [SERIES[k][0] for k in NARROW_NAMES]
    legend = plots.acc_legend.sceneBoundingRect()
    assert plots.acc_plot.sceneBoundingRect().left() <= legend.left()


def test_head_titles_shorten_when_the_maps_are_narrow(qtbot):
    grid = HeadGrid()
    qtbot.addWidget(grid)
    grid.resize(900, 500)
    grid.set_shape(2, 4)
    grid.show()
    qtbot.waitExposed(grid)
    assert grid.map_item(1, 2).titleLabel.text == "layer 2 · head 3"
    grid.resize(420, 500)
    settled(qtbot)
    assert grid.map_item(1, 2).titleLabel.text == "L2 · H3"
    grid.set_disabled_heads({(1, 2)})  # a switched-off head keeps the short title, in red
    assert "L2 · H3" in grid.map_item(1, 2).titleLabel.text and "c00000" in grid.map_item(1, 2).titleLabel.text
    grid.resize(900, 500)
    settled(qtbot)
    assert "layer 2 · head 3" in grid.map_item(1, 2).titleLabel.text


def test_narrow_heatmap_shrinks_key_labels_before_dropping_any(qtbot):
    import numpy as np

    from app.widgets.heatmap.axes import MIN_TICK_PT
    from app.widgets.heatmap.view import HeatmapWidget

    hm = HeatmapWidget(title="scaled")
    qtbot.addWidget(hm)
    hm.resize(480, 300)
    hm.set_data(np.arange(9.0).reshape(3, 3), ["cat", "sat", "mat"], ["cat", "sat", "mat"], kind="signed")
    hm.show()
    qtbot.waitExposed(hm)
    settled(qtbot)
    axis = hm.plot.getAxis("bottom")
    assert axis.style["tickFont"] is None  # room enough: the normal font
    assert [t for _, t in axis._tickLevels[0]] == ["cat", "sat", "mat"]
    hm.resize(190, 300)  # cells ~23 px wide: "sat" at the normal size does not fit, at 7-8 pt it does
    settled(qtbot)
    font = axis.style["tickFont"]
    assert font is not None and MIN_TICK_PT <= font.pointSizeF() < hm.font().pointSizeF()
    assert [t for _, t in axis._tickLevels[0]] == ["cat", "sat", "mat"]  # all three keys keep their label
