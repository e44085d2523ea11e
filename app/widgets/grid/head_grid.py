"""A layer x head grid of attention maps for one probe sequence, sharing one colour bar.

Each head shows its (T-1 x T-1) map (queries as rows, keys as columns, token labels on the axes), the cells the
causal mask blocks (grey hatching), the causal boundary, and optionally the task's ideal pattern: circles on the
cells where a head that solves the task puts its weight (``set_maps(ideal=...)``, computed by the models; without
it, reversal's anti-diagonal: query L+p, key L-1-p). Under each map: the head's task score (its short name, e.g.
"rev"), entropy and focus as numbers, and a sparkline of task score and focus over the steps so far.

One pyqtgraph scene holds every map (cheap to redraw at 30 fps); one ``ColorBarItem`` with fixed levels [0, 1]
drives all images, so equal colours mean equal weights across heads. Clicking a map emits ``headClicked``.
It follows the theme (``follow_theme``): everything around the maps; the maps keep their colours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.grid.fit import fit_to_view
from app.widgets.grid.overlay import MapOverlay
from app.widgets.heatmap.style import colormap, let_title_overflow
from app.widgets.theme import LIGHT, ThemeColors, colors_for, follow_theme, span, style_label, style_plot, style_view
from attention_core.masks import causal_mask


class _Cell:
    """The items of one head: map plot, image, overlay, stats label, sparkline."""

    def __init__(self, layer: int, head: int, colors: ThemeColors) -> None:
        self.layer, self.head = layer, head
        self.plot = pg.PlotItem(enableMenu=False)  # no context menus to build: half a map's build time
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.invertY(True)
        vb = self.plot.getViewBox()
        vb.setDefaultPadding(0.0)
        vb.enableAutoRange(enable=False)
        vb.setAspectLocked(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.overlay = MapOverlay()
        self.plot.addItem(self.overlay)
        self.tick_font = font = QFont()
        font.setPointSizeF(7.0)
        self._strides: tuple[int, int] | None = None  # the labels' strides on (bottom, left) now
        for name in ("left", "bottom"):
            ax = self.plot.getAxis(name)
            ax.setStyle(tickLength=0, hideOverlappingLabels=True, tickTextOffset=2,
                        textFillLimits=[(0, 0.55)])
            ax.setTickFont(font)
        if head > 0:  # query labels only on the first column: the maps get the room
            self.plot.hideAxis("left")
        self.plot.setMinimumSize(60, 60)
        self.stats = pg.LabelItem(justify="center", size="8pt")
        let_title_overflow(self.stats)  # its text width was each column's minimum: 4 heads needed ~590 px
        self.compact = False  # narrow maps: the numbers on three short lines instead of two long ones
        self.spark = pg.PlotItem()
        self.spark.setMenuEnabled(False)
        self.spark.setMouseEnabled(x=False, y=False)
        self.spark.hideButtons()
        self.spark.hideAxis("left")
        self.spark.hideAxis("bottom")
        self.spark.setYRange(0, 1.05, padding=0)
        self.spark.setMaximumHeight(34)
        self.spark.setMinimumHeight(22)
        self.rev_curve = self.spark.plot()
        self.focus_curve = self.spark.plot()
        self.cursor_line = pg.InfiniteLine(angle=90, pen=pg.mkPen((128, 128, 128), width=1))
        self.spark.addItem(self.cursor_line)
        self.values = np.zeros((0, 0))
        self.labels: list[str] = []
        vb.sigTransformChanged.connect(lambda _vb: self.fit_ticks())  # resized, or its range set
        self.stats_text = ""
        self.numbers: tuple[float, float, float] | None = None  # task score, entropy, focus under the map
        self.score_name = "rev"
        self.joined = True
        self.set_colors(colors)
        # before any data: an empty square without numeric ticks (they would mean nothing)
        for name in ("left", "bottom"):
            self.plot.getAxis(name).setTicks([[], []])
        self.plot.getViewBox().setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
        self.spark.setXRange(0, 1, padding=0)

    def fit_ticks(self) -> None:
        """Token labels along each axis, every ``stride``-th one, the stride the map's size leaves room for (1, 2,
        4, …): a fixed first level of every 4th label ran together on small maps ("466")."""
        n = len(self.labels)
        if not n:
            return
        fm = QFontMetricsF(self.tick_font)
        needs = (max(fm.horizontalAdvance(t) for t in self.labels) + 4.0, fm.height())
        px_x, px_y = self.plot.getViewBox().viewPixelSize()  # a cell's side is 1: 1 / (cell per pixel) pixels
        strides = []
        for need, cell in zip(needs, (1.0 / max(px_x, 1e-9), 1.0 / max(px_y, 1e-9)), strict=True):
            stride = 1
            while stride < n and stride * cell < need:
                stride *= 2
            strides.append(stride)
        if tuple(strides) != self._strides:
            self._strides = (strides[0], strides[1])
            ticks = [(i + 0.5, str(t)) for i, t in enumerate(self.labels)]
            self.plot.getAxis("bottom").setTicks([ticks[0::strides[0]]])
            self.plot.getAxis("left").setTicks([ticks[0::strides[1]]])

    def set_colors(self, c: ThemeColors) -> None:
        """Axes, title, numbers and sparkline in the theme's colours (the map's colours never change)."""
        self.colors = c
        style_plot(self.plot, c)
        self.spark.getViewBox().setBackgroundColor(QColor(c.spark_bg))
        self.pens = {"rev": pg.mkPen(c.orange, width=1.6), "focus": pg.mkPen(c.blue, width=1.2)}
        self.set_joined(self.joined, force=True)
        style_label(self.stats, c.muted)
        self.show_numbers(self.numbers)

    def set_joined(self, joined: bool, force: bool = False) -> None:
        """Lines through the recorded points, or (a model loaded without its history) the points only. Restyling
        16 curves cost ~4 ms of the GUI thread per sparkline redraw during a run: done only on a change."""
        if joined == self.joined and not force:
            return
        self.joined = joined
        for curve, key, colour in ((self.rev_curve, "rev", self.colors.orange),
                                   (self.focus_curve, "focus", self.colors.blue)):
            curve.setPen(self.pens[key] if joined else None)
            curve.setSymbol(None if joined else "o")
            curve.setSymbolSize(5)
            curve.setSymbolBrush(colour)
            curve.setSymbolPen(None)

    def show_numbers(self, numbers: tuple[float, float, float] | None) -> None:
        self.numbers = numbers
        if numbers is None:
            return
        c, (rev, ent, foc) = self.colors, numbers
        sep = "<br>" if self.compact else " · "
        rev_focus = f"{span(f'{self.score_name} {rev:.2f}', c.orange)}{sep}{span(f'focus {foc:.2f}', c.blue)}"
        text = f"{rev_focus}<br>entropy {ent:.2f}{'' if self.compact else ' nats'}"
        if text != self.stats_text:
            self.stats_text = text
            self.stats.setText(text, size="7pt" if self.compact else "8pt")  # 8 pt overlapped at ~75 px a map


class HeadGrid(QWidget):
    """Layer x head attention maps for the probe. ``values(layer, head)`` returns exactly what is shown.

    Signals: ``headClicked(layer, head)`` (left click on a map, 0-based); ``cellHovered(layer, head, query,
    key)`` (-1s when the pointer leaves every map).
    """

    headClicked = Signal(int, int)
    cellHovered = Signal(int, int, int, int)

    def __init__(self, parent: QWidget | None = None, dark: bool | None = None) -> None:
        """``dark``: None follows the application's theme; True or False is fixed (a grid made for a film)."""
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.graphics = pg.GraphicsLayoutWidget()
        self._colors = LIGHT
        style_view(self.graphics, self._colors)
        self.graphics.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        layout.addWidget(self.graphics)
        self._cells: dict[tuple[int, int], _Cell] = {}
        self._shape = (0, 0)
        self._seq_len = 0
        self._causal = True
        self._show_marks = True
        self._disabled: set[tuple[int, int]] = set()
        self._hover = (-1, -1, -1, -1)
        self._short_titles = False
        self.colorbar: pg.ColorBarItem | None = None
        self._placeholder: pg.LabelItem | None = None
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.graphics.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(colors_for(dark))

    # --- structure ---------------------------------------------------------------------------------------------
    def show_message(self, text: str) -> None:
        """Replace the grid by a one-line message (before any model exists)."""
        self.graphics.clear()
        self._cells.clear()
        self._shape = (0, 0)
        self.colorbar = None
        self._placeholder = self.graphics.addLabel(text, size="11pt", color=self._colors.muted)
        fit_to_view(self.graphics)

    def _restyle(self, c: ThemeColors) -> None:
        """The theme: background, axes, titles, numbers, sparklines and colour bar (not the maps' colours)."""
        self._colors = c
        style_view(self.graphics, c)
        for cell in self._cells.values():
            cell.set_colors(c)
        if self.colorbar is not None:
            style_plot(self.colorbar, c)
        if self._placeholder is not None:
            style_label(self._placeholder, c.muted)
        self._retitle()

    def set_shape(self, layers: int, heads: int) -> None:
        """Rebuild the grid for a model with this many layers and heads (no-op when unchanged)."""
        if (layers, heads) == self._shape:
            return
        self.graphics.clear()
        self._cells.clear()
        self._placeholder = None
        gl = self.graphics.ci
        gl.setSpacing(2)
        for li in range(layers):
            for h in range(heads):
                c = _Cell(li, h, self._colors)
                self._cells[(li, h)] = c
                gl.addItem(c.plot, row=3 * li, col=h)
                gl.addItem(c.stats, row=3 * li + 1, col=h)
                gl.addItem(c.spark, row=3 * li + 2, col=h)
        for li in range(layers):
            gl.layout.setRowStretchFactor(3 * li, 10)
            gl.layout.setRowStretchFactor(3 * li + 1, 0)
            gl.layout.setRowStretchFactor(3 * li + 2, 1)
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=colormap("weights"), interactive=False,
                                        width=12, colorMapMenu=False, label="attention weight")
        self.colorbar.setImageItem([c.image for c in self._cells.values()])
        style_plot(self.colorbar, self._colors)
        gl.addItem(self.colorbar, row=0, col=heads, rowspan=3 * layers)
        self._shape = (layers, heads)
        self._short_titles = self._titles_must_shorten()
        self._retitle()
        self._apply_disabled()
        fit_to_view(self.graphics)  # a narrow column shows the whole grid, smaller (app/widgets/grid/fit.py)

    SHORT_TITLES_BELOW = 125
    """Map width (px) under which titles shorten to "L1 · H2": "layer 1 · head 2" needs ~115 px at 9 pt and
    neighbouring titles ran into each other in a narrow window."""

    def _title(self, layer: int, head: int, off: bool = False) -> str:
        # same length when off: a longer title widens the column
        text = f"L{layer + 1} · H{head + 1}" if self._short_titles else f"layer {layer + 1} · head {head + 1}"
        return span(text, self._colors.bad) if off else text

    def _titles_must_shorten(self) -> bool:
        return self.width() / (max(self._shape[1], 1) + 0.4) < self.SHORT_TITLES_BELOW  # colour bar ≈ 0.4 column

    def _retitle(self) -> None:
        for (li, h), c in self._cells.items():
            c.plot.setTitle(self._title(li, h, (li, h) in self._disabled), size="9pt")
            if c.compact != self._short_titles:  # the numbers under the map follow the titles' width
                c.compact = self._short_titles
                c.show_numbers(c.numbers)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        short = self._titles_must_shorten()
        if short != self._short_titles:
            self._short_titles = short
            self._retitle()
        fit_to_view(self.graphics)

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    # --- data ----------------------------------------------------------------------------------------------------
    def set_maps(self, weights: Sequence[np.ndarray], labels: Sequence[str], *, seq_len: int, causal: bool,
                 reversal: np.ndarray | None = None, entropy: np.ndarray | None = None,
                 focus: np.ndarray | None = None, ideal: np.ndarray | None = None, score_name: str = "rev") -> None:
        """Show per-layer (H, T-1, T-1) maps with token labels; the per-head numbers go under each map
        (``reversal``: the task's head score, named ``score_name``). ``ideal``: (T-1, T-1) bool, the task's ideal
        pattern for this probe (circled); None = reversal's anti-diagonal."""
        layers, heads = len(weights), int(weights[0].shape[0])
        self.set_shape(layers, heads)
        n = int(weights[0].shape[-1])
        blocked = ~causal_mask(n) if causal else None
        if ideal is not None and np.shape(ideal) == (n, n):
            marks = [(int(q), int(k)) for q, k in zip(*np.nonzero(ideal))]
        else:
            marks = [(seq_len + p, seq_len - 1 - p) for p in range(seq_len) if seq_len + p < n]
        geometry_changed = n != 2 * self._seq_len or causal != self._causal
        self._seq_len, self._causal = seq_len, causal
        for (li, h), c in self._cells.items():
            vals = np.asarray(weights[li][h], dtype=np.float64)
            c.values = vals.copy()
            c.image.setImage(vals, autoLevels=False, levels=(0.0, 1.0))
            if geometry_changed or c.image.width() != n:
                c.image.setRect(QRectF(0, 0, n, n))
                c.plot.getViewBox().setRange(xRange=(0, n), yRange=(0, n), padding=0)
            c.overlay.set_content(n, blocked, marks)
            c.overlay.show_marks = self._show_marks
            if list(labels) != c.labels:  # as many as fit the map's size (``fit_ticks``, again on resize)
                c.labels, c._strides = [str(t) for t in labels], None
                c.fit_ticks()
            c.score_name = score_name
            if reversal is not None and entropy is not None and focus is not None:
                c.show_numbers((float(reversal[li, h]), float(entropy[li, h]), float(focus[li, h])))

    def set_sparkline_cursor(self, step: float) -> None:
        """Move the step marker of every sparkline (the step the maps show)."""
        for c in self._cells.values():
            if c.cursor_line.value() != step:
                c.cursor_line.setValue(step)

    def set_sparklines(self, steps: np.ndarray, reversal: np.ndarray, focus: np.ndarray,
                       cursor_step: float | None = None, max_step: float | None = None, joined: bool = True) -> None:
        """Task score and focus per head over ``steps``: arrays (n, layers, heads). ``joined=False`` (a
        model loaded without its history): only the recorded points are drawn, never a line invented between."""
        for (li, h), c in self._cells.items():
            c.set_joined(joined)
            if len(steps) and reversal.ndim == 3 and li < reversal.shape[1] and h < reversal.shape[2]:
                c.rev_curve.setData(steps, reversal[:, li, h])
                c.focus_curve.setData(steps, focus[:, li, h])
            else:
                c.rev_curve.setData([], [])
                c.focus_curve.setData([], [])
            hi = max(1.0, float(max_step if max_step is not None else (steps[-1] if len(steps) else 1.0)))
            c.spark.setXRange(0, hi, padding=0.02)
            if cursor_step is not None:
                c.cursor_line.setValue(cursor_step)

    def values(self, layer: int, head: int) -> np.ndarray:
        """The map currently displayed for this head (a copy)."""
        return self._cells[(layer, head)].values.copy()

    def labels(self) -> list[str]:
        return list(next(iter(self._cells.values())).labels) if self._cells else []

    def stats_text(self, layer: int, head: int) -> str:
        return self._cells[(layer, head)].stats_text

    def marks(self, layer: int, head: int) -> list[tuple[int, int]]:
        """The (query, key) cells circled as the ideal pattern on this head's map."""
        return list(self._cells[(layer, head)].overlay.marks)

    def set_show_ideal(self, show: bool) -> None:
        """Show or hide the ideal pattern's markers."""
        self._show_marks = bool(show)
        for c in self._cells.values():
            c.overlay.show_marks = self._show_marks
            c.overlay.update()

    def set_highlight_row(self, row: int | None) -> None:
        for c in self._cells.values():
            c.overlay.highlight_row = row
            c.overlay.update()

    def set_disabled_heads(self, heads: set[tuple[int, int]]) -> None:
        """Grey out and label the heads that are switched off (ablated)."""
        self._disabled = set(heads)
        self._apply_disabled()

    def _apply_disabled(self) -> None:
        for (li, h), c in self._cells.items():
            off = (li, h) in self._disabled
            if c.overlay.disabled != off:
                c.overlay.disabled = off
                c.overlay.update()
                c.plot.setTitle(self._title(li, h, off), size="9pt")

    def map_item(self, layer: int, head: int) -> pg.PlotItem:
        return self._cells[(layer, head)].plot

    # --- mouse ---------------------------------------------------------------------------------------------------
    def head_at(self, scene_pos: QPointF) -> tuple[int, int, int, int]:
        """(layer, head, query, key) under a scene position, or -1s."""
        for (li, h), c in self._cells.items():
            vb = c.plot.getViewBox()
            if vb.sceneBoundingRect().contains(scene_pos):
                p = vb.mapSceneToView(scene_pos)
                n = c.values.shape[0]
                k, q = int(np.floor(p.x())), int(np.floor(p.y()))
                if 0 <= q < n and 0 <= k < n:
                    return li, h, q, k
                return li, h, -1, -1
        return -1, -1, -1, -1

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        hit = self.head_at(scene_pos)
        if hit != self._hover:
            self._hover = hit
            self.cellHovered.emit(*hit)

    def _on_mouse_clicked(self, event: Any) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        li, h, _, _ = self.head_at(event.scenePos())
        if li >= 0:
            event.accept()
            self.headClicked.emit(li, h)

    def leaveEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        if self._hover != (-1, -1, -1, -1):
            self._hover = (-1, -1, -1, -1)
            self.cellHovered.emit(-1, -1, -1, -1)
        super().leaveEvent(event)
