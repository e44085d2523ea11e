"""How views keep up with their models without redrawing more than the eye can see.

``FrameCoalescer``: many model events, one redraw per frame. ``RedrawWhenShown``: no redraw behind another tab.

A training run at full speed emits a step every few milliseconds; a view that redrew on each would hold the GIL
and starve the training thread. ``FrameCoalescer(fn, ms)`` calls ``fn`` at most once per ``ms``: the first
request schedules a single-shot timer, later requests before it fires cost a flag check. (superqt's
``qthrottled`` does the same with futures and weak references, measured here at ~1.6 ms a call: too slow for
per-step events.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer

FRAME_MS = 33  # ~30 frames a second


class FrameCoalescer(QObject):
    def __init__(self, fn: Callable[[], object], ms: int = FRAME_MS, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._fn = fn
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(ms)
        self._timer.timeout.connect(self._fire)

    def __call__(self, *_: object) -> None:
        """Ask for a redraw (arguments of the event that asked are ignored: the view reads the model)."""
        if not self._timer.isActive():
            self._timer.start()

    def set_interval(self, ms: int) -> None:
        """Redraw at most once per ``ms`` from now on (a request already waiting keeps its time)."""
        self._timer.setInterval(ms)

    def _fire(self) -> None:
        self._fn()


class RedrawWhenShown:
    """Mixin for a view (a QWidget with ``redraw()``, listed before QWidget in the bases) that skips redraws behind
    another tab and catches up when shown. A script's window that was never shown draws at once, so what it reads
    or exports is current. ``redraw`` must set ``self._stale = False``."""

    _stale = True

    def request_redraw(self, *_: object) -> None:
        self._stale = True
        if self.isVisible() or not self.window().isVisible():  # type: ignore[attr-defined]
            self.redraw()  # type: ignore[attr-defined]

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        if self._stale:
            self.redraw()  # type: ignore[attr-defined]
        super().showEvent(event)  # type: ignore[misc]


class _FirstPaint(QObject):
    def __init__(self, widget: Any, callback: Callable[[], object], delay_ms: int, fallback_ms: int) -> None:
        super().__init__(widget)
        self._callback, self._delay, self._widget = callback, delay_ms, widget
        widget.installEventFilter(self)
        QTimer.singleShot(fallback_ms, self, self._fire)  # never painted (a minimised window): soon anyway

    def eventFilter(self, obj: Any, event: Any) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Paint:
            self._fire()
        return False

    def _fire(self) -> None:
        if self._callback is None:
            return
        self._widget.removeEventFilter(self)
        QTimer.singleShot(self._delay, self._widget, self._callback)  # not at all if the widget is gone by then
        self._callback = None  # type: ignore[assignment]


def after_first_paint(widget: Any, callback: Callable[[], object], delay_ms: int = 0, fallback_ms: int = 3000) -> None:
    """Call ``callback`` ``delay_ms`` after ``widget`` is first painted (or after ``fallback_ms`` if it never is):
    work the first frame does not show (launch within 1.6 x a bare pyqtgraph window) waits until the frame
    is on screen. A timer started before the window shows would instead run in the same turn of the event loop as
    the first paint, and the frame would be on screen only once it is done; started from the paint, it runs in a
    later turn."""
    _FirstPaint(widget, callback, delay_ms, fallback_ms)
