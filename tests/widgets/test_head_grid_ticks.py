"""The head grid's token labels ran together on small maps ("466"): the labels always drawn along an axis
(its first tick level) never overlap, whatever the maps' size, and more of them come back on larger maps."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QFontMetricsF
from qt_settle import settled

from app.widgets.grid.head_grid import HeadGrid

LABELS = ["4", "6", "6", "1", "SEP", "6", "6", "4", "1", "3", "12", "7"]


def _first_level(cell, axis):
    return cell.plot.getAxis(axis)._tickLevels[0]


def _gaps(cell):
    """Per axis: the pixels between neighbouring drawn labels, and the pixels their texts need."""
    vb, fm = cell.plot.getViewBox(), QFontMetricsF(cell.plot.getAxis("bottom").style["tickFont"])
    out = []
    for axis in ("bottom", "left"):
        ticks = _first_level(cell, axis)
        pos = [vb.mapViewToScene(QPointF(x, x)) for x, _ in ticks]
        for (_, ta), (_, tb), pa, pb in zip(ticks, ticks[1:], pos, pos[1:], strict=False):
            if axis == "bottom":
                out.append((pb.x() - pa.x(), (fm.horizontalAdvance(ta) + fm.horizontalAdvance(tb)) / 2))
            else:
                out.append((abs(pb.y() - pa.y()), fm.height()))
    return out


@pytest.mark.parametrize("size", [(420, 260), (700, 420), (1400, 900)])
def test_head_grid_labels_never_run_together(qtbot, size):
    g = HeadGrid()
    qtbot.addWidget(g)
    n = len(LABELS)
    w = np.full((4, n, n), 1.0 / n)
    g.set_maps([w, w], LABELS, seq_len=6, causal=True)
    g.resize(*size)
    g.show()
    qtbot.waitExposed(g)
    settled(qtbot)
    for cell in g._cells.values():
        gaps = _gaps(cell)
        assert gaps and all(room >= need for room, need in gaps), gaps
    if size[0] >= 1400:  # room enough: every other label at least
        cell = g._cells[(0, 0)]
        assert len(_first_level(cell, "bottom")) >= n // 2
