"""The note along a colour bar ("⚠ range changed", "shared ①②③ ±2") was clipped where the bar is short
(a small map): it now fits the bar, at a smaller size or shortened, and follows the bar's height."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QFontMetricsF
from qt_settle import settled

from app.widgets.heatmap.view import HeatmapWidget


def _note_fits(hm):
    axis = hm.colorbar.getAxis("left")
    label = axis.label
    text = label.toPlainText().strip()
    width = QFontMetricsF(label.font()).horizontalAdvance(text)
    return text, width, axis.geometry().height()


@pytest.mark.parametrize("height", [150, 200, 420])
def test_the_range_note_fits_its_colour_bar(qtbot, height):
    hm = HeatmapWidget(title="③ Masked scores")
    qtbot.addWidget(hm)
    hm.set_data(np.arange(9.0).reshape(3, 3), ["a", "b", "c"], ["x", "y", "z"], kind="signed")
    hm.set_colorbar_shown(True)
    hm.resize(320, height)
    hm.show()
    qtbot.waitExposed(hm)
    hm.set_range_note("⚠ range changed")
    settled(qtbot)
    text, width, room = _note_fits(hm)
    assert text and "range" in text
    assert 0 < width <= room, (text, width, room)
    hm.resize(320, height + 200)  # taller: the whole note back at its size
    qtbot.waitUntil(lambda: _note_fits(hm)[0] == "⚠ range changed")
    text, width, room = _note_fits(hm)
    assert width <= room
