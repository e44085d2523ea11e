"""The token strip: the traced text as the model splits it, one box per token (spaces shown as ␣), wrapping to the
width. Hovering a token emits its position (the next-token list and the maps follow it); the session's hovered
position is highlighted, whichever view set it.

A long text wraps to many rows; the strip shows at most ``MAX_ROWS`` of them and scrolls the rest (a 1,020-token
text once wrapped to ~32 rows and grew the window past an 800 px screen, squashing the head grid). A highlight set
by another view scrolls its token into sight."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QFrame, QScrollArea, QSizePolicy, QWidget

from app.widgets.theme import LIGHT, ThemeColors, follow_theme

PAD, GAP = 4.0, 3.0
MAX_ROWS = 3
"""Rows of tokens shown at once; more scroll."""


class _Boxes(QWidget):
    """The boxes themselves, as tall as the wrapped text (inside the strip's scroll area)."""

    def __init__(self, strip: TokenStrip) -> None:
        super().__init__()
        self.strip = strip
        self.boxes: list[QRectF] = []
        self.line_height = 28.0
        self.setMouseTracking(True)

    def lay_out(self, width: int) -> float:
        """Place every box for ``width``; return the height they need. Each token is measured once here."""
        fm = QFontMetricsF(self.font())
        w = float(max(width, 100))
        line_h = fm.height() + 2 * PAD
        x = y = 0.0
        boxes = []
        for tok in self.strip.tokens:
            bw = fm.horizontalAdvance(tok) + 2 * PAD
            if x > 0 and x + bw > w:
                x, y = 0.0, y + line_h + GAP
            boxes.append(QRectF(x, y, bw, line_h))
            x += bw + GAP
        self.boxes, self.line_height = boxes, line_h
        height = y + line_h + 2
        self.setFixedHeight(int(height))
        return height

    def token_at(self, x: float, y: float) -> int:
        return next((i for i, r in enumerate(self.boxes) if r.contains(x, y)), -1)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():  # the rows rewrap to the width shown
            self.lay_out(event.size().width())
            self.strip._cap()

    def mouseMoveEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        i = self.token_at(event.position().x(), event.position().y())
        if i != self.strip.highlight:
            self.strip.hovered.emit(i)

    def leaveEvent(self, event: Any) -> None:  # noqa: N802
        super().leaveEvent(event)
        self.strip.hovered.emit(-1)

    def paintEvent(self, event: Any) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        c = self.strip.colors
        shown = QRectF(event.rect())
        for i, (tok, box) in enumerate(zip(self.strip.tokens, self.boxes)):
            if not box.intersects(shown):  # a long text: only the rows in sight are painted
                continue
            lit = i == self.strip.highlight
            p.setPen(QPen(QColor(c.orange if lit else c.muted), 1.5 if lit else 1.0))
            p.setBrush(QColor(c.orange).lighter(165) if lit else QColor(c.alt_base))
            p.drawRoundedRect(box, 3, 3)
            p.setPen(QColor("#111111") if lit else QColor(c.text))  # dark on the light highlight, either theme
            p.drawText(box, Qt.AlignmentFlag.AlignCenter, tok)
        if not self.strip.tokens:
            p.setPen(QColor(c.muted))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignVCenter, "No tokens yet.")
        p.end()


class TokenStrip(QScrollArea):
    """Tokens as boxes; ``hovered(position)`` (-1 when the pointer leaves them)."""

    hovered = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tokens: list[str] = []
        self.highlight = -1
        self.colors: ThemeColors = LIGHT
        self._inner = _Boxes(self)
        self.setWidget(self._inner)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setToolTip("The text as the model's tokenizer splits it (␣ = a space). Hover a token: the next-token "
                        "list says what the model expects after it. A long text scrolls.")
        self._fit()
        follow_theme(self._restyle)

    @property
    def _boxes(self) -> list[QRectF]:
        return self._inner.boxes

    def set_tokens(self, tokens: list[str]) -> None:
        self.tokens = list(tokens)
        self.highlight = -1
        self._fit()
        self.verticalScrollBar().setValue(0)
        self._inner.update()

    def set_highlight(self, position: int | None) -> None:
        pos = -1 if position is None else position
        if pos != self.highlight:
            self.highlight = pos
            if 0 <= pos < len(self._inner.boxes):
                box = self._inner.boxes[pos]
                self.ensureVisible(int(box.center().x()), int(box.center().y()), 0, int(box.height()))
            self._inner.update()

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self._inner.update()

    def token_at(self, x: float, y: float) -> int:
        """The token under (x, y) in the strip's own coordinates (scrolling taken into account)."""
        return self._inner.token_at(x, y + self.verticalScrollBar().value())

    def shown_rows(self) -> int:
        """How many rows of tokens the strip shows at once (at most ``MAX_ROWS``; more scroll)."""
        step = self._inner.line_height + GAP
        return max(1, min(MAX_ROWS, round((self.height() - 2 + GAP) / step)))

    def _fit(self) -> None:
        self._inner.lay_out(max(self.viewport().width(), 100))
        self._cap()

    def _cap(self) -> None:
        """As tall as the wrapped tokens, up to ``MAX_ROWS`` rows: a long text scrolls instead of growing the window."""
        step = self._inner.line_height + GAP
        self.setFixedHeight(int(min(self._inner.height(), MAX_ROWS * step - GAP + 2)))

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(400, self.height())
