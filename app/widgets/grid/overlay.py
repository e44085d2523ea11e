"""What the head grid paints over each attention map: the cells the causal mask blocks (grey hatching, one
polygon), the causal boundary, the task's ideal-pattern markers, a highlighted row and "OFF" on a switched-off
head. Drawn on the map itself, in colours that read on the colour map, so they do not change with the theme.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPainterPath, QPen


class MapOverlay(pg.GraphicsObject):
    """Paints blocked cells, the causal boundary, the ideal-pattern markers, highlighted rows and 'OFF'."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0
        self.blocked: np.ndarray | None = None
        self.marks: list[tuple[int, int]] = []
        self.show_marks = True
        self.show_boundary = True
        self.highlight_row: int | None = None
        self.disabled = False
        self._hatch = QBrush(QColor(140, 140, 140), Qt.BrushStyle.BDiagPattern)
        self._blocked_fill = QColor(228, 228, 228)

    def set_content(self, n: int, blocked: np.ndarray | None, marks: list[tuple[int, int]]) -> None:
        """``blocked``: None, or the causal mask's blocked cells (the strict upper triangle; painted as one
        polygon)."""
        if n != self.n:
            self.prepareGeometryChange()
        self.n, self.blocked, self.marks = n, blocked, marks
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        return QRectF(0, 0, max(self.n, 1), max(self.n, 1))

    def paint(self, p: QPainter, *args: Any) -> None:
        if self.n == 0:
            return
        tr = p.transform()
        o = tr.map(QPointF(0, 0))
        one = tr.map(QPointF(1, 1))
        cw, ch = one.x() - o.x(), one.y() - o.y()
        p.save()
        p.resetTransform()
        p.setRenderHint(QPainter.RenderHint.Antialiasing)

        def cell(i: int, j: int) -> QRectF:
            return QRectF(o.x() + j * cw, o.y() + i * ch, cw, ch).normalized()

        n = self.n

        def pt(x: float, y: float) -> QPointF:
            return QPointF(o.x() + x * cw, o.y() + y * ch)

        # the causal boundary: key k is in the query's past when k <= q; the future is a staircase-edged triangle
        # (cells under 3 px: the steps are invisible, a straight edge draws the same for a 144-map grid's price)
        if min(abs(cw), abs(ch)) >= 3:
            stairs = [pt(n, n - 1)]
            for q in range(n - 1, 0, -1):
                stairs += [pt(q, q), pt(q, q - 1)]
        else:
            stairs = [pt(n, n - 1), pt(1, 0)]
        if self.blocked is not None:
            # one filled polygon (not one rectangle per cell): the grid repaints up to 30 times a second
            region = QPainterPath(pt(1, 0))
            region.lineTo(pt(n, 0))
            for point in stairs:
                region.lineTo(point)
            region.closeSubpath()
            p.fillPath(region, self._blocked_fill)
            p.fillPath(region, self._hatch)
        if self.show_boundary:
            line = QPainterPath(stairs[0])
            for point in stairs[1:]:
                line.lineTo(point)
            p.setPen(QPen(QColor(60, 60, 60), 1.2, Qt.PenStyle.DashLine))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawPath(line)
        if self.show_marks and self.marks:
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.setPen(QPen(QColor(0, 150, 255), max(1.2, min(abs(cw), abs(ch)) * 0.12)))
            for q, k in self.marks:
                r = cell(q, k)
                d = min(r.width(), r.height()) * 0.62
                p.drawEllipse(r.center(), d / 2, d / 2)
        if self.highlight_row is not None and 0 <= self.highlight_row < self.n:
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.setPen(QPen(QColor(255, 0, 200), 2.0))
            p.drawRect(QRectF(o.x(), o.y() + self.highlight_row * ch, self.n * cw, ch).normalized())
        if self.disabled:
            full = QRectF(o.x(), o.y(), self.n * cw, self.n * ch).normalized()
            p.fillRect(full, QColor(255, 255, 255, 170))
            font = QFont()
            font.setBold(True)
            font.setPointSizeF(max(9.0, min(20.0, full.height() / 6)))
            p.setFont(font)
            p.setPen(QColor(200, 0, 0))
            p.drawText(full, Qt.AlignmentFlag.AlignCenter, "OFF")
            p.setPen(QPen(QColor(200, 0, 0), 3))
            p.drawRect(full)
        p.restore()
