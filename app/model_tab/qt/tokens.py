"""The token strip: the traced text as the model splits it, one box per token (spaces shown as ␣), wrapping to the
width. Hovering a token emits its position (the next-token list and the maps follow it); the session's hovered
position is highlighted, whichever view set it.

A long text wraps to many rows; the strip shows at most ``MAX_ROWS`` of them and scrolls the rest (a 1,020-token
text once wrapped to ~32 rows and grew the window past an 800 px screen, squashing the head grid). A highlight set
by another view scrolls its token into sight."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from PySide6.QtCore import QEvent, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QFrame, QScrollArea, QSizePolicy, QWidget

from app.widgets.theme import LIGHT, ThemeColors, follow_theme

PAD, GAP = 4.0, 3.0
MAX_ROWS = 3
"""Rows of tokens shown at once; more scroll."""


class _Boxes(QWidget):
    """The boxes themselves, as tall as the wrapped text (inside the strip's scroll area).

    A 4,096-token text arrived with two layouts of every box (the strip's height brings its scroll bar, which
    narrows the width and wraps again): 8,192 measurements and 4,096 ``QRectF``s each time, ~60 ms of the Model
    tab's stall. Now each distinct token is measured once per font (``measured`` counts them), a layout is
    arithmetic on those widths (rows as the first token of each), and only the rows in sight are painted; a box
    is made when asked for (``box``)."""

    def __init__(self, strip: TokenStrip) -> None:
        super().__init__()
        self.strip = strip
        self.line_height = 28.0
        self.measured = 0  # tokens measured since the widget was made (a test counts them)
        self._font_key = ""
        self._advance: dict[str, float] = {}  # a token's box width in the current font
        self._widths: list[float] = []  # each token's box width
        self._lefts: list[float] = []  # each box's x
        self._rows: list[int] = [0]  # the first token of each row
        self.setMouseTracking(True)

    def measure(self) -> None:
        """Each token's box width, measuring only tokens not measured before in this font."""
        font = self.font()
        if font.key() != self._font_key:
            self._font_key, self._advance = font.key(), {}
        fm = QFontMetricsF(font)
        self.line_height = fm.height() + 2 * PAD
        advance = self._advance
        for tok in set(self.strip.tokens).difference(advance):
            advance[tok] = fm.horizontalAdvance(tok) + 2 * PAD
            self.measured += 1
        self._widths = [advance[tok] for tok in self.strip.tokens]

    def lay_out(self, width: int) -> float:
        """Wrap the boxes to ``width``; return the height they need (no token is measured again here)."""
        if len(self._widths) != len(self.strip.tokens) or self.font().key() != self._font_key:
            self.measure()
        w = float(max(width, 100))
        x, lefts, rows = 0.0, [], [0]
        for i, bw in enumerate(self._widths):
            if x > 0 and x + bw > w:
                x = 0.0
                rows.append(i)
            lefts.append(x)
            x += bw + GAP
        self._lefts, self._rows = lefts, rows
        height = (len(rows) - 1) * (self.line_height + GAP) + self.line_height + 2
        self.setFixedHeight(int(height))
        return height

    # ------------------------------------------------------------------ the boxes, made when asked for
    def box(self, i: int) -> QRectF:
        """Token ``i``'s box in this widget's coordinates."""
        row = bisect_right(self._rows, i) - 1
        return QRectF(self._lefts[i], row * (self.line_height + GAP), self._widths[i], self.line_height)

    @property
    def boxes(self) -> list[QRectF]:
        """Every box (tests and scripts; drawing and hovering ask for the rows they need)."""
        return [self.box(i) for i in range(len(self._lefts))]

    def _row_tokens(self, row: int) -> range:
        stop = self._rows[row + 1] if row + 1 < len(self._rows) else len(self._lefts)
        return range(self._rows[row], stop)

    def token_at(self, x: float, y: float) -> int:
        if not self._lefts or y < 0:
            return -1
        step = self.line_height + GAP
        row = int(y // step)
        if row >= len(self._rows) or y - row * step > self.line_height:  # below the text, or in the gap
            return -1
        tokens = self._row_tokens(row)
        i = bisect_right(self._lefts, x, tokens.start, tokens.stop) - 1
        return i if i >= tokens.start and x <= self._lefts[i] + self._widths[i] else -1

    def rows_in(self, rect: QRectF) -> range:
        """The rows that ``rect`` (this widget's coordinates) touches."""
        step = self.line_height + GAP
        first = max(0, int(rect.top() // step))
        return range(first, min(len(self._rows), int(rect.bottom() // step) + 1)) if self._lefts else range(0)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():  # the rows rewrap to the width shown
            self.lay_out(event.size().width())
            self.strip._cap()

    def changeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # another font: every token measured again, once
            self.strip._fit()

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
        tokens = self.strip.tokens
        for row in self.rows_in(QRectF(event.rect())):  # a long text: only the rows in sight are painted
            for i in self._row_tokens(row):
                box = self.box(i)
                lit = i == self.strip.highlight
                p.setPen(QPen(QColor(c.orange if lit else c.muted), 1.5 if lit else 1.0))
                p.setBrush(QColor(c.orange).lighter(165) if lit else QColor(c.alt_base))
                p.drawRoundedRect(box, 3, 3)
                p.setPen(QColor("#111111") if lit else QColor(c.text))  # dark on the light highlight, either theme
                p.drawText(box, Qt.AlignmentFlag.AlignCenter, tokens[i])
        if not tokens:
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

    def set_tokens(self, tokens: list[str]) -> None:
        self.tokens = list(tokens)
        self.highlight = -1
        self._inner.measure()
        self._fit()
        self.verticalScrollBar().setValue(0)
        self._inner.update()

    def set_highlight(self, position: int | None) -> None:
        pos = -1 if position is None else position
        if pos != self.highlight:
            self.highlight = pos
            if 0 <= pos < len(self.tokens):
                box = self._inner.box(pos)
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
