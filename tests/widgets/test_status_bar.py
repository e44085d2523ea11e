"""A status message longer than the room left of the permanent widgets (the first-launch offer) ends in "…" there,
the whole of it in the tooltip; at 1024 px the Lab's and the Model tab's messages were cut mid-word under the offer.
What views and tests read (``currentMessage``) stays the whole text."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QMainWindow

from app.widgets.status_bar import ElidingStatusBar

LONG = "Lab: Choose devices and implementations, then Run: time and memory against n, on log-log axes."


def test_a_long_message_ends_in_an_ellipsis_before_the_permanent_widgets(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    bar = ElidingStatusBar()
    window.setStatusBar(bar)
    offer = QLabel("New here?  Take a guided lesson   Don't show again")
    bar.addPermanentWidget(offer)
    window.resize(600, 200)
    window.show()
    qtbot.waitExposed(window)
    bar.showMessage(LONG)
    qtbot.waitUntil(lambda: offer.x() > 0)
    shown = bar.shown_text()
    assert shown.endswith("…") and LONG.startswith(shown[:-1])
    assert bar.fontMetrics().horizontalAdvance(shown) <= offer.x() - 6
    assert bar.currentMessage() == LONG and bar.toolTip() == LONG
    bar.grab()  # paints the elided message without complaint
    bar.showMessage("Saved")
    assert bar.shown_text() == "Saved" and bar.toolTip() == ""


def test_the_window_uses_it(window):
    assert isinstance(window.statusBar(), ElidingStatusBar)
