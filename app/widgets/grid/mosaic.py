"""Every head of a real model as one mosaic: the layer × head attention maps tiled into a single image in a single
plot, with the causal mask's blocked cells hatched, layers labelled down the side and heads along the top.

A real model has 144 heads (GPT-2 small) to 1,024 (a 7B Llama); one pyqtgraph plot per head, as the Training tab's
``HeadGrid`` draws its 8, took 1.4–3 s to build and ~200 ms to repaint for 144. One image and one overlay build at
once and repaint in tens of milliseconds, whatever the count. The signals and readers are ``HeadGrid``'s
(``headClicked``, ``cellHovered``, ``values``, ``shape``, ``show_message``; both follow the theme), so a view can
use either.
Layers and heads are labelled from ``first_index`` (0 for real models, as the papers count).

The image is coloured here, once per ``set_maps``, with numpy lookups (``colour_layers``): handed pyqtgraph a float
tile with NaN gaps, its render took 180-250 ms for a 4,096-token trace's 336 maps of 128 x 128 blocks (a
7.5-million-pixel tile through its NaN path, "expected to be small", and its LUT), the longest stall of the Model tab
when the trace arrived. The colours are pyqtgraph's own (the same index per value, the same colour table), the gaps
transparent as its NaNs were (tests/widgets/test_mosaic_colours.py compares the pixels). A long trace's image is
filled a band of layers per event-loop turn (``progressive``, ``BAND_LAYERS``): the memory it is written into is
new, and touching 30 MB of new memory at once took up to 170 ms of system time on the shared VM.
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.heatmap.style import colormap
from app.widgets.theme import LIGHT, ThemeColors, colors_for, follow_theme, style_plot, style_view

GAP = 0.18
"""The space between two maps, as a share of a map's side (at least one cell)."""


def gap_cells(n: int) -> int:
    return max(1, round(n * GAP))


def colour_table() -> np.ndarray:
    """The weights' 256 colours as RGBA packed into uint32 (the colour bar's map, as pyqtgraph samples it)."""
    lut = np.ascontiguousarray(colormap("weights").getLookupTable(nPts=256, alpha=True), dtype=np.uint8)
    return lut.view(np.uint32).ravel()


HUGE_PAGE_BYTES = 1 << 22
"""numpy asks the kernel to back an array of 4 MiB or more with 2 MB pages (``madvise``); faulting in a fresh one
cost ~3 ms on the shared 2-core VM, and the mosaic's 130 MB of arrays 180-210 ms of system time on the GUI thread
when a 4,096-token trace arrived (9 ms in 4 KB pages). The colouring works a layer at a time in buffers under this
size and writes the image into plain memory."""
BAND_LAYERS = 2
"""Layers coloured per event-loop turn by a progressive ``set_maps``. Even in 4 KB pages, the first touch of the
30 MB image of a 4,096-token trace took 9-170 ms of system time (it varies with how the VM's memory was used last),
so a long trace's image is filled a band of layers a turn, each band touching its own rows only."""


def pixels(rows: int, cols: int) -> np.ndarray:
    """A transparent (rows, cols) RGBA image as uint32, in an anonymous mapping: zero pages the kernel hands out
    as each row is first written (no huge pages asked for, nothing touched here)."""
    return np.frombuffer(mmap.mmap(-1, max(rows * cols * 4, 4)), dtype=np.uint32)[:rows * cols].reshape(rows, cols)


def colour_layers(weights: np.ndarray, table: np.ndarray, out: np.ndarray, layers: range) -> None:
    """Write ``layers`` of (layers, heads, n, n) weights into ``out`` (``pixels``' uint32 image) at their tiles.
    The index per value is pyqtgraph's for levels (0, 1) and a 256-colour table (``rescaleData`` in float32: scale
    by 256, clip to 0 … 255, truncate); a NaN is transparent, as pyqtgraph drew it. One layer at a time, in
    buffers reused (under ``HUGE_PAGE_BYTES`` for a real model's layer)."""
    _, heads, n, _ = weights.shape
    step = n + gap_cells(n)
    scaled = np.empty((heads, n, n), dtype=np.float32)
    index = np.empty((heads, n, n), dtype=np.uint8)
    colours = np.empty((heads, n, n), dtype=np.uint32)
    for li in layers:
        np.multiply(weights[li], np.float32(256), out=scaled)
        np.clip(scaled, 0, 255, out=scaled)
        with np.errstate(invalid="ignore"):  # a NaN's index is meaningless: it is made transparent below
            index[...] = scaled
        np.take(table, index, out=colours)
        nan = np.isnan(weights[li])
        if nan.any():
            colours[nan] = 0
        band = out[li * step:li * step + n]
        for h in range(heads):
            band[:, h * step:h * step + n] = colours[h]


def image_size(shape: Sequence[int]) -> tuple[int, int]:
    """(rows, columns) of the mosaic of (layers, heads, n, n) maps, gaps between them."""
    layers, heads, n = int(shape[0]), int(shape[1]), int(shape[2])
    g = gap_cells(n)
    return layers * (n + g) - g, heads * (n + g) - g


def mosaic_colours(weights: np.ndarray, table: np.ndarray) -> np.ndarray:
    """(layers, heads, n, n) weights in [0, 1] as the whole mosaic's RGBA image, (rows, columns, 4) uint8,
    C-contiguous: each map at its tile, the gaps between maps (and any NaN) transparent."""
    w = np.asarray(weights, dtype=np.float32)
    out = pixels(*image_size(w.shape))
    colour_layers(w, table, out, range(w.shape[0]))
    return out.view(np.uint8).reshape(*out.shape, 4)


class MosaicOverlay(pg.GraphicsObject):
    """What is painted over the mosaic, in data coordinates: the blocked (future) triangle of every map, hatched;
    an outline around the picked head and around ``marked`` heads (e.g. detected ones); "off" heads greyed."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = self.heads = self.n = self.step = 0
        self.causal = True
        self.picked: tuple[int, int] | None = None
        self.marked: set[tuple[int, int]] = set()
        self.off: set[tuple[int, int]] = set()
        self._hatch = QBrush(QColor(140, 140, 140), Qt.BrushStyle.BDiagPattern)
        self._fill = QColor(228, 228, 228)

    def set_geometry(self, layers: int, heads: int, n: int, causal: bool) -> None:
        self.prepareGeometryChange()
        self.layers, self.heads, self.n, self.causal = layers, heads, n, causal
        self.step = n + gap_cells(n)
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        return QRectF(0, 0, max(self.heads * self.step, 1), max(self.layers * self.step, 1))

    def origin(self, layer: int, head: int) -> tuple[float, float]:
        return head * self.step, layer * self.step

    def paint(self, p: QPainter, *args: Any) -> None:
        if self.n == 0:
            return
        n = self.n
        cell_px = abs(p.transform().m11())
        if self.causal:
            blocked = QPainterPath()
            for li in range(self.layers):
                for h in range(self.heads):
                    x, y = self.origin(li, h)
                    # key k > query q is the future: (1,0) → (n,0) → (n,n−1), then down the staircase to (1,0)
                    blocked.moveTo(x + 1, y)
                    blocked.lineTo(x + n, y)
                    blocked.lineTo(x + n, y + n - 1)
                    if cell_px >= 3:  # the staircase shows; below 3 px a cell a straight edge draws the same
                        for q in range(n - 1, 0, -1):
                            blocked.lineTo(x + q, y + q)
                            blocked.lineTo(x + q, y + q - 1)
                    blocked.closeSubpath()
            p.fillPath(blocked, self._fill)
            p.save()  # the hatching in screen pixels: a pattern in data units would scale with the zoom
            device = p.transform().map(blocked)
            p.resetTransform()
            p.fillPath(device, self._hatch)
            p.restore()
        p.setBrush(Qt.BrushStyle.NoBrush)
        for heads, colour, width in ((self.off, QColor(200, 0, 0), 2.0), (self.marked, QColor(0, 150, 255), 2.0)):
            p.setPen(QPen(colour, width / max(cell_px, 1e-6)))
            for li, h in heads:
                x, y = self.origin(li, h)
                p.drawRect(QRectF(x, y, n, n))
        for li, h in self.off:
            x, y = self.origin(li, h)
            p.fillRect(QRectF(x, y, n, n), QColor(255, 255, 255, 170))
        if self.picked is not None:
            x, y = self.origin(*self.picked)
            p.setPen(QPen(QColor(255, 0, 200), 3.0 / max(cell_px, 1e-6)))
            p.drawRect(QRectF(x, y, n, n))


class MosaicGrid(QWidget):
    """The layer × head maps of one text as a mosaic (see the module docstring)."""

    headClicked = Signal(int, int)
    cellHovered = Signal(int, int, int, int)  # layer, head, query, key; -1s off the maps

    def __init__(self, parent: QWidget | None = None, *, first_index: int = 0, dark: bool | None = None) -> None:
        super().__init__(parent)
        self.first_index = first_index
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.graphics = pg.GraphicsLayoutWidget()
        self._colors = LIGHT
        style_view(self.graphics, self._colors)
        layout.addWidget(self.graphics)
        self.plot = pg.PlotItem(enableMenu=False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.invertY(True)
        self.plot.showAxis("top")
        self.plot.hideAxis("bottom")
        for name in ("left", "top"):  # no maps yet: no numbers (pyqtgraph's -0.3 … 1.3 meant nothing); L/H names later
            self.plot.getAxis(name).setTicks([[]])
        vb = self.plot.getViewBox()
        vb.setDefaultPadding(0.0)
        vb.setAspectLocked(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.overlay = MosaicOverlay()
        self.plot.addItem(self.overlay)
        # the bar shows the map the image is coloured with; it is not linked to the image, which holds colours
        # already (a linked bar would give it levels and a colour table to apply again)
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=colormap("weights"), interactive=False,
                                        width=12, colorMapMenu=False, label="attention weight")
        self._table = colour_table()
        self._pixels = pixels(0, 0)
        self._left = range(0)  # layers still to colour
        self._next_band = QTimer(self)
        self._next_band.setSingleShot(True)
        self._next_band.setInterval(0)  # the next turn of the event loop: paints and input come between bands
        self._next_band.timeout.connect(self._colour_next)
        self.message = pg.LabelItem("")
        self.graphics.ci.addItem(self.message, row=0, col=0, colspan=2)
        self.graphics.ci.addItem(self.plot, row=1, col=0)
        self.graphics.ci.addItem(self.colorbar, row=1, col=1)
        self.weights: np.ndarray = np.zeros((0, 0, 0, 0), dtype=np.float32)
        self.labels_: list[str] = []
        self._hover = (-1, -1, -1, -1)
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.graphics.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(colors_for(dark))

    # ------------------------------------------------------------------ data
    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.weights.shape[0]), int(self.weights.shape[1])) if self.weights.ndim == 4 else (0, 0)

    def show_message(self, text: str) -> None:
        self.message.setText(text)

    def set_maps(self, weights: Any, labels: Sequence[str], *, causal: bool, progressive: bool = False) -> None:
        """Show (layers, heads, T, T) weights; ``labels``: the T tokens (for hover read-outs). The weights are kept
        (not copied) until the next call: the caller does not change them meanwhile. ``progressive``: colour
        ``BAND_LAYERS`` layers now and the rest one band per event-loop turn (``colouring`` says whether any is
        left); the old maps are gone at once, the new ones appear band by band, the read-outs are whole at once."""
        # read later by the hover read-outs and ``values``: kept, not copied (a long trace's maps are 22 MB; a
        # trace's arrays are never written), and read-only through the grid
        w = np.asarray(weights, dtype=np.float32).view()
        w.flags.writeable = False
        layers, heads, n, _ = w.shape
        g = gap_cells(n)
        rows, cols = image_size(w.shape)
        self._pixels = pixels(rows, cols)  # transparent until coloured
        self.weights, self.labels_ = w, list(labels)
        self._left = range(layers)
        self._colour_band(BAND_LAYERS if progressive else layers)
        self.image.setImage(self._pixels.view(np.uint8).reshape(rows, cols, 4), autoLevels=False)  # wraps them
        self.image.setRect(QRectF(0, 0, cols, rows))
        self.overlay.set_geometry(layers, heads, n, causal)
        step = n + g
        f = self.first_index
        self.plot.getAxis("left").setTicks([[(li * step + n / 2, f"L{li + f}") for li in range(layers)]])
        self.plot.getAxis("top").setTicks([[(h * step + n / 2, f"H{h + f}") for h in range(heads)]])
        self.plot.getViewBox().setRange(xRange=(0, cols), yRange=(0, rows), padding=0.01)
        self.message.setText("")

    @property
    def colouring(self) -> bool:
        """Whether layers of the maps shown are still to be coloured (a progressive ``set_maps``)."""
        return len(self._left) > 0

    def _colour_band(self, count: int) -> None:
        band, self._left = self._left[:count], self._left[count:]
        colour_layers(self.weights, self._table, self._pixels, band)
        if self._left:
            self._next_band.start()

    def _colour_next(self) -> None:
        if self._left:
            self._colour_band(BAND_LAYERS)
            self.image.update()  # the image wraps ``_pixels``: the new band shows at the next paint

    def values(self, layer: int, head: int) -> np.ndarray:
        """The map shown for this head (a copy)."""
        return np.asarray(self.weights[layer, head], dtype=np.float64)

    def labels(self) -> list[str]:
        return list(self.labels_)

    def set_picked(self, head: tuple[int, int] | None) -> None:
        self.overlay.picked = head
        self.overlay.update()

    def set_marked(self, heads: set[tuple[int, int]]) -> None:
        """Outline these heads (e.g. those a detector finds)."""
        self.overlay.marked = set(heads)
        self.overlay.update()

    def set_disabled_heads(self, heads: set[tuple[int, int]]) -> None:
        self.overlay.off = set(heads)
        self.overlay.update()

    def _restyle(self, c: ThemeColors) -> None:
        self._colors = c
        style_view(self.graphics, self._colors)
        style_plot(self.plot, self._colors)
        style_plot(self.colorbar, self._colors)

    # ------------------------------------------------------------------ mouse
    def head_at(self, scene_pos: QPointF) -> tuple[int, int, int, int]:
        """(layer, head, query, key) under a scene position, -1s between or outside the maps."""
        layers, heads = self.shape
        vb = self.plot.getViewBox()
        if not layers or not vb.sceneBoundingRect().contains(scene_pos):
            return -1, -1, -1, -1
        p = vb.mapSceneToView(scene_pos)
        n, step = self.overlay.n, self.overlay.step
        x, y = int(np.floor(p.x())), int(np.floor(p.y()))
        h, k = divmod(x, step)
        li, q = divmod(y, step)
        if 0 <= li < layers and 0 <= h < heads and 0 <= q < n and 0 <= k < n:
            return li, h, q, k
        return -1, -1, -1, -1

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        hit = self.head_at(scene_pos)
        if hit != self._hover:
            self._hover = hit
            self.cellHovered.emit(*hit)

    def _on_mouse_clicked(self, event: Any) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        li, h, _q, _k = self.head_at(event.scenePos())
        if li >= 0:
            self.headClicked.emit(li, h)

    def leaveEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().leaveEvent(event)
        if self._hover != (-1, -1, -1, -1):
            self._hover = (-1, -1, -1, -1)
            self.cellHovered.emit(-1, -1, -1, -1)
