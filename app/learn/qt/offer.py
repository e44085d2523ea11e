"""The one-line first-launch offer in the status bar: "New here? Take a guided lesson · Don't show again".

Why a module of its own: the first frame shows the offer, but not the Learn dock or the lessons behind it (the
launch budget: 1.6 x a bare pyqtgraph window; the dock's wiring imports the lesson engine, ~0.1 s). So the window
puts this light widget up with itself, and ``app.learn.qt.dock.Learn`` (installed right after the first frame)
takes it over. Its buttons call what they are given, so a click before then still reaches the Learn dock
(reading the window's ``learn`` installs it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QStatusBar, QWidget

if TYPE_CHECKING:
    from app.learn.qt.window import OfferWindow

OFFER_KEY = "learn/offer_dismissed"
"""The setting "Don't show again" writes: while it is not set, every launch shows the offer."""


def offer_dismissed(settings: Any) -> bool:
    """Whether ``settings`` (a ``QSettings``) says the offer was dismissed for good."""
    return str(settings.value(OFFER_KEY, "false")).lower() in ("true", "1", "yes")


class LessonOffer(QWidget):
    """"New here?" with two flat link-like buttons; hidden until ``show()``."""

    def __init__(self, take: Callable[[], None], never: Callable[[], None]) -> None:
        super().__init__()
        h = QHBoxLayout(self)
        h.setContentsMargins(0, 0, 0, 0)
        label = QLabel("New here?")
        self.take_button = QPushButton("Take a guided lesson")
        self.never_button = QPushButton("Don't show again")
        for b in (self.take_button, self.never_button):
            b.setFlat(True)
            b.setCursor(Qt.CursorShape.PointingHandCursor)
        self.take_button.setStyleSheet("text-decoration: underline;")
        self.take_button.clicked.connect(lambda _c=False: take())
        self.never_button.clicked.connect(lambda _c=False: never())
        for w in (label, self.take_button, self.never_button):
            h.addWidget(w)
        self.hide()


def install_offer(bar: QStatusBar, take: Callable[[], None], never: Callable[[], None]) -> LessonOffer:
    """A hidden ``LessonOffer`` at the right of ``bar``."""
    offer = LessonOffer(take, never)
    bar.addPermanentWidget(offer)
    return offer


def show_first_launch_offer(window: OfferWindow) -> LessonOffer | None:
    """The offer, shown in ``window``'s status bar unless dismissed; its buttons read ``window.learn`` (which installs
    the Learn dock if it is not yet)."""
    if offer_dismissed(window.settings.q):
        return None
    offer = install_offer(window.statusBar(), lambda: window.learn.take_offer(), lambda: window.learn.dismiss_offer())
    offer.show()
    return offer
