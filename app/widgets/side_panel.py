"""A side column that scrolls vertically and never clips its content horizontally.

A plain ``QScrollArea`` with the horizontal bar off reports a ~70 px minimum width whatever it holds, so a splitter
or a narrow window squeezes it below its content and the right edge of every row is cut (the Playground's scale
slider and Heads/Device fields, the Training set-up's "equence length" once the vertical bar appeared). This one
asks for its content's minimum width plus the vertical bar's, and asks again whenever the content's layout
changes (a note or an editor shown), so the columns beside it give way instead.

``keep_in_view(widget)`` follows a part of the column that grows while the user watches it (the Training tab's Run
box gains its ETA and status lines as a run starts): on a short screen its new lines were cut by the bottom edge.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


class SideScroll(QScrollArea):
    def __init__(self, widget: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._kept: QWidget | None = None  # the part ``keep_in_view`` follows (set before the filter can run)
        self.setWidgetResizable(True)
        self.setWidget(widget)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._content_min = -1  # the content's minimum width last told to the splitter
        widget.installEventFilter(self)
        self.verticalScrollBar().actionTriggered.connect(lambda _action: self.keep_in_view(None))

    def keep_in_view(self, part: QWidget | None) -> None:
        """Scroll ``part`` (inside the column) into view now and each time it changes size or place, until the user
        scrolls (wheel, bar or keys) or ``keep_in_view(None)``."""
        if self._kept is not None:
            self._kept.removeEventFilter(self)
        self._kept = part
        if part is not None:
            part.installEventFilter(self)
            self._scroll_to_kept()

    def _scroll_to_kept(self) -> None:
        # after the layout has placed the part at its new size (a resize is told before the column is laid out)
        QTimer.singleShot(0, self, self._show_kept)

    def _show_kept(self) -> None:
        if self._kept is not None:
            self.ensureWidgetVisible(self._kept, 0, 0)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        inner = self.widget()
        base = super().minimumSizeHint()
        if inner is None:
            return base
        width = inner.minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width() + 2 * self.frameWidth()
        return QSize(max(base.width(), width), base.height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        hint = super().sizeHint()
        return QSize(max(hint.width(), self.minimumSizeHint().width()), hint.height())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self._kept and event.type() in (QEvent.Type.Resize, QEvent.Type.Move):
            self._scroll_to_kept()  # moved too: a growing column first squeezes, then lays out at its new height
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            # the content's minimum may have changed: tell the splitter only when it did. Every edit changes a
            # status text in the controls (a layout request); relaying each one relaid the whole window (and
            # repainted all of it) on every keystroke
            width = watched.minimumSizeHint().width()
            if width != self._content_min:
                self._content_min = width
                self.updateGeometry()
        return super().eventFilter(watched, event)
