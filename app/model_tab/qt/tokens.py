"""The token strip: the traced text as the model splits it, one box per token (spaces shown as ␣), wrapping to the
width. Hovering a token emits its position (the next-token list and the maps follow it); the session's hovered
position is highlighted, whichever view set it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.widgets.theme import LIGHT, ThemeColors, follow_theme

PAD, GAP = 4.0, 3.0


class TokenStrip(QWidget):
    """Tokens as boxes; ``hovered(position)`` (-1 when the pointer leaves them)."""

    hovered = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tokens: list[str] = []
        self.highlight = -1
        self.colors: ThemeColors = LIGHT
        self._boxes: list[QRectF] = []
        self._height = 28
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        self.setToolTip("The text as the model's tokenizer splits it (␣ = a space). Hover a token: the next-token "
                        "list says what the model expects after it.")
        follow_theme(self._restyle)

    def set_tokens(self, tokens: list[str]) -> None:
        self.tokens = list(tokens)
        self.highlight = -1
        self._lay_out()
        self.update()

    def set_highlight(self, position: int | None) -> None:
        pos = -1 if position is None else position
        if pos != self.highlight:
            self.highlight = pos
            self.update()

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.update()

    def token_at(self, x: float, y: float) -> int:
        return next((i for i, r in enumerate(self._boxes) if r.contains(x, y)), -1)

    # ------------------------------------------------------------------ Qt
    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(400, self._height)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(100, self._height)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return int(self._lay_out(width, keep=False))

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._lay_out()

    def mouseMoveEvent(self, event: Any) -> None:  # noqa: N802
        i = self.token_at(event.position().x(), event.position().y())
        if i != self.highlight:
            self.hovered.emit(i)

    def leaveEvent(self, event: Any) -> None:  # noqa: N802
        super().leaveEvent(event)
        self.hovered.emit(-1)

    def paintEvent(self, _event: Any) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        c = self.colors
        for i, (tok, box) in enumerate(zip(self.tokens, self._boxes)):
            lit = i == self.highlight
            p.setPen(QPen(QColor(c.orange if lit else c.muted), 1.5 if lit else 1.0))
            p.setBrush(QColor(c.orange).lighter(165) if lit else QColor(c.alt_base))
            p.drawRoundedRect(box, 3, 3)
            p.setPen(QColor("#111111") if lit else QColor(c.text))  # dark on the light highlight, either theme
            p.drawText(box, Qt.AlignmentFlag.AlignCenter, tok)
        if not self.tokens:
            p.setPen(QColor(c.muted))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignVCenter, "No tokens yet.")
        p.end()

    # ------------------------------------------------------------------ layout
    def _lay_out(self, width: int | None = None, keep: bool = True) -> float:
        fm = QFontMetricsF(self.font())
        w = float(width if width is not None else max(self.width(), 100))
        line_h = fm.height() + 2 * PAD
        x = y = 0.0
        boxes = []
        for tok in self.tokens:
            bw = fm.horizontalAdvance(tok) + 2 * PAD
            if x > 0 and x + bw > w:
                x, y = 0.0, y + line_h + GAP
            boxes.append(QRectF(x, y, bw, line_h))
            x += bw + GAP
        height = y + line_h + 2
        if keep:
            self._boxes = boxes
            if int(height) != self._height:
                self._height = int(height)
                self.updateGeometry()
        return height
