"""``after_first_paint``: work left for after a widget's first frame runs after it, in a later turn of the event
loop, and not at all once the widget is gone (it ran on a deleted layout at the end of some tests)."""

from __future__ import annotations

import shiboken6
from PySide6.QtWidgets import QApplication, QLabel

from app.widgets.frame import after_first_paint


def test_the_work_runs_after_the_first_paint(qtbot):
    ran: list[bool] = []
    w = QLabel("first frame")
    qtbot.addWidget(w)
    after_first_paint(w, lambda: ran.append(w.isVisible()))
    QApplication.processEvents()
    assert ran == []  # not shown, not painted: nothing yet
    w.show()
    qtbot.waitUntil(lambda: ran == [True], timeout=2000)
    qtbot.wait(50)  # a wait for nothing to happen: no second call
    assert ran == [True]  # once


def test_the_work_is_dropped_with_its_widget(qtbot):
    ran: list[int] = []
    w = QLabel("gone soon")
    after_first_paint(w, lambda: ran.append(1), delay_ms=100)
    w.show()
    qtbot.waitExposed(w)
    QApplication.processEvents()  # painted: the work is due 100 ms from now
    w.close()
    shiboken6.delete(w)
    qtbot.wait(300)  # a wait for nothing to happen: the work, due 100 ms after the paint, never runs
    assert ran == []


def test_a_widget_never_painted_gets_the_work_after_the_fallback(qtbot):
    ran: list[int] = []
    w = QLabel("never shown")
    qtbot.addWidget(w)
    after_first_paint(w, lambda: ran.append(1), fallback_ms=50)
    qtbot.waitUntil(lambda: ran == [1], timeout=2000)
