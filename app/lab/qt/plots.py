"""The Lab's two log-log plots: seconds per call against n, and peak memory against n, one curve per (device,
implementation), the fitted slope in the legend (2 = quadratic), a dotted n² reference line, and a read-out of
the point under the mouse. Everything drawn comes from the ``ScalingLab`` model (its points, legends, reference
line); the view only draws and finds the point nearest the mouse.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.frame import FrameCoalescer
from app.widgets.theme import LIGHT, ThemeColors, colors_for, follow_theme, style_legend, style_plot, style_view

if TYPE_CHECKING:
    from app.lab.model import ScalingLab

PLOTS = {"seconds": ("Time per call (log-log)", "time per call"),
         "peak_mib": ("Peak memory (log-log)", "MiB")}
IMPL_COLOR = {"naive-torch": "orange", "fused": "blue", "steps": "magenta", "naive-numpy": "good"}
"""A ThemeColors field per implementation; the device is the line style (CPU solid, a GPU dashed)."""
HOVER_PX = 14.0
EMPTY_Y = {"seconds": (-5.0, 0.0), "peak_mib": (-2.0, 3.0)}
"""log10 ranges shown before anything was measured: 10 µs … 1 s, 0.01 … 1000 MiB."""


def _log_ticks(exponents: range, label: Any) -> list[list[tuple[float, str]]]:
    """Fixed log10 ticks: a labelled one per decade, unlabelled ones at 2 and 5 (pyqtgraph's own log ticks
    vanish inside a decade and crowd across many)."""
    major = [(float(e), label(10.0 ** e)) for e in exponents]
    minor = [(math.log10(m * 10.0 ** e), "") for e in exponents for m in (2, 5)]
    return [major, minor]


def _time_label(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


TIME_TICKS = _log_ticks(range(-7, 4), _time_label)
MIB_TICKS = _log_ticks(range(-4, 7), lambda v: f"{v:g}")
N_TICKS = [[(math.log10(2 ** e), str(2 ** e)) for e in range(2, 18, 2)],
           [(math.log10(2 ** e), str(2 ** e)) for e in range(3, 18, 2)]]
"""n at every power of 2: labelled at even powers (4, 16, 64 …), odd ones as minor ticks."""


def _fmt(what: str, value: float) -> str:
    if what == "seconds":
        return f"{value * 1e3:.4g} ms" if value < 1 else f"{value:.4g} s"
    return f"{value:.4g} MiB"


class LabPlots(QWidget):
    """Two log-log plots following a ``ScalingLab`` (``lab`` None: drawn by ``redraw(lab)`` only, for files)."""

    def __init__(self, lab: ScalingLab | None = None, parent: QWidget | None = None, dark: bool | None = None) -> None:
        """``dark``: None follows the application's theme; True or False is fixed (the plots made for a file)."""
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.graphics = pg.GraphicsLayoutWidget()
        layout.addWidget(self.graphics)
        self.colors: ThemeColors = LIGHT
        self.plots: dict[str, pg.PlotItem] = {}
        self.legends: dict[str, pg.LegendItem] = {}
        self.curves: dict[tuple[str, str, str], pg.PlotDataItem] = {}
        self.references: dict[str, pg.PlotDataItem] = {}
        self.hover_items: dict[str, pg.TextItem] = {}
        self.hover_text = ""
        self._keys: list[tuple[str, str]] = []
        for col, (what, (title, unit)) in enumerate(PLOTS.items()):
            plot = self.graphics.addPlot(row=0, col=col)
            plot.setTitle(title, size="9pt")
            plot.setLogMode(x=True, y=True)
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.getAxis("bottom").setLabel("sequence length n")
            plot.getAxis("left").setLabel(unit)
            for name in ("bottom", "left"):
                plot.getAxis(name).enableAutoSIPrefix(False)
            plot.getAxis("bottom").setTicks(N_TICKS)
            plot.getAxis("left").setTicks(TIME_TICKS if what == "seconds" else MIB_TICKS)
            # upper left: the log-log curve of a cost that grows runs from lower left to upper right (and the fused
            # path's linear memory runs through the lower right), so that corner stays free of data
            self.legends[what] = plot.addLegend(offset=(4, 4), labelTextSize="7pt", verSpacing=-6)
            ref = plot.plot([], [], name="∝ n² (reference)")
            self.references[what] = ref
            hover = pg.TextItem("", anchor=(0, 1))
            hover.setZValue(100)
            plot.addItem(hover, ignoreBounds=True)
            hover.hide()
            self.hover_items[what] = hover
            self.plots[what] = plot
        self.graphics.setToolTip(
            "Hover a point for its numbers. The legend gives each series' fitted log-log slope over the upper half "
            "of n (2 = quadratic). Peak memory: tracemalloc for the numpy paths (exact), the resident-set "
            "high-water mark for torch on the CPU (page-granular), torch.cuda.max_memory_allocated on a GPU.")
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse)
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(colors_for(dark))
        self.lab = lab
        if lab is not None:
            # a few redraws a second: each takes the GIL and a core from the measurement running beside it
            self.redraw_soon = FrameCoalescer(lambda: self.redraw(lab), 250, self)
            lab.events.results.connect(self.redraw_soon)
            lab.events.config.connect(self.redraw_soon)  # before a run, the n axis spans the chosen n
            self.redraw(lab)

    # ---------------------------------------------------------------- theme
    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        style_view(self.graphics, c)
        for what, plot in self.plots.items():
            style_plot(plot, c)
            style_legend(self.legends[what], c)
            self.references[what].setPen(pg.mkPen(c.muted, width=1.2, style=Qt.PenStyle.DotLine))
            self.hover_items[what].setColor(c.text)
            self.hover_items[what].fill = pg.mkBrush(*c.legend_bg)
            self.hover_items[what].border = pg.mkPen(c.plot_fg, width=0.5)
            self.hover_items[what].update()
        for (_what, device, impl), curve in self.curves.items():
            self._style_curve(curve, device, impl)

    def _style_curve(self, curve: pg.PlotDataItem, device: str, impl: str) -> None:
        color = getattr(self.colors, IMPL_COLOR.get(impl, "grey"))
        style = Qt.PenStyle.SolidLine if device == "cpu" else Qt.PenStyle.DashLine
        curve.setPen(pg.mkPen(color, width=2, style=style))
        curve.setSymbol("o")
        curve.setSymbolSize(5)
        curve.setSymbolBrush(color)
        curve.setSymbolPen(None)

    # ---------------------------------------------------------------- data
    def redraw(self, lab: ScalingLab) -> None:
        """Every series of ``lab``'s run, its legend (with the fitted slope), and the n² reference."""
        keys = lab.series_keys()
        if keys != self._keys:  # a new run, or a new series: rebuild the curves so the legend follows
            for (what, _d, _i), curve in self.curves.items():
                self.plots[what].removeItem(curve)
                self.legends[what].removeItem(curve)
            self.curves.clear()
            self._keys = list(keys)
        for what, plot in self.plots.items():
            for device, impl in keys:
                ident = (what, device, impl)
                curve = self.curves.get(ident)
                if curve is None:
                    curve = self.curves[ident] = plot.plot([], [], name=lab.legend((device, impl), what))
                    self._style_curve(curve, device, impl)
                ns, vs = lab.series_points((device, impl), what)
                curve.setData(np.asarray(ns, dtype=float), np.asarray(vs, dtype=float))
                self._set_legend(what, curve, lab.legend((device, impl), what))
            rx, ry = lab.reference_line(what)
            self.references[what].setData(np.asarray(rx, dtype=float), np.asarray(ry, dtype=float))
            if rx:
                plot.enableAutoRange()
            else:  # nothing measured yet: the axes span the n of the next run and typical values, not 1…10
                cfg = lab.config
                plot.setXRange(math.log10(cfg.min_n), math.log10(cfg.max_n), padding=0.05)
                plot.setYRange(*EMPTY_Y[what], padding=0)

    def _set_legend(self, what: str, curve: pg.PlotDataItem, text: str) -> None:
        for sample, label in self.legends[what].items:
            if sample.item is curve and label.text != text:
                label.setText(text)

    def legend_texts(self, what: str) -> list[str]:
        return [label.text for _sample, label in self.legends[what].items]

    def curve_data(self, what: str, device: str, impl: str) -> tuple[np.ndarray, np.ndarray]:
        curve = self.curves.get((what, device, impl))
        if curve is None:
            return np.zeros(0), np.zeros(0)
        x, y = curve.getOriginalDataset()
        return (np.zeros(0), np.zeros(0)) if x is None else (np.asarray(x), np.asarray(y))

    # ---------------------------------------------------------------- hover
    def _on_mouse(self, pos: QPointF) -> None:
        for what, plot in self.plots.items():
            if plot.sceneBoundingRect().contains(pos):
                self.show_nearest(what, plot.vb.mapSceneToView(pos))
            else:
                self.hover_items[what].hide()

    def show_nearest(self, what: str, view_pos: QPointF) -> str:
        """Show the numbers of the point nearest ``view_pos`` (log10 view coordinates) within a few pixels; the
        text shown ("" when none is near)."""
        plot = self.plots[what]
        px = plot.vb.viewPixelSize()
        best: tuple[float, str, float, float] | None = None
        for w, device, impl in self.curves:
            if w != what:
                continue
            x, y = self.curve_data(what, device, impl)
            for n, v in zip(x, y):
                if n <= 0 or v <= 0:
                    continue
                lx, ly = math.log10(n), math.log10(v)
                dist = math.hypot((lx - view_pos.x()) / px[0], (ly - view_pos.y()) / px[1])
                if dist <= HOVER_PX and (best is None or dist < best[0]):
                    best = (dist, f"{impl} · {device}\nn = {int(n)}: {_fmt(what, v)}", lx, ly)
        item = self.hover_items[what]
        if best is None:
            item.hide()
            self.hover_text = ""
            return ""
        item.setText(best[1])
        (x0, x1), (y0, y1) = plot.vb.viewRange()
        # the read-out opens towards the middle of the plot, so it is never cut at an edge
        item.setAnchor((1.0 if best[2] > (x0 + x1) / 2 else 0.0, 0.0 if best[3] > (y0 + y1) / 2 else 1.0))
        item.setPos(best[2], best[3])
        item.show()
        self.hover_text = best[1]
        return best[1]

    def export_item(self) -> Any:
        return self.graphics.ci


def write_lab_plots(path: str | Path, lab: ScalingLab, context: str = "") -> str:
    """Both plots as one figure for a file (PNG, SVG or PDF): a fresh ``LabPlots`` in the light theme under a title
    naming the run (``context``). Returns the plain title, also in the file's metadata."""
    from app.widgets.rendering import ensure_application, write_titled_figure

    ensure_application()
    return write_titled_figure(path, "Attention cost against sequence length n", context, LabPlots(dark=False),
                               lambda plots: plots.redraw(lab), size=(1100, 520))
