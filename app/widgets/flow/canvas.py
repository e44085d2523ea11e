"""The Flow view's canvas: query tokens in a column on the left, key tokens on the right, one line per (query, key)
pair and head, its width and opacity the weight (``app.common.flow.flow_line_style``), one colour per head; the
heads' colours named along the top. Drawn with QPainter, so an SVG export is vector. Hovering a token isolates its
lines (the others fade). Every line drawn is recorded in ``FlowCanvas.drawn`` (tests read them back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.common.flow import FlowData, flow_line_style
from app.widgets.theme import ThemeColors, colors_for, follow_theme

HEAD_COLOURS = {False: ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F", "#8C564B"),
                True: ("#5AA2FF", "#FF8F3F", "#3CC7A0", "#E08AC4", "#F0B93B", "#8FD3FF", "#C0C0C0", "#D0A080")}
"""One colour per head (Okabe–Ito, colour-blind safe), darker on white and lighter on the dark background."""
FADED_ALPHA = 0.06  # the lines of other tokens while one is hovered
ROW_MAX = 64.0  # the most vertical room a token gets (a 3-token flow stays compact)
SPAN = 420.0  # the widest distance between the two columns of dots
LEGEND_H = 18.0  # the line naming the heads' colours (several heads)


@dataclass(frozen=True)
class DrawnLine:
    """One line as drawn: head, query, key, the weight it stands for, pen width, opacity, faded (hover)."""

    head: int
    query: int
    key: int
    weight: float
    width: float
    alpha: float
    faded: bool


def head_colour(head: int, num_heads: int, c: ThemeColors) -> str:
    return c.blue if num_heads == 1 else HEAD_COLOURS[c.dark][head % len(HEAD_COLOURS[False])]


class FlowCanvas(QWidget):
    """Draws a ``FlowData``: tokens in two columns and the weighted lines between them."""

    hovered = Signal(str, int)
    """("query" | "key", index) of the token under the pointer; ("", -1) when it leaves."""

    def __init__(self, parent: QWidget | None = None, dark: bool | None = None) -> None:
        """``dark``: None follows the application's theme; True or False is fixed (a canvas made for a file)."""
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setMinimumSize(200, 140)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.data: FlowData | None = None
        self.shown_heads: list[int] = []
        self.hover: tuple[str, int] = ("", -1)
        self.colors = colors_for(bool(dark))
        self.drawn: list[DrawnLine] = []
        if dark is None:
            follow_theme(self._restyle)

    def set_data(self, data: FlowData | None, shown_heads: list[int]) -> None:
        self.data, self.shown_heads = data, list(shown_heads)
        if data is None or self.hover[1] >= len(data.query_tokens if self.hover[0] == "query" else data.key_tokens):
            self.hover = ("", -1)
        self.update()

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.update()

    # ------------------------------------------------------------------ geometry
    def _font(self) -> QFont:
        f = QFont(self.font())
        f.setPointSizeF(9.0)
        return f

    def _columns(self) -> tuple[float, float, float]:
        """(x of the query dots, x of the key dots, top of the first row): the columns at most ``SPAN`` px apart,
        centred (a wide window does not stretch the lines into near-horizontal hairs)."""
        assert self.data is not None
        fm = QFontMetricsF(self._font())
        lw = max((fm.horizontalAdvance(t) for t in self.data.query_tokens), default=0.0) + 20.0
        rw = max((fm.horizontalAdvance(t) for t in self.data.key_tokens), default=0.0) + 20.0
        span = min(max(self.width() - lw - rw - 20.0, 60.0), SPAN)
        left = max((self.width() - lw - rw - span) / 2, 10.0)
        return left + lw, left + lw + span, 28.0 + (LEGEND_H if self.data.num_heads > 1 else 0.0)

    def _rows(self, n: int) -> tuple[float, float]:
        """(y of the first row's top, row height) for a column of ``n`` tokens, centred vertically."""
        top = self._columns()[2]
        avail = max(self.height() - top - 8.0, 10.0)
        row = min(avail / max(n, 1), ROW_MAX)
        return top + (avail - row * n) / 2, row

    def token_pos(self, side: str, i: int) -> QPointF:
        """The dot of token ``i`` on ``side`` ("query" left, "key" right)."""
        assert self.data is not None
        xq, xk, _ = self._columns()
        y0, row = self._rows(len(self.data.query_tokens if side == "query" else self.data.key_tokens))
        return QPointF(xq if side == "query" else xk, y0 + (i + 0.5) * row)

    def token_at(self, pos: QPointF) -> tuple[str, int]:
        if self.data is None:
            return "", -1
        xq, xk, _ = self._columns()
        side = "query" if pos.x() < (xq + xk) / 2 else "key"
        if xq + 24 < pos.x() < xk - 24:  # between the columns: no token
            return "", -1
        n = len(self.data.query_tokens if side == "query" else self.data.key_tokens)
        best = min(range(n), key=lambda i: abs(self.token_pos(side, i).y() - pos.y()), default=-1)
        if best < 0 or abs(self.token_pos(side, best).y() - pos.y()) > self._rows(n)[1] / 2:
            return "", -1
        return side, best

    # ------------------------------------------------------------------ events
    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt API)
        self.set_hover(*self.token_at(event.position()))
        super().mouseMoveEvent(event)

    def leaveEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self.set_hover("", -1)
        super().leaveEvent(event)

    def set_hover(self, side: str, i: int) -> None:
        if (side, i) != self.hover:
            self.hover = (side, i)
            self.update()
            self.hovered.emit(side, i)

    # ------------------------------------------------------------------ drawing
    def paintEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        p = QPainter(self)
        try:
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            self.paint(p)
        finally:
            p.end()

    def paint(self, p: QPainter) -> None:
        c = self.colors
        p.fillRect(self.rect(), QColor(c.plot_bg))
        self.drawn = []
        data = self.data
        if data is None:
            return
        font = self._font()
        p.setFont(font)
        xq, xk, _ = self._columns()
        p.setPen(QColor(c.muted))
        y_head = min(self._rows(len(data.query_tokens))[0], self._rows(len(data.key_tokens))[0]) - 20
        p.drawText(QRectF(0, y_head, xq + 6, 18), Qt.AlignmentFlag.AlignRight, "queries")
        p.drawText(QRectF(xk - 6, y_head, self.width() - xk + 6, 18), Qt.AlignmentFlag.AlignLeft, "keys")
        side, idx = self.hover
        h_count = data.num_heads
        if h_count > 1:  # the legend: every head in its colour, the hidden ones faint
            p.setPen(QColor(c.muted))
            p.drawText(QRectF(6, 2, 60, LEGEND_H), Qt.AlignmentFlag.AlignVCenter, "heads")
            x = 8.0 + QFontMetricsF(font).horizontalAdvance("heads")
            for h in range(h_count):
                colour = QColor(head_colour(h, h_count, c) if h in self.shown_heads else c.faint)
                p.setPen(colour)
                text = f"■ {h + 1}"
                p.drawText(QRectF(x, 2, 200, LEGEND_H), Qt.AlignmentFlag.AlignVCenter, text)
                x += QFontMetricsF(font).horizontalAdvance(text) + 12
        shown = len(self.shown_heads)
        gap = min(4.0, self._rows(max(len(data.query_tokens), len(data.key_tokens)))[1] / (2 * max(shown, 1)))
        for n, h in enumerate(self.shown_heads):
            colour = QColor(head_colour(h, h_count, c))
            dy = QPointF(0.0, (n - (shown - 1) / 2) * gap)  # heads side by side, not on top of each other
            for q in range(len(data.query_tokens)):
                a = self.token_pos("query", q) + dy
                for k in range(len(data.key_tokens)):
                    w = float(data.weights[h, q, k])
                    if not w > 0.0:  # a masked pair (exactly 0) has no line; a zero-width pen would draw 1 px
                        continue
                    width, alpha = flow_line_style(w)
                    faded = idx >= 0 and not ((side == "query" and q == idx) or (side == "key" and k == idx))
                    colour.setAlphaF(FADED_ALPHA if faded else alpha)
                    pen = QPen(colour, width)
                    pen.setCapStyle(Qt.PenCapStyle.FlatCap)
                    p.setPen(pen)
                    p.drawLine(a, self.token_pos("key", k) + dy)
                    self.drawn.append(DrawnLine(h, q, k, w, pen.widthF(), alpha, faded))
        fm = QFontMetricsF(font)
        for s, tokens in (("query", data.query_tokens), ("key", data.key_tokens)):
            for i, tok in enumerate(tokens):
                pt = self.token_pos(s, i)
                hot = side == s and idx == i
                p.setPen(QPen(QColor(c.text), 1.0))
                p.setBrush(QColor(c.highlight if hot else c.plot_fg))
                p.drawEllipse(pt, 3.5 if hot else 2.5, 3.5 if hot else 2.5)
                f = QFont(font)
                f.setBold(hot)
                p.setFont(f)
                tw = fm.horizontalAdvance(tok) + 4
                rect = (QRectF(pt.x() - 8 - tw, pt.y() - 9, tw, 18) if s == "query" else
                        QRectF(pt.x() + 8, pt.y() - 9, tw + 4, 18))
                align = Qt.AlignmentFlag.AlignRight if s == "query" else Qt.AlignmentFlag.AlignLeft
                p.drawText(rect, align | Qt.AlignmentFlag.AlignVCenter, tok)
        p.setBrush(Qt.BrushStyle.NoBrush)
