"""What is painted over a heatmap's colours: cell numbers, blocked-cell hatching, highlights, head separators.

One ``CellOverlay`` item paints every cell in device pixels (not one TextItem per cell): a 16x64 map repaints in
well under a millisecond, and numbers are simply skipped when a cell is too small to hold them. Blocked cells
(``blocked`` True) are grey hatching with their value ("−∞" for masked scores), never the colour of -inf.

The numbers grow with their cells (``number_pt``): 11 pt in the ordinary layout (× the zoom, Ctrl+=), and beyond
~65 px cells a size in proportion, so a 3 × 3 map alone on a 1920 × 1080 projector has ~50 px digits; never more
than the cell holds. The font is worked out once per cell size and content, not on every paint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen

from app.widgets.heatmap.style import text_is_dark

MINUS = "\u2212"


def format_value(v: float) -> str:
    """Short cell text: 2 decimals for small numbers, fewer for large ones; a real minus sign; −∞ for -inf; a dash
    for NaN (a value not measured: an ablation scan's heads kept off or not reached)."""
    if not math.isfinite(v):
        if math.isnan(v):
            return "–"
        return f"{MINUS}∞" if v < 0 else "∞"
    a = abs(v)
    if a >= 1000:
        s = f"{v:.3g}"
    elif a >= 100:
        s = f"{v:.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    else:
        s = f"{v:.2f}"
    if s in ("-0.00", "-0.0", "-0"):
        s = s[1:]
    return s.replace("-", MINUS)


_TEXTS: dict[float, str] = {}
"""``format_value``'s answers by value: an edit changes a row or two of a map, and the strings of the rest were made
on the paint before (formatting all 384 numbers of the 8 x 16 Steps view was ~0.4 ms of an edit)."""


def cell_text(v: float) -> str:
    """``format_value(v)``, remembered (NaN, never equal to itself, is simply formatted again)."""
    text = _TEXTS.get(v)
    if text is None:
        if len(_TEXTS) >= 65536:
            _TEXTS.clear()
        text = _TEXTS[v] = format_value(v)
    return text


MIN_NUMBER_PT = 6.5  # below this a number is not readable: the map says "too small for numbers" instead
NUMBER_PT = 11.0
"""The numbers' size in the ordinary layout (at zoom 1): cells up to ~65 px high."""
NUMBER_GROWTH = 0.17
"""Points of number per pixel of cell height once cells outgrow ``NUMBER_PT``: the back row of a classroom reads
~50 pt numbers in the ~300 px cells of a 3 × 3 map alone on a 1920 × 1080 projector (digits ~0.97 px per pt)."""


def number_pt(ch: float, scale: float = 1.0) -> float:
    """The size numbers would like in cells ``ch`` px high, before fitting: ``NUMBER_PT`` × ``scale`` (the zoom), or
    in proportion to the cell when that is larger."""
    return max(NUMBER_PT * scale, NUMBER_GROWTH * ch)


_METRICS: dict[tuple[str, float], tuple[QFont, QFontMetricsF]] = {}


def font_at(base: QFont, size: float) -> tuple[QFont, QFontMetricsF]:
    """``base`` at ``size`` pt and its metrics, made once per (font, size): measuring is the costly part."""
    key = (base.key(), round(size, 2))
    if key not in _METRICS:
        if len(_METRICS) > 512:
            _METRICS.clear()
        font = QFont(base)
        font.setPointSizeF(key[1])
        _METRICS[key] = (font, QFontMetricsF(font))
    return _METRICS[key]


def number_cell_ok(cw: float, ch: float) -> bool:
    """Cells smaller than 14 x 11 px never hold a number."""
    return cw >= 14 and ch >= 11


def fit_number_font(texts: list[list[str]], cw: float, ch: float, base: QFont, scale: float = 1.0) -> QFont | None:
    """The largest font up to ``number_pt`` (at least 6.5 pt, at most about 0.38 of the cell's height) in which
    every string of ``texts`` fits a ``cw`` x ``ch`` px cell with 3 px to spare, or None when even 6.5 pt does not.
    ``scale``: the zoom (the map's font over the theme's). The one rule for numbers: ``CellOverlay`` paints by it
    and ``pipeline.numbers_fit`` reports by it."""
    if not number_cell_ok(cw, ch):
        return None
    strings = [t for row in texts for t in row]
    if not strings:
        return None
    longest = max(strings, key=len)
    size = max(MIN_NUMBER_PT, min(number_pt(ch, scale), ch * 0.38, cw / (0.62 * len(longest) + 0.6)))
    font, fm = font_at(base, size)
    advance = fm.horizontalAdvance(longest)
    while size > MIN_NUMBER_PT and advance > cw - 3:  # shrink before giving up
        size = max(MIN_NUMBER_PT, min(size - 0.5, size * (cw - 3) / advance))
        font, fm = font_at(base, size)
        advance = fm.horizontalAdvance(longest)
    # the widest string is at least as wide as ``longest``: when that does not fit, or the font is too tall, no
    # need to measure the rest (an 8 x 16 map too small for its numbers measured all 128 on every edit, ~0.3 ms)
    if advance > cw - 3 or fm.height() > ch:
        return None
    widest = max(fm.horizontalAdvance(t) for t in set(strings))
    return font if widest <= cw - 3 else None


class CellOverlay(pg.GraphicsObject):
    """Paints cell numbers, blocked-cell hatching, highlights and group separators over the image."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = 0
        self.cols = 0
        self.texts: list[list[str]] = []
        self._values = np.zeros((0, 0))
        self._image = np.zeros((0, 0))
        self._levels = (-1.0, 1.0)
        self._kind = "signed"
        self.text_dark: np.ndarray = np.zeros((0, 0), dtype=bool)  # True: draw dark text on this cell
        self.blocked: np.ndarray | None = None
        self.max_text_chars = 0
        self.show_numbers = True
        self.highlight_rows: tuple[int, ...] = ()
        self.highlight_cols: tuple[int, ...] = ()
        self.highlight_cells: tuple[tuple[int, int], ...] = ()
        self.selected: tuple[int, int] | None = None
        self.col_groups = 1
        self.row_groups = 1
        self.paint_count = 0
        self._font = QFont()
        self.text_scale = 1.0  # the zoom: the map's font over the theme's (``HeatmapWidget`` keeps it)
        self._fit: tuple[tuple[float, float, int, float], QFont | None] | None = None  # (cells, texts, zoom) -> font
        self._hatch = QBrush(QColor(120, 120, 120), Qt.BrushStyle.BDiagPattern)
        self._blocked_fill = QColor(215, 215, 215)

    def set_content(self, values: np.ndarray, image: np.ndarray, levels: tuple[float, float], kind: str,
                    blocked: np.ndarray | None) -> None:
        """New numbers; their strings and text colours are worked out at paint time, only if cells can hold them."""
        if values.shape != (self.rows, self.cols):
            self.prepareGeometryChange()
        self.rows, self.cols = values.shape
        self._values, self._image, self._levels, self._kind = values, image, levels, kind
        self.texts = []
        self._fit = None
        self.blocked = blocked
        self.max_text_chars = 1 if values.size else 0
        self.update()

    def _format(self) -> None:
        """Cell strings and whether each needs dark text (light cells) or light text (dark cells)."""
        self.texts = [[cell_text(v) for v in row] for row in self._values.tolist()]
        self.max_text_chars = max((len(t) for row in self.texts for t in row), default=0)
        dark = text_is_dark(self._image, self._levels, self._kind)
        self.text_dark = dark | self.blocked if self.blocked is not None else dark

    def number_font(self, cw: float, ch: float) -> QFont | None:
        """The font this map's numbers are drawn with in cells of ``cw`` x ``ch`` px, or None when they do not fit
        (worked out once per content and cell size: a repaint after an edit costs no font measuring)."""
        if not self.max_text_chars or not number_cell_ok(cw, ch):
            return None
        if not self.texts:
            self._format()
        key = (round(cw, 2), round(ch, 2), id(self.texts), self.text_scale)
        if self._fit is None or self._fit[0] != key:
            self._fit = (key, fit_number_font(self.texts, cw, ch, self._font, self.text_scale))
        return self._fit[1]

    def numbers_at_full_size(self) -> bool:
        """Whether the cells, as laid out now, hold their numbers at the zoom's size (``NUMBER_PT`` × the zoom) or
        larger, not shrunk to fit or dropped: zooming in stops before a shown map would lose that
        (``app.shell.presentation``)."""
        if not self.rows or not self.cols or not self.show_numbers:
            return True
        rect = self.sceneBoundingRect()
        font = self.number_font(rect.width() / self.cols, rect.height() / self.rows)
        return font is not None and font.pointSizeF() >= NUMBER_PT * self.text_scale - 0.01

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        return QRectF(0, 0, max(self.cols, 1), max(self.rows, 1))

    def paint(self, p: QPainter, *args: Any) -> None:
        self.paint_count += 1
        if self.rows == 0 or self.cols == 0:
            return
        tr = p.transform()
        origin = tr.map(QPointF(0, 0))
        one = tr.map(QPointF(1, 1))
        cw, ch = one.x() - origin.x(), one.y() - origin.y()
        p.save()
        p.resetTransform()

        def cell(i: int, j: int) -> QRectF:
            return QRectF(origin.x() + j * cw, origin.y() + i * ch, cw, ch).normalized()

        if self.blocked is not None and self.blocked.any():
            p.setPen(Qt.PenStyle.NoPen)
            for i, j in np.argwhere(self.blocked):
                r = cell(int(i), int(j))
                p.fillRect(r, self._blocked_fill)
                p.fillRect(r, self._hatch)
        # group separators (heads)
        sep_pen = QPen(QColor(20, 20, 20), 2)
        p.setPen(sep_pen)
        if self.col_groups > 1 and self.cols % self.col_groups == 0:
            step = self.cols // self.col_groups
            for g in range(1, self.col_groups):
                x = origin.x() + g * step * cw
                p.drawLine(QPointF(x, origin.y()), QPointF(x, origin.y() + self.rows * ch))
        if self.row_groups > 1 and self.rows % self.row_groups == 0:
            step = self.rows // self.row_groups
            for g in range(1, self.row_groups):
                y = origin.y() + g * step * ch
                p.drawLine(QPointF(origin.x(), y), QPointF(origin.x() + self.cols * cw, y))
        # numbers, when they fit (one rule, ``number_font``, also asked by the pipeline's "too small" notes)
        if self.show_numbers and self.max_text_chars:
            if not self.texts and number_cell_ok(abs(cw), abs(ch)):
                self._format()
            font = self.number_font(abs(cw), abs(ch))
            if font is not None:
                p.setFont(font)
                dark, light = QColor(20, 20, 20), QColor(250, 250, 250)
                flags = Qt.AlignmentFlag.AlignCenter
                for i, row in enumerate(self.texts):
                    for j, t in enumerate(row):
                        p.setPen(dark if self.text_dark[i, j] else light)
                        p.drawText(cell(i, j), flags, t)
        # highlights
        if self.highlight_rows or self.highlight_cols or self.highlight_cells or self.selected:
            p.setBrush(Qt.BrushStyle.NoBrush)
            hl = QPen(QColor(255, 0, 200), 2.5)
            p.setPen(hl)
            for i in self.highlight_rows:
                if 0 <= i < self.rows:
                    p.drawRect(QRectF(origin.x(), origin.y() + i * ch, self.cols * cw, ch).normalized())
            for j in self.highlight_cols:
                if 0 <= j < self.cols:
                    p.drawRect(QRectF(origin.x() + j * cw, origin.y(), cw, self.rows * ch).normalized())
            for i, j in self.highlight_cells:
                if 0 <= i < self.rows and 0 <= j < self.cols:
                    p.drawRect(cell(i, j).adjusted(1.5, 1.5, -1.5, -1.5))
            if self.selected is not None:
                i, j = self.selected
                if 0 <= i < self.rows and 0 <= j < self.cols:
                    p.setPen(QPen(QColor(0, 160, 255), 3))
                    p.drawRect(cell(i, j).adjusted(1.5, 1.5, -1.5, -1.5))
        p.restore()
