"""The Flow view's canvas: query tokens in a column on the left, key tokens on the right, one line per (query, key)
pair and head, its width and opacity the weight (``app.common.flow.flow_line_style``), one colour per head; the
heads' colours named along the top. Drawn with QPainter, so an SVG export is vector. Hovering a token isolates its
lines (the others fade). Every line drawn is recorded in ``FlowCanvas.drawn`` (tests read them back).

Any length draws in bounded time: a line costs QPainter tens of microseconds (far more on a loaded machine), and a
long text has heads × T² of them, so past ``MAX_ROWS`` tokens a side neighbouring tokens are pooled into one row
(the line of two pooled rows carries the mean over its queries of their summed weight to its keys, so a query row
still sums to 1), and past ``LINE_BUDGET`` lines only the strongest are drawn (the weak ones are the faintest), past
``SMOOTH_LINES`` without antialiasing (an antialiased 400-px line costs Qt ~0.2 ms, ~1 ms on a loaded machine). Label
widths are measured once per text (never once per line: that froze the window for 86 s at 68 tokens), and labels
are thinned to one per ``LABEL_ROW`` pixels. The plan of what to draw is kept until the data or the heads change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
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
MAX_ROWS = 256  # the most rows a column of tokens is drawn with: past it neighbouring tokens pool (~3 px a row)
LINE_BUDGET = 1500  # the most lines one draw makes; past it the strongest are kept
SMOOTH_LINES = 400  # past this many lines they are drawn without antialiasing (~5 × cheaper in Qt's raster engine)
LABEL_ROW = 12.0  # the least vertical room a drawn label gets: labels are thinned to one per this many pixels


@dataclass(frozen=True)
class FlowPlan:
    """What one (data, shown heads) draws: per side the pool size (1 = a row per token), and the lines as parallel
    arrays (head, first query, first key, weight), strongest kept when over ``LINE_BUDGET``."""

    pool_q: int
    pool_k: int
    heads: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    weights: np.ndarray
    total: int  # nonzero lines before the budget


def _pool(weights: np.ndarray, axis: int, size: int, mean: bool) -> np.ndarray:
    """Sums (``mean``: means) of ``size`` neighbours along ``axis`` (1 or 2 of (H, Lq, Lk)); the last pool may hold
    fewer. Reshape-sums, not ``np.add.reduceat`` (15 × slower along the rows of a 4,096² map)."""
    n = weights.shape[axis]
    if size == 1:
        return weights
    full = (n // size) * size
    moved = np.moveaxis(weights, axis, -1)
    parts = [moved[..., :full].reshape(*moved.shape[:-1], n // size, size).sum(axis=-1)]
    if full < n:
        parts.append(moved[..., full:].sum(axis=-1, keepdims=True))
    pooled = np.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]
    if mean:  # a query row's weights sum to 1: the pooled row keeps that as the mean of its members
        pooled = pooled / np.minimum(size, n - np.arange(0, n, size)).astype(pooled.dtype)
    return np.moveaxis(pooled, -1, axis)


def plan_lines(weights: np.ndarray, heads: list[int]) -> FlowPlan:
    """The lines to draw for ``weights`` (H, Lq, Lk) and the shown heads, bounded by ``MAX_ROWS`` and
    ``LINE_BUDGET`` (numpy; no Qt)."""
    lq, lk = weights.shape[1], weights.shape[2]
    pool_q, pool_k = max(1, math.ceil(lq / MAX_ROWS)), max(1, math.ceil(lk / MAX_ROWS))
    w = weights if list(heads) == list(range(weights.shape[0])) else weights[heads]  # no copy of all heads
    w = np.asarray(_pool(_pool(w, 1, pool_q, mean=True), 2, pool_k, mean=False), dtype=np.float64)
    h_idx, q_idx, k_idx = np.nonzero(w > 0.0)  # a masked pair (exactly 0) has no line
    vals = w[h_idx, q_idx, k_idx]
    total = int(vals.size)
    if total > LINE_BUDGET:
        keep = np.sort(np.argpartition(-vals, LINE_BUDGET - 1)[:LINE_BUDGET])
        h_idx, q_idx, k_idx, vals = h_idx[keep], q_idx[keep], k_idx[keep], vals[keep]
    shown = np.asarray(heads, dtype=np.int64)
    return FlowPlan(pool_q, pool_k, shown[h_idx] if shown.size else h_idx, q_idx * pool_q, k_idx * pool_k, vals,
                    total)


@dataclass(frozen=True)
class DrawnLine:
    """One line as drawn: head, query, key, the weight it stands for, pen width, opacity, faded (hover); for a
    long text, ``queries``/``keys`` tokens pooled from ``query``/``key`` on (1: one token)."""

    head: int
    query: int
    key: int
    weight: float
    width: float
    alpha: float
    faded: bool
    queries: int = 1
    keys: int = 1


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
        self._plan: tuple[Any, FlowPlan] | None = None  # (key, plan): kept until the data or the heads change
        self._label_widths: tuple[Any, dict[tuple[str, int], float]] | None = None
        self._geometry: tuple[Any, tuple[float, float, float]] | None = None  # _columns' answer for its key
        if dark is None:
            follow_theme(self._restyle)

    def set_data(self, data: FlowData | None, shown_heads: list[int]) -> None:
        if data is not self.data:  # what was planned and measured belongs to the old text (ids may be reused)
            self._plan = self._label_widths = self._geometry = None
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

    def plan(self) -> FlowPlan:
        """The lines this data and these heads draw (computed once, then kept)."""
        assert self.data is not None
        key = (id(self.data), self.data.weights.shape, tuple(self.shown_heads))
        if self._plan is None or self._plan[0] != key:
            self._plan = (key, plan_lines(self.data.weights, self.shown_heads))
        return self._plan[1]

    def label_width(self, side: str, i: int) -> float:
        """A label's width, measured once per text (the cache goes with the data or the font)."""
        assert self.data is not None
        key = (id(self.data), self._font().pointSizeF(), self._font().family())
        if self._label_widths is None or self._label_widths[0] != key:
            self._label_widths = (key, {})
        widths = self._label_widths[1]
        if (side, i) not in widths:
            tokens = self.data.query_tokens if side == "query" else self.data.key_tokens
            widths[(side, i)] = QFontMetricsF(self._font()).horizontalAdvance(tokens[i])
        return widths[(side, i)]

    def _columns(self) -> tuple[float, float, float]:
        """(x of the query dots, x of the key dots, top of the first row): the columns at most ``SPAN`` px apart,
        centred (a wide window does not stretch the lines into near-horizontal hairs). Only the labels drawn count
        (each measured once per text)."""
        assert self.data is not None
        key = (id(self.data), self.width(), self.height(), self.hover, self._font().pointSizeF())
        if self._geometry is not None and self._geometry[0] == key:
            return self._geometry[1]
        top = 28.0 + (LEGEND_H if self.data.num_heads > 1 else 0.0)
        lw = max((self.label_width("query", i) for i in self.labelled("query")), default=0.0) + 20.0
        rw = max((self.label_width("key", i) for i in self.labelled("key")), default=0.0) + 20.0
        span = min(max(self.width() - lw - rw - 20.0, 60.0), SPAN)
        left = max((self.width() - lw - rw - span) / 2, 10.0)
        self._geometry = (key, (left + lw, left + lw + span, top))
        return self._geometry[1]

    def labelled(self, side: str) -> list[int]:
        """The tokens of ``side`` whose labels (and dots) are drawn: one per ``LABEL_ROW`` px, and the hovered one."""
        assert self.data is not None
        n = len(self.data.query_tokens if side == "query" else self.data.key_tokens)
        out = list(range(0, n, max(1, math.ceil(LABEL_ROW / max(self._rows(n)[1], 1e-9)))))
        if self.hover[0] == side and 0 <= self.hover[1] < n and self.hover[1] not in out:
            out.append(self.hover[1])
        return out

    def _rows(self, n: int) -> tuple[float, float]:
        """(y of the first row's top, row height) for a column of ``n`` tokens, centred vertically."""
        assert self.data is not None
        top = 28.0 + (LEGEND_H if self.data.num_heads > 1 else 0.0)
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
        y0, row = self._rows(n)
        i = math.floor((pos.y() - y0) / row) if row > 0 else -1
        return (side, i) if 0 <= i < n else ("", -1)

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
        nq, nk = len(data.query_tokens), len(data.key_tokens)
        (yq0, rq), (yk0, rk) = self._rows(nq), self._rows(nk)
        p.setPen(QColor(c.muted))
        y_head = min(yq0, yk0) - 20
        p.drawText(QRectF(0, y_head, xq + 6, 18), Qt.AlignmentFlag.AlignRight, "queries")
        p.drawText(QRectF(xk - 6, y_head, self.width() - xk + 6, 18), Qt.AlignmentFlag.AlignLeft, "keys")
        side, idx = self.hover
        h_count = data.num_heads
        if h_count > 1:  # the legend: every head in its colour, the hidden ones faint
            fm = QFontMetricsF(font)
            p.setPen(QColor(c.muted))
            p.drawText(QRectF(6, 2, 60, LEGEND_H), Qt.AlignmentFlag.AlignVCenter, "heads")
            x = 8.0 + fm.horizontalAdvance("heads")
            for h in range(h_count):
                colour = QColor(head_colour(h, h_count, c) if h in self.shown_heads else c.faint)
                p.setPen(colour)
                text = f"■ {h + 1}"
                p.drawText(QRectF(x, 2, 200, LEGEND_H), Qt.AlignmentFlag.AlignVCenter, text)
                x += fm.horizontalAdvance(text) + 12
        self._paint_lines(p, xq, xk, (yq0, rq, nq), (yk0, rk, nk))
        for s, tokens, (y0, row) in (("query", data.query_tokens, (yq0, rq)), ("key", data.key_tokens, (yk0, rk))):
            for i in self.labelled(s):
                pt = QPointF(xq if s == "query" else xk, y0 + (i + 0.5) * row)
                hot = side == s and idx == i
                p.setPen(QPen(QColor(c.text), 1.0))
                p.setBrush(QColor(c.highlight if hot else c.plot_fg))
                p.drawEllipse(pt, 3.5 if hot else 2.5, 3.5 if hot else 2.5)
                f = QFont(font)
                f.setBold(hot)
                p.setFont(f)
                tw = self.label_width(s, i) + 4
                rect = (QRectF(pt.x() - 8 - tw, pt.y() - 9, tw, 18) if s == "query" else
                        QRectF(pt.x() + 8, pt.y() - 9, tw + 4, 18))
                align = Qt.AlignmentFlag.AlignRight if s == "query" else Qt.AlignmentFlag.AlignLeft
                p.drawText(rect, align | Qt.AlignmentFlag.AlignVCenter, tokens[i])
        p.setBrush(Qt.BrushStyle.NoBrush)

    def _paint_lines(self, p: QPainter, xq: float, xk: float, qs: tuple[float, float, int],
                     ks: tuple[float, float, int]) -> None:
        """The plan's lines, pooled rows at the middle of their tokens, heads side by side (not on top)."""
        assert self.data is not None
        plan, (yq0, rq, nq), (yk0, rk, nk) = self.plan(), qs, ks
        side, idx = self.hover
        shown = len(self.shown_heads)
        gap = min(4.0, min(rq, rk) / (2 * max(shown, 1)))
        order = {h: n for n, h in enumerate(self.shown_heads)}
        colours = {h: QColor(head_colour(h, self.data.num_heads, self.colors)) for h in self.shown_heads}
        p.setRenderHint(QPainter.RenderHint.Antialiasing, plan.weights.size <= SMOOTH_LINES)
        for h, q, k, w in zip(plan.heads.tolist(), plan.queries.tolist(), plan.keys.tolist(), plan.weights.tolist()):
            dy = (order[h] - (shown - 1) / 2) * gap
            span_q, span_k = min(plan.pool_q, nq - q), min(plan.pool_k, nk - k)
            width, alpha = flow_line_style(w)
            faded = idx >= 0 and not ((side == "query" and q <= idx < q + span_q) or
                                      (side == "key" and k <= idx < k + span_k))
            colour = colours[h]
            colour.setAlphaF(FADED_ALPHA if faded else alpha)
            pen = QPen(colour, width)
            pen.setCapStyle(Qt.PenCapStyle.FlatCap)
            p.setPen(pen)
            p.drawLine(QPointF(xq, yq0 + (q + span_q / 2) * rq + dy), QPointF(xk, yk0 + (k + span_k / 2) * rk + dy))
            self.drawn.append(DrawnLine(h, q, k, w, pen.widthF(), alpha, faded, span_q, span_k))
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
