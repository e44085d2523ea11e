"""A head grid in a column narrower than its maps and colour bar need (the Training tab at 1280 px with the Learn
dock open: ~290 px for ~343) ran past the view's right edge, and the colour bar's numbers were cut off. Now it is
drawn whole, scaled down; wide enough again, 1:1; much too narrow, cut as before rather than unreadably small. The
mouse still finds the head under it."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QApplication

from app.widgets.grid.fit import MIN_SCALE
from app.widgets.grid.head_grid import HeadGrid


def _grid(qtbot, heads: int, width: int, height: int = 420) -> HeadGrid:
    g = HeadGrid()
    qtbot.addWidget(g)
    n = 6
    g.set_maps([np.full((heads, n, n), 1.0 / n)] * 2, list("abcdef"), seq_len=3, causal=True)
    g.resize(width, height)
    g.show()
    qtbot.waitExposed(g)
    QApplication.processEvents()
    return g


def _right_edge_in_view(g: HeadGrid) -> float:
    """Where the colour bar's level labels end, in the view's pixels."""
    axis = g.colorbar.getAxis("right")
    return g.graphics.mapFromScene(axis.sceneBoundingRect()).boundingRect().right()


def test_a_grid_a_little_too_wide_is_drawn_whole_and_its_heads_answer_the_mouse(qtbot):
    g = _grid(qtbot, heads=4, width=290)
    need = g.graphics.ci.minimumWidth()
    assert need > 290  # the case: four heads and the colour bar need more than the column has
    assert MIN_SCALE <= g.graphics.transform().m11() < 1.0
    assert _right_edge_in_view(g) <= g.graphics.viewport().width() + 1  # the bar's numbers are in view
    for head in range(4):  # the centre of each map, as the user sees it, is that head
        vb = g.map_item(1, head).getViewBox()
        centre = vb.sceneBoundingRect().center()
        assert g.head_at(centre)[:2] == (1, head)
        assert g.graphics.rect().contains(g.graphics.mapFromScene(centre))


def test_wide_enough_again_the_grid_is_drawn_one_to_one(qtbot):
    g = _grid(qtbot, heads=4, width=290)
    g.resize(700, 420)
    QApplication.processEvents()
    assert g.graphics.transform().m11() == 1.0 and g.graphics.autoPixelRange
    assert _right_edge_in_view(g) <= g.graphics.viewport().width() + 1


def test_a_grid_far_too_wide_is_not_shrunk_past_readable(qtbot):
    g = _grid(qtbot, heads=16, width=380)
    assert g.graphics.transform().m11() == 1.0  # 0.4 x would leave no number readable: cut at the edge instead
