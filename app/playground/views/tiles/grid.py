"""The Lq × Lk grid of tiles: one square per (query, key) cell, a thick line between tiles, each tile coloured by its
status in the frame (done, being computed, still to come, skipped whole by the mask) and the current tile's scores
written in its cells. It draws a ``TileFrame`` as given (``app.playground.views.tiles.model``) and computes
nothing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.playground.views.tiles.model import CURRENT, DONE, SKIPPED, TileFrame
from app.widgets.theme import LIGHT, ThemeColors

STATUS_WORDS = {DONE: "done", CURRENT: "being computed", "pending": "still to come", SKIPPED: "skipped (masked)"}


def status_colours(c: ThemeColors) -> dict[str, QColor]:
    """Fill colours by status, readable in both themes (current: the theme's orange, done: its blue, washed)."""
    base = QColor(c.base)
    done, current = QColor(c.blue), QColor(c.orange)
    done.setAlpha(90 if c.dark else 70)
    current.setAlpha(150 if c.dark else 120)
    skipped = QColor("#5a5d63" if c.dark else "#c8c8c8")
    return {DONE: done, CURRENT: current, "pending": base, SKIPPED: skipped}


class TileGrid(QWidget):
    """Draws one frame: ``set_frame(frame, q_tokens, k_tokens)``; ``colours`` follow the theme (``restyle``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.frame: TileFrame | None = None
        self.q_tokens: list[str] = []
        self.k_tokens: list[str] = []
        self.colors = LIGHT
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(180, 140)

    def set_frame(self, frame: TileFrame, q_tokens: Sequence[str], k_tokens: Sequence[str]) -> None:
        self.frame, self.q_tokens, self.k_tokens = frame, [str(t) for t in q_tokens], [str(t) for t in k_tokens]
        self.setToolTip(self.describe())
        self.update()

    def restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.update()

    def cell_status(self, row: int, col: int) -> str:
        """The status of the tile holding cell (row, col) now: what its colour says."""
        f = self.frame
        assert f is not None
        return str(f.status[row // f.block_q, col // f.block_k])

    def describe(self) -> str:
        f = self.frame
        if f is None:
            return ""
        t = f.current
        what = "skipped: the mask blocks it whole" if t.skipped else "being computed"
        return (f"tile {f.index} of {f.total}: query rows {t.rows.start}–{t.rows.stop - 1} × key columns "
                f"{t.cols.start}–{t.cols.stop - 1}, {what}")

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(360, 280)

    # ------------------------------------------------------------------ drawing
    def _geometry(self) -> tuple[float, float, float]:
        """(left, top, cell) of the cells, room kept for the token labels."""
        f = self.frame
        assert f is not None
        lq, lk = f.m.shape[0], f.lk
        fm = QFontMetrics(self.font())
        left = min(max((fm.horizontalAdvance(t) for t in self.q_tokens), default=10) + 8, 90)
        top = fm.height() + 6
        cell = max(4.0, min((self.width() - left - 4) / lk, (self.height() - top - 4) / lq))
        return float(left), float(top), float(cell)

    def paintEvent(self, _event: Any) -> None:  # noqa: N802 (Qt API)
        f = self.frame
        if f is None:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        c = self.colors
        fills = status_colours(c)
        left, top, cell = self._geometry()
        lq, lk = f.m.shape[0], f.lk
        text = QColor(c.text)
        font = QFont(self.font())
        p.setFont(font)
        fm = QFontMetrics(font)
        p.setPen(text)
        for i, tok in enumerate(self.q_tokens):
            p.drawText(QRectF(0, top + i * cell, left - 4, cell), Qt.AlignmentFlag.AlignRight |
                       Qt.AlignmentFlag.AlignVCenter, fm.elidedText(tok, Qt.TextElideMode.ElideRight, int(left) - 6))
        for j, tok in enumerate(self.k_tokens):
            p.drawText(QRectF(left + j * cell, 0, cell, top - 2), Qt.AlignmentFlag.AlignCenter,
                       fm.elidedText(tok, Qt.TextElideMode.ElideRight, int(cell)))
        bq, bk = f.block_q, f.block_k
        thin = QPen(QColor(c.faint), 1)
        for i in range(lq):
            for j in range(lk):
                status = str(f.status[i // bq, j // bk])
                rect = QRectF(left + j * cell, top + i * cell, cell, cell)
                p.fillRect(rect, QBrush(fills[status]))
                if status == SKIPPED:
                    p.fillRect(rect, QBrush(QColor(c.muted), Qt.BrushStyle.BDiagPattern))
                p.setPen(thin)
                p.drawRect(rect)
        t = f.current
        s = np.asarray(t.s)
        if cell >= 26 and not t.skipped:  # the current tile's scores, where there is room for them
            small = QFont(font)
            small.setPointSizeF(max(6.0, min(font.pointSizeF(), cell / 3.2)))
            p.setFont(small)
            p.setPen(text)
            for a, i in enumerate(t.rows):
                for b, j in enumerate(t.cols):
                    v = float(s[a, b])
                    label = "−∞" if math.isinf(v) else f"{v:.2f}"
                    p.drawText(QRectF(left + j * cell, top + i * cell, cell, cell), Qt.AlignmentFlag.AlignCenter,
                               label)
        p.setPen(QPen(QColor(c.text), 2))
        for qb in range(f.status.shape[0] + 1):
            y = top + min(qb * bq, lq) * cell
            p.drawLine(int(left), int(y), int(left + lk * cell), int(y))
        for kb in range(f.status.shape[1] + 1):
            x = left + min(kb * bk, lk) * cell
            p.drawLine(int(x), int(top), int(x), int(top + lq * cell))
        p.setPen(QPen(QColor(c.magenta), 4))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(left + t.cols.start * cell, top + t.rows.start * cell, len(t.cols) * cell,
                          len(t.rows) * cell).adjusted(1, 1, -1, -1))
        p.end()
