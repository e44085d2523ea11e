"""Waiting for the views to catch up, instead of a fixed ``qtbot.wait(N)``.

The app defers its follow-up work to timers: the views that follow a training run, an experiment or the Lab redraw
through ``FrameCoalescer`` (at most once per 33-250 ms; app/widgets/frame.py), and a layout's second pass (the
Playground's reflow after a resize, its "too small for numbers" notes, a presentation's zoom) runs from a single-shot
timer once the widgets have their new sizes. What a window shows is current once none of those timers is waiting.
A fixed wait guessed that time (too long on a quiet machine, too short on a busy one); these wait for exactly that,
with a hang guard.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

from app.widgets.frame import FrameCoalescer

SOON_MS = 300
"""A single-shot timer of at most this interval is deferred work (a redraw, a layout's second pass); longer ones
(device detection a second after launch, a status message's expiry) are not waited for."""


def redraws_pending(root: QObject) -> list[FrameCoalescer]:
    """The coalescers under ``root`` whose redraw is asked for and has not run yet."""
    return [c for c in root.findChildren(FrameCoalescer) if any(t.isActive() for t in c.findChildren(QTimer))]


def _roots(root: QObject | None) -> list[QObject]:
    """``root``, or every top-level widget alive now (asked again at each look: a change may delete some)."""
    roots = [root] if root is not None else QApplication.topLevelWidgets()
    return [r for r in roots if shiboken6.isValid(r)]


def caught_up(qtbot, root: QObject | None = None, timeout: int = 10_000) -> None:  # noqa: ANN001 (pytest-qt)
    """Deliver what is queued (a worker thread's last signals), then wait until no redraw under ``root`` (every
    top-level widget when None) is pending. ``timeout`` (ms) is a hang guard, not a speed."""
    QApplication.processEvents()
    qtbot.waitUntil(lambda: not any(redraws_pending(r) for r in _roots(root)), timeout=timeout)
    QApplication.processEvents()  # what the last redraws posted (a label's update, a deferred layout)


def deferred_pending(root: QObject) -> list[QTimer]:
    """The single-shot timers of at most ``SOON_MS`` under ``root`` that are waiting to run."""
    return [t for t in root.findChildren(QTimer) if t.isActive() and t.isSingleShot() and t.interval() <= SOON_MS]


def settled(qtbot, root: QObject | None = None, timeout: int = 10_000) -> None:  # noqa: ANN001 (pytest-qt)
    """Wait until the window under ``root`` has done what a change deferred: events delivered, and no short
    single-shot timer (a redraw, a layout's second pass) waiting, twice in a row with the events between delivered
    (a pass that starts another is waited for too). ``timeout`` (ms) is a hang guard, not a speed."""
    quiet: list[bool] = []

    def done() -> bool:
        QApplication.processEvents()
        quiet.append(not any(deferred_pending(r) for r in _roots(root)))
        return quiet[-2:] == [True, True]

    qtbot.waitUntil(done, timeout=timeout)
