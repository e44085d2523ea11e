"""At 1024 × 640 the floating Learn panel sat partly off screen (its minimum width is more than the third
of the screen it was given): floated at the right, it lies wholly inside the screen's free area, frame included."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect
from qt_settle import settled

from app.learn.model.files import find_lesson


def _inside(dock, room):
    qtbot_frame = dock.frameGeometry()
    return room.contains(qtbot_frame), (qtbot_frame, room)


def test_the_floating_panel_stays_on_this_screen(window, qtbot):
    learn = window.learn
    learn.open(find_lesson("softmax-cat-sat-mat"), 3)  # a question with the cell grid: the panel at its tallest
    learn._float_at_right()
    settled(qtbot)
    ok, why = _inside(learn.dock, learn.dock.screen().availableGeometry())
    assert ok, why


@pytest.mark.parametrize("room", [QRect(0, 0, 1024, 640), QRect(0, 0, 1280, 800), QRect(100, 30, 1024, 610)])
def test_the_floating_panel_fits_a_small_screen(window, qtbot, room):
    learn = window.learn
    learn.open(find_lesson("softmax-cat-sat-mat"), 3)
    learn.dock.setFloating(True)
    learn.place_floating(room)
    settled(qtbot)
    ok, why = _inside(learn.dock, room)
    assert ok, why
    assert learn.dock.frameGeometry().right() >= room.right() - 2  # at the right, beside the maps
