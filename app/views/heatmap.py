"""One labelled heatmap: token labels on both axes, numbers in cells, a fixed colour bar, blocked cells hatched.

Used for every step of the pipeline, the multi-head view and the training panel's head grid, and (through
``app.export``) for exported images, so what you export is what you saw.

Design notes:
- The cell numbers, blocked-cell hatching and highlights are painted by one ``_CellOverlay`` item in device
  pixels (not one TextItem per cell): a 16x64 map repaints in well under a millisecond, and numbers are simply
  skipped when a cell is too small to hold them.
- Levels are honest and fixed: ``kind="weights"`` is always [0, 1]; ``kind="signed"`` is symmetric around 0
  (+-max|v| over the finite values), with a diverging map, so white always means 0.
- Blocked cells (``blocked`` True) are drawn as grey hatching with their value ("−∞" for masked scores), never as
  the colour of -inf.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QFileDialog, QMenu, QVBoxLayout, QWidget

KINDS = ("signed", "weights")
_CMAP_NAMES = {"signed": "CET-D1A", "weights": "CET-L18"}
_CMAPS: dict[str, Any] = {}
MINUS = "\u2212"
MAX_LABEL_CHARS = 12
MIN_TICK_PT = 7.0  # key labels shrink down to this size in narrow maps before any is shortened or skipped


def colormap(kind: str) -> Any:
    """The pyqtgraph ColorMap for a kind ("signed": diverging blue-white-red; "weights": white-orange-red)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind not in _CMAPS:
        _CMAPS[kind] = pg.colormap.get(_CMAP_NAMES[kind])
    return _CMAPS[kind]


def levels_for(values: np.ndarray, kind: str) -> tuple[float, float]:
    """Colour levels: [0, 1] for weights; symmetric +-max|v| (finite values only) for signed data."""
    if kind == "weights":
        return 0.0, 1.0
    finite = values[np.isfinite(values)]
    m = float(np.max(np.abs(finite))) if finite.size else 0.0
    if m == 0.0:
        m = 1.0
    return -m, m


def format_value(v: float) -> str:
    """Short cell text: 2 decimals for small numbers, fewer for large ones; a real minus sign; −∞ for -inf."""
    if not math.isfinite(v):
        if math.isnan(v):
            return "nan"
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


def elide(label: str, n: int = MAX_LABEL_CHARS) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def _let_title_overflow(label: Any) -> None:
    """pyqtgraph makes a title's text width the plot's minimum width, so a long title in a narrow widget pushes
    the colour bar out of view. Keep the height rule, drop the width rule: the title may overflow instead."""

    def update_min() -> None:
        bounds = label.itemRect()
        label.setMinimumWidth(0)
        label.setMinimumHeight(bounds.height())
        size = {Qt.SizeHint.MinimumSize: (0, bounds.height()),
                Qt.SizeHint.PreferredSize: (bounds.width(), bounds.height()),
                Qt.SizeHint.MaximumSize: (-1, -1), Qt.SizeHint.MinimumDescent: (0, 0)}
        label._sizeHint = size
        label.updateGeometry()

    label.updateMin = update_min


class _CellOverlay(pg.GraphicsObject):
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
        self.blocked = blocked
        self.max_text_chars = 1 if values.size else 0
        self.update()

    def _format(self) -> None:
        """Cell strings and whether each needs dark text (light cells) or light text (dark cells)."""
        vals, img, (lo, hi) = self._values, self._image, self._levels
        self.texts = [[format_value(v) for v in row] for row in vals.tolist()]
        self.max_text_chars = max((len(t) for row in self.texts for t in row), default=0)
        norm = (img - lo) / (hi - lo)
        rgb = colormap(self._kind).map(np.clip(norm, 0, 1).ravel(), mode="float")
        lum = (0.299 * rgb[:, 0] + 0.587 * rgb[:, 1] + 0.114 * rgb[:, 2]).reshape(vals.shape)
        dark = lum > 0.5
        self.text_dark = dark | self.blocked if self.blocked is not None else dark

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
        # numbers, when they fit
        acw, ach = abs(cw), abs(ch)
        if self.show_numbers and self.max_text_chars and ach >= 11 and acw >= 14 and not self.texts:
            self._format()
        if self.show_numbers and self.max_text_chars and ach >= 11 and acw >= 14:
            size = max(6.5, min(11.0, ach * 0.38, acw / (0.62 * self.max_text_chars + 0.6)))
            longest = max((t for row in self.texts for t in row), key=len, default="")
            self._font.setPointSizeF(size)
            fm = QFontMetricsF(self._font)
            while size > 6.5 and fm.horizontalAdvance(longest) > acw - 3:  # shrink before giving up on numbers
                size -= 0.5
                self._font.setPointSizeF(size)
                fm = QFontMetricsF(self._font)
            widest = max((fm.horizontalAdvance(t) for row in self.texts for t in row), default=0.0)
            if widest <= acw - 3 and fm.height() <= ach:
                p.setFont(self._font)
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


class HeatmapWidget(QWidget):
    """A matrix as a labelled heatmap. ``values()`` returns exactly the array shown (tests compare it).

    Signals: ``cellHovered(row, col)`` ((-1, -1) when the pointer leaves the cells) and ``cellClicked(row,
    col)`` (left click, or Enter/arrow keys when the widget has focus). Right-click offers Export PNG/SVG/CSV.
    """

    cellHovered = Signal(int, int)
    cellClicked = Signal(int, int)
    exported = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, title: str = "", dark: bool = False,
                 context_menu: bool = True) -> None:
        super().__init__(parent)
        self._values = np.zeros((0, 0))
        self._row_labels: list[str] = []
        self._col_labels: list[str] = []
        self._blocked: np.ndarray | None = None
        self._kind = "signed"
        self._title = title
        self._row_title = ""
        self._col_title = ""
        self._row_sums = False
        self._col_tick_pt: float | None = None
        self._levels: tuple[float, float] | None = None
        self._hover = (-1, -1)
        self._current: tuple[int, int] | None = None
        self._dark = dark
        self.export_dir = ""  # where the export dialog starts; the window sets it from the settings

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        layout.addWidget(self.graphics)
        self.plot: pg.PlotItem = self.graphics.addPlot()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.invertY(True)
        self.plot.showAxis("right")
        self.plot.getAxis("right").setStyle(showValues=False)
        vb = self.plot.getViewBox()
        vb.setDefaultPadding(0.0)
        vb.enableAutoRange(enable=False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.overlay = _CellOverlay()
        self.plot.addItem(self.overlay)
        self.colorbar = pg.ColorBarItem(values=(-1.0, 1.0), colorMap=colormap("signed"), interactive=False,
                                        width=14, colorMapMenu=False)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        for name in ("left", "bottom", "right", "top"):
            ax = self.plot.getAxis(name)
            ax.setStyle(tickLength=0, autoExpandTextSpace=True, hideOverlappingLabels=True)
        self.plot.getAxis("right").setStyle(tickLength=0)
        vb.sigResized.connect(self._on_view_resized)
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.graphics.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        if context_menu:
            self.graphics.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            self.graphics.customContextMenuRequested.connect(self._show_context_menu)
        _let_title_overflow(self.plot.titleLabel)
        self.apply_theme(dark)
        if title:
            self.plot.setTitle(title)

    # ---------------------------------------------------------------- data
    def set_data(self, values: Any, row_labels: Sequence[str], col_labels: Sequence[str], *,
                 blocked: Any = None, kind: str = "signed", title: str = "", row_title: str | None = None,
                 col_title: str | None = None, row_sums: bool | None = None) -> None:
        """Show ``values`` (rows x cols). ``blocked``: optional bool array, True = blocked cell (hatched).

        ``kind="weights"`` fixes levels to [0, 1] and shows row sums on the right; ``"signed"`` uses
        symmetric levels around 0. Cheap enough to call on every edit.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        vals = np.asarray(values, dtype=np.float64)
        if vals.ndim != 2:
            raise ValueError(f"values: expected a 2-D array, got shape {vals.shape}")
        rows, cols = vals.shape
        if len(row_labels) != rows or len(col_labels) != cols:
            raise ValueError(f"labels: {len(row_labels)} row and {len(col_labels)} column labels for a "
                             f"{rows}x{cols} matrix")
        blk = None
        if blocked is not None:
            blk = np.asarray(blocked, dtype=bool)
            if blk.shape != vals.shape:
                blk = np.broadcast_to(blk, vals.shape)
            if not blk.any():
                blk = None
        shape_changed = vals.shape != self._values.shape
        self._values = vals.copy()
        self._blocked = None if blk is None else blk.copy()
        if kind != self._kind:
            self._kind = kind
            self.colorbar.setColorMap(colormap(kind))
        levels = levels_for(vals, kind)
        if levels != self._levels:
            self._levels = levels
            self.colorbar.setLevels(values=levels)
        img = np.where(np.isfinite(vals), vals, 0.0)
        self.image.setImage(img, autoLevels=False, levels=levels)
        self.image.setRect(QRectF(0, 0, cols, rows))
        if shape_changed:
            self.plot.getViewBox().setRange(xRange=(0, max(cols, 1)), yRange=(0, max(rows, 1)), padding=0)
            self._current = None
        self.overlay.set_content(self._values, img, levels, kind, self._blocked)
        labels_changed = list(row_labels) != self._row_labels or list(col_labels) != self._col_labels
        rs = (kind == "weights") if row_sums is None else row_sums
        if labels_changed or shape_changed or rs != self._row_sums:
            self._row_labels = [str(s) for s in row_labels]
            self._col_labels = [str(s) for s in col_labels]
            self._row_sums = rs
            self._update_ticks()
        if rs:
            self._update_row_sums()
        if title and title != self._title:
            self.set_title(title)
        if row_title is not None and row_title != self._row_title:
            self._row_title = row_title
            self.plot.setLabel("left", row_title)
        if col_title is not None and col_title != self._col_title:
            self._col_title = col_title
            self.plot.setLabel("bottom", col_title)

    def values(self) -> np.ndarray:
        """The array currently displayed (a copy)."""
        return self._values.copy()

    def row_labels(self) -> list[str]:
        return list(self._row_labels)

    def col_labels(self) -> list[str]:
        return list(self._col_labels)

    def blocked(self) -> np.ndarray | None:
        return None if self._blocked is None else self._blocked.copy()

    def kind(self) -> str:
        return self._kind

    def title(self) -> str:
        return self._title

    def levels(self) -> tuple[float, float]:
        return self._levels or (0.0, 1.0)

    def set_title(self, title: str) -> None:
        self._title = title
        color = "#eeeeee" if self._dark else "#111111"
        self.plot.setTitle(title, color=color, size="11pt")

    def set_column_groups(self, n: int) -> None:
        """Draw separators between ``n`` equal column groups (heads)."""
        self.overlay.col_groups = max(1, int(n))
        self.overlay.update()

    def set_show_numbers(self, show: bool) -> None:
        self.overlay.show_numbers = bool(show)
        self.overlay.update()

    # ---------------------------------------------------------------- highlight
    def set_highlight(self, rows: Sequence[int] = (), cols: Sequence[int] = (),
                      cells: Sequence[tuple[int, int]] = ()) -> None:
        """Outline rows, columns or cells (the explain panel uses this to show where a number comes from)."""
        new = (tuple(rows), tuple(cols), tuple(cells))
        old = (self.overlay.highlight_rows, self.overlay.highlight_cols, self.overlay.highlight_cells)
        if new != old:
            self.overlay.highlight_rows, self.overlay.highlight_cols, self.overlay.highlight_cells = new
            self.overlay.update()

    def set_selected(self, cell: tuple[int, int] | None) -> None:
        if cell != self.overlay.selected:
            self.overlay.selected = cell
            self.overlay.update()

    @property
    def paint_count(self) -> int:
        """How many times the cells were painted (the benchmark waits on it)."""
        return self.overlay.paint_count

    # ---------------------------------------------------------------- theme
    def apply_theme(self, dark: bool) -> None:
        self._dark = dark
        bg = "#1e1f22" if dark else "#ffffff"
        fg = "#dddddd" if dark else "#222222"
        self.graphics.setBackground(bg)
        for name in ("left", "bottom", "right", "top"):
            ax = self.plot.getAxis(name)
            ax.setPen(pg.mkPen(fg))
            ax.setTextPen(pg.mkPen(fg))
        self.colorbar.axis.setPen(pg.mkPen(fg))
        self.colorbar.axis.setTextPen(pg.mkPen(fg))
        if self._title:
            self.set_title(self._title)
        if self._row_title:
            self.plot.setLabel("left", self._row_title)
        if self._col_title:
            self.plot.setLabel("bottom", self._col_title)

    # ---------------------------------------------------------------- ticks
    def _update_ticks(self) -> None:
        rows = self._row_labels
        cols = self._col_labels
        fm = QFontMetricsF(self.font())
        width = max(self.plot.getViewBox().width(), 60.0)
        height = max(self.plot.getViewBox().height(), 60.0)
        per_col = width / max(len(cols), 1)
        # narrow cells: a smaller key font (down to MIN_TICK_PT) before shortening or skipping any label
        col_font = QFont(self.font())
        base_pt = col_font.pointSizeF() if col_font.pointSizeF() > 0 else 9.0
        col_fm = fm
        pt = base_pt
        while True:
            col_w = max((col_fm.horizontalAdvance(elide(c)) for c in cols), default=10.0) + 3
            if col_w <= per_col or pt - 1 < MIN_TICK_PT:
                break
            pt -= 1
            col_font.setPointSizeF(pt)
            col_fm = QFontMetricsF(col_font)
        if pt != self._col_tick_pt:
            self._col_tick_pt = pt
            self.plot.getAxis("bottom").setStyle(tickFont=col_font if pt != base_pt else None)
        fm_cols = col_fm
        stride_c = max(1, math.ceil(col_w / per_col))
        col_text = [elide(c) for c in cols]
        if stride_c > 1 and per_col - 5 >= fm_cols.horizontalAdvance("ab…"):
            # every key keeps a label: shorten them ("because" -> "bec…") rather than skip some
            col_text = [fm_cols.elidedText(c, Qt.TextElideMode.ElideRight, per_col - 5) for c in cols]
            stride_c = 1
        stride_r = max(1, math.ceil((fm.height() + 2) / (height / max(len(rows), 1))))
        self.plot.getAxis("bottom").setTicks(
            [[(j + 0.5, t) for j, t in enumerate(col_text) if j % stride_c == 0], []])
        self.plot.getAxis("left").setTicks(
            [[(i + 0.5, elide(r)) for i, r in enumerate(rows) if i % stride_r == 0], []])
        self._stride_r = stride_r
        right = self.plot.getAxis("right")
        right.setStyle(showValues=self._row_sums)
        if not self._row_sums:
            right.setTicks([[], []])

    def _update_row_sums(self) -> None:
        sums = self._values.sum(axis=1) if self._values.size else np.zeros(0)
        stride = getattr(self, "_stride_r", 1)
        ticks = []
        for i, s in enumerate(sums.tolist()):
            if i % stride:
                continue
            if self._blocked is not None and self._blocked[i].all():
                ticks.append((i + 0.5, "Σ 0 ⚠ all blocked"))
            else:
                ticks.append((i + 0.5, f"Σ {s:.3f}"))
        self.plot.getAxis("right").setTicks([ticks, []])

    def _on_view_resized(self, *_args: Any) -> None:
        """Tick strides depend on the cells' size in pixels, known only once pyqtgraph has laid the plot out."""
        size = (round(self.plot.getViewBox().width()), round(self.plot.getViewBox().height()))
        if size != getattr(self, "_tick_size", None) and (self._row_labels or self._col_labels):
            self._tick_size = size
            self._update_ticks()
            if self._row_sums:
                self._update_row_sums()

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        if self._row_labels or self._col_labels:
            self._update_ticks()
            if self._row_sums:
                self._update_row_sums()

    # ---------------------------------------------------------------- mouse and keys
    def cell_at_scene(self, scene_pos: QPointF) -> tuple[int, int]:
        """(row, col) under a scene position, or (-1, -1) outside the cells."""
        vb = self.plot.getViewBox()
        if not vb.sceneBoundingRect().contains(scene_pos):
            return -1, -1
        p = vb.mapSceneToView(scene_pos)
        rows, cols = self._values.shape
        i, j = math.floor(p.y()), math.floor(p.x())
        if 0 <= i < rows and 0 <= j < cols:
            return i, j
        return -1, -1

    def cell_center_scene(self, row: int, col: int) -> QPointF:
        """Scene position of a cell's centre (tests use it to simulate the mouse)."""
        return self.plot.getViewBox().mapViewToScene(QPointF(col + 0.5, row + 0.5))

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        cell = self.cell_at_scene(scene_pos)
        if cell != self._hover:
            self._hover = cell
            self.cellHovered.emit(*cell)

    def _on_mouse_clicked(self, event: Any) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        cell = self.cell_at_scene(event.scenePos())
        if cell != (-1, -1):
            self._current = cell
            self.setFocus(Qt.FocusReason.MouseFocusReason)
            self.cellClicked.emit(*cell)

    def leaveEvent(self, event: Any) -> None:  # noqa: N802
        super().leaveEvent(event)
        if self._hover != (-1, -1):
            self._hover = (-1, -1)
            self.cellHovered.emit(-1, -1)

    def keyPressEvent(self, event: Any) -> None:  # noqa: N802
        rows, cols = self._values.shape
        if rows == 0 or cols == 0:
            return super().keyPressEvent(event)
        moves = {Qt.Key.Key_Left: (0, -1), Qt.Key.Key_Right: (0, 1), Qt.Key.Key_Up: (-1, 0),
                 Qt.Key.Key_Down: (1, 0)}
        key = event.key()
        if key in moves or key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            i, j = self._current if self._current is not None else (0, 0)
            if key in moves:
                di, dj = moves[key]
                if self._current is not None:
                    i, j = min(max(i + di, 0), rows - 1), min(max(j + dj, 0), cols - 1)
            self._current = (i, j)
            self.cellClicked.emit(i, j)
            return
        if key == Qt.Key.Key_Menu:
            self._show_context_menu(self.graphics.rect().center())
            return
        super().keyPressEvent(event)

    # ---------------------------------------------------------------- export
    def context_menu(self) -> QMenu:
        """The right-click menu (built on demand; tests trigger its actions)."""
        menu = QMenu(self)
        for fmt, text in (("png", "Export PNG image…"), ("svg", "Export SVG image…"), ("csv", "Export CSV numbers…")):
            act = menu.addAction(text)
            act.setData(fmt)
            act.triggered.connect(lambda _checked=False, f=fmt: self.export_dialog(f))
        return menu

    def _show_context_menu(self, pos: Any) -> None:
        if self._values.size == 0:
            return
        self.context_menu().exec(self.graphics.mapToGlobal(pos))

    def suggested_filename(self, fmt: str) -> str:
        base = "".join(ch if ch.isalnum() else "-" for ch in (self._title or "heatmap").split("  ")[0].lower())
        base = "-".join(part for part in base.split("-") if part) or "heatmap"
        return f"{base}.{fmt}"

    def export_dialog(self, fmt: str) -> str | None:
        """Ask for a file name and export; returns the path written (None if cancelled)."""
        start = str(Path(self.export_dir) / self.suggested_filename(fmt)) if self.export_dir else \
            self.suggested_filename(fmt)
        filters = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "csv": "CSV numbers (*.csv)"}
        path, _ = QFileDialog.getSaveFileName(self, f"Export {fmt.upper()}", start, filters[fmt])
        if not path:
            return None
        if not path.lower().endswith("." + fmt):
            path += "." + fmt
        self.export(path)
        return path

    def export(self, path: str | Path) -> None:
        """Write this heatmap's data as PNG, SVG or CSV (by suffix), through ``app.export.export_heatmap``."""
        from ..export import export_heatmap

        export_heatmap(path, self._values, self._row_labels, self._col_labels, self._title or "heatmap",
                       blocked=self._blocked, kind=self._kind, row_title=self._row_title,
                       col_title=self._col_title, col_groups=self.overlay.col_groups)
        self.exported.emit(str(path))
