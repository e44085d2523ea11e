"""A status bar whose message ends in "…" where the permanent widgets begin, the whole message in its tooltip.

Why: ``QStatusBar`` draws a message at full length and lets the permanent widgets (the first-launch offer "New here?
Take a guided lesson · Don't show again") cover its end. At 1024 px the Lab's "… on log-log axes." and the Model tab's
"… click a head to e" were cut mid-word. Messages are shown and read as before (``showMessage``, ``currentMessage``:
tests and views compare the whole text); only the painting elides, and only when the message does not fit.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QSizeGrip, QStatusBar, QStyle, QStyleOption, QWidget


class ElidingStatusBar(QStatusBar):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.messageChanged.connect(lambda _m: self._update_tip())

    def _items_shown(self) -> list[QWidget]:
        """The widgets added to the bar and shown: while a message shows, the permanent ones (the grip is no item)."""
        return [w for w in self.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly)
                if w.isVisible() and not isinstance(w, QSizeGrip)]

    def message_rect(self) -> QRect:
        """Where Qt draws the message: from 6 px to 2 px before the first permanent widget shown (or 12 px before
        the end)."""
        right = self.width() - 12
        shown = self._items_shown()
        if shown:
            right = min(right, min(w.x() for w in shown) - 2)
        return QRect(6, 0, max(right - 6, 0), self.height())

    def shown_text(self) -> str:
        """The message as painted: whole when it fits, else cut with "…" to the room left of the permanent widgets."""
        return self.fontMetrics().elidedText(self.currentMessage(), Qt.TextElideMode.ElideRight,
                                             self.message_rect().width())

    def _update_tip(self) -> None:
        message = self.currentMessage()
        self.setToolTip(message if message and self.shown_text() != message else "")

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._update_tip()

    def paintEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        text = self.shown_text()
        if text == self.currentMessage():
            super().paintEvent(event)
            return
        # as QStatusBar paints a message, with the elided text: the panel, the permanent widgets' frames, the text
        p = QPainter(self)
        opt = QStyleOption()
        opt.initFrom(self)
        style = self.style()
        style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelStatusBar, opt, p, self)
        for w in self._items_shown():
            item = QStyleOption()
            item.rect, item.palette, item.state = w.geometry().adjusted(-2, -1, 2, 1), self.palette(), \
                QStyle.StateFlag.State_None
            style.drawPrimitive(QStyle.PrimitiveElement.PE_FrameStatusBarItem, item, p, w)
        p.setPen(self.palette().windowText().color())
        p.drawText(self.message_rect(), int(Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter
                                            | Qt.TextFlag.TextSingleLine), text)
        p.end()
