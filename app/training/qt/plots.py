"""Live training curves: loss, and per-token / exact-sequence accuracy (train and test) against step.

Two stacked pyqtgraph plots sharing the step axis. A vertical line marks the step shown in the head grid (the
playback cursor), a dotted line the 99 % goal. Exact-sequence accuracy is measured by greedy generation (the
model feeds back its own tokens); per-token test accuracy is teacher-forced (the true prefix is fed in). The two
come apart when the causal mask is off: that is the leak the lesson warns about.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.training.model.session import TrainingSession
from app.widgets.frame import FrameCoalescer
from app.widgets.theme import LIGHT, ThemeColors, colors_for, follow_theme, style_legend, style_plot, style_view

if TYPE_CHECKING:
    from app.training.model.history import TrainingHistory

LOSS_TITLE = "Loss (cross-entropy, log scale)"
ACC_TITLE = "Accuracy: token, sequence"  # short: a 1024 px window gives the plots ~270 px
SERIES_MS = 150
"""Curves over the whole run change a little per step: ~6 redraws a second while a run streams steps is enough,
and leaves the GIL to the training thread (the maps still follow every frame)."""

SERIES = {
    # key: (legend, colour (a ThemeColors field: blue and orange stay apart for colour-blind eyes), width, dash)
    "loss": ("train loss (batch)", "grey", 1.2, False),
    "test_loss": ("test loss", "blue", 2.0, False),
    "train_accuracy": ("token, train batch", "grey", 1.2, False),
    "reversal_accuracy": ("token, test (teacher-forced)", "blue", 2.0, False),
    "train_sequence_accuracy": ("sequence, train (greedy)", "orange", 1.4, True),
    "sequence_accuracy": ("sequence, test (greedy)", "orange", 2.6, False),
}
NARROW_NAMES = {  # the accuracy legend's names when the plot is too narrow for the full ones
    "train_accuracy": "token, train", "reversal_accuracy": "token, test",
    "train_sequence_accuracy": "seq., train", "sequence_accuracy": "seq., test",
}


class TrainingPlots(QWidget):
    """Loss and accuracy curves; ``set_series`` takes ``TrainingHistory.series()``.

    Given a ``TrainingSession``, it follows it: ``history`` redraws the curves (throttled to a few times a second
    while a run streams steps), ``shown`` moves the cursor to the step the grid shows. A history that is not
    complete (a model loaded without it) is drawn as its recorded points only, and the title says so."""

    def __init__(self, session: TrainingSession | None = None, parent: QWidget | None = None,
                 dark: bool | None = None) -> None:
        """``dark``: None follows the application's theme; True or False is fixed (the plots made for a file)."""
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.graphics = pg.GraphicsLayoutWidget()
        self.colors: ThemeColors = LIGHT
        layout.addWidget(self.graphics)
        self.loss_plot = self.graphics.addPlot(row=0, col=0)
        self.acc_plot = self.graphics.addPlot(row=1, col=0)
        self._acc_keys = ("train_accuracy", "reversal_accuracy", "train_sequence_accuracy", "sequence_accuracy")
        self.narrow_legend = False
        self.setToolTip("Token accuracy: the share of answer tokens right with the true previous tokens given "
                        "(teacher forcing). Sequence accuracy: the share of sequences whose whole answer (reversed, "
                        "copied, sorted or continued: the run's task) the model gets exactly right when it "
                        "generates greedily from its own outputs.")
        self.curves: dict[str, pg.PlotDataItem] = {}
        for plot, title, keys in (
            (self.loss_plot, LOSS_TITLE, ("loss", "test_loss")),
            (self.acc_plot, ACC_TITLE, self._acc_keys),
        ):
            plot.setTitle(title, size="9pt")
            plot.getAxis("left").setWidth(34)  # both plots align on the step axis
            plot.setMenuEnabled(False)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.showGrid(x=True, y=True, alpha=0.25)
            # accuracy rises early, so its lower right stays free; loss falls, so its upper right stays free
            legend = plot.addLegend(offset=(-4, -4) if plot is self.acc_plot else (-4, 4), labelTextSize="7pt",
                                    verSpacing=-8)
            if plot is self.acc_plot:
                self.acc_legend = legend
                legend.setColumnCount(2)  # two short rows fit a short plot (shorter names when narrow)
            else:
                self.loss_legend = legend
            for key in keys:
                self.curves[key] = plot.plot([], [], name=SERIES[key][0], connect="finite")
        # the plots share the step axis (linked): its numbers and its name once, under the lower plot, leave the
        # upper plot ~30 px more data area (on a 640 px high window that is half of what it had)
        self.loss_plot.getAxis("bottom").setStyle(showValues=False)
        self.acc_plot.getAxis("bottom").setLabel("step")
        self.acc_legend.layout.activate()
        self._full_legend_width = self.acc_legend.boundingRect().width()
        self.loss_plot.setLogMode(y=True)
        # fixed log ticks (1, 2, 5 per decade): pyqtgraph's own log ticks vanish within a decade and crowd across
        major = [(float(e), f"{10.0 ** e:g}") for e in range(-6, 3)]
        minor = [(float(np.log10(m * 10.0 ** e)), f"{m * 10.0 ** e:g}") for e in range(-6, 3) for m in (2, 5)]
        self._loss_ticks = {False: [major, minor], True: [major]}  # compact: decades only
        self._acc_ticks = {False: None, True: [[(0.0, "0"), (0.5, "0.5"), (1.0, "1")]]}
        self.compact: bool | None = None
        self.loss_plot.setYRange(-3, 1, padding=0.02)  # log10 units: 0.001 .. 10 until data arrives
        self.loss_plot.enableAutoRange(axis="y")
        self.loss_plot.setXRange(0, 1, padding=0.02)
        self.acc_plot.setYRange(0, 1.02, padding=0)
        self.acc_plot.setXLink(self.loss_plot)
        self.goal_line = pg.InfiniteLine(0.99, angle=0)
        self.acc_plot.addItem(self.goal_line)
        self.cursor_lines = []
        for plot in (self.loss_plot, self.acc_plot):
            line = pg.InfiniteLine(0, angle=90)
            plot.addItem(line)
            self.cursor_lines.append(line)
        self._data: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.joined = True
        self._set_compact(False)
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(colors_for(dark))
        self.session = session
        if session is not None:
            self.redraw_soon = FrameCoalescer(self.redraw, SERIES_MS, self)
            session.events.history.connect(self.redraw_soon)
            session.events.shown.connect(lambda _i: self._follow_cursor())
            self.redraw()

    def _restyle(self, c: ThemeColors) -> None:
        """The theme (``app/widgets/theme.py``): background, axes, titles, legends, curves and marker lines."""
        self.colors = c
        style_view(self.graphics, c)
        for plot in (self.loss_plot, self.acc_plot):
            style_plot(plot, c)
        for legend in (self.loss_legend, self.acc_legend):
            style_legend(legend, c)
        self._style_curves()
        self.goal_line.setPen(pg.mkPen(c.goal, width=1, style=Qt.PenStyle.DotLine))
        for line in self.cursor_lines:
            line.setPen(pg.mkPen(c.magenta, width=1.2))

    def _style_curves(self) -> None:
        """Lines, or (``joined`` False: the steps between were not recorded) points only."""
        for key, curve in self.curves.items():
            _name, role, width, dash = SERIES[key]
            color = getattr(self.colors, role)
            style = Qt.PenStyle.DashLine if dash else Qt.PenStyle.SolidLine
            curve.setPen(pg.mkPen(color, width=width, style=style) if self.joined else None)
            curve.setSymbol(None if self.joined else "o")
            curve.setSymbolBrush(color)
            curve.setSymbolPen(None)
            curve.setSymbolSize(7)

    def redraw(self) -> None:
        """The session's whole history and the shown step."""
        s = self.session
        assert s is not None
        h = s.history
        latest = h.latest
        self.set_series(h.series(), max_step=max(s.total_steps, latest.step if latest is not None else 0),
                        joined=h.complete)
        self._follow_cursor()

    def _follow_cursor(self) -> None:
        step = self.session.shown_step if self.session is not None else None
        self.set_cursor(step if step is not None else 0)

    PLOT_MARGINS = 58
    """The widget's width minus its plots' data area (the 34 px left axis, the margins, the border), in px."""

    COMPACT_H = 260
    """Below this height (the right column of a 640 px high window) the plots drop their titles (the legends
    name the curves, the tooltip says the rest) and keep fewer y ticks: with titles, each data area was ~45 px
    and the y labels ran into each other ("0.1" over "0.01")."""

    def _set_compact(self, compact: bool) -> None:
        if compact == self.compact:
            return
        self.compact = compact
        suffix = "" if self.joined else " · points only"
        for plot, title in ((self.loss_plot, LOSS_TITLE), (self.acc_plot, ACC_TITLE)):
            plot.setTitle(None if compact else title + suffix, size="9pt")
        self.loss_plot.getAxis("left").setTicks(self._loss_ticks[compact])
        self.acc_plot.getAxis("left").setTicks(self._acc_ticks[compact])

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        """Below the full legend's width, show ``NARROW_NAMES``: the full ones ran off the plot's left edge (the
        title and the tooltip keep the full meaning). Below ``COMPACT_H``, compact plots."""
        super().resizeEvent(event)
        self._set_compact(self.height() < self.COMPACT_H)
        narrow = self.width() - self.PLOT_MARGINS < self._full_legend_width
        if narrow == self.narrow_legend:
            return
        self.narrow_legend = narrow
        for (_sample, label), key in zip(self.acc_legend.items, self._acc_keys):
            label.setText(NARROW_NAMES[key] if narrow else SERIES[key][0])
        legend = self.acc_legend
        legend.setGeometry(0, 0, 0, 0)  # let the layout shrink to the new names before the legend measures it
        legend.layout.activate()
        legend.updateSize()

    def set_series(self, series: dict[str, np.ndarray], max_step: float | None = None, joined: bool = True) -> None:
        """Update every curve from ``TrainingHistory.series()``; the x axis spans 0..max_step. ``joined=False``:
        points only (the steps between them were not recorded, so no line may pretend to know them)."""
        if joined != self.joined:
            self.joined = joined
            self._style_curves()
            compact, self.compact = self.compact, None
            self._set_compact(bool(compact))  # the titles say "points only" (when shown)
        steps, eval_steps = series.get("step", np.zeros(0)), series.get("eval_step", np.zeros(0))
        for key, curve in self.curves.items():
            x = eval_steps if key in ("test_loss", "reversal_accuracy", "sequence_accuracy",
                                      "train_sequence_accuracy") else steps
            y = series.get(key, np.zeros(0))
            if key in ("loss", "test_loss"):
                ok = np.isfinite(y) & (y > 0)
                x, y = x[ok], y[ok]
            elif not joined:  # points only: a step without this figure (a loaded model's) has no point
                ok = np.isfinite(y)
                x, y = x[ok], y[ok]
            self._data[key] = (np.asarray(x, dtype=float), np.asarray(y, dtype=float))
            curve.setData(x, y)
        hi = max_step if max_step is not None else (float(steps[-1]) if len(steps) else 1.0)
        self.loss_plot.setXRange(0, max(1.0, hi), padding=0.02)

    def set_cursor(self, step: float) -> None:
        for line in self.cursor_lines:
            line.setValue(step)

    def data(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) currently plotted for a series key (tests read it)."""
        return self._data.get(key, (np.zeros(0), np.zeros(0)))

    def clear(self) -> None:
        for curve in self.curves.values():
            curve.setData([], [])
        self._data.clear()

    def export_item(self) -> Any:
        return self.graphics.ci


def write_plots(path: str | Path, history: TrainingHistory, *, shown_step: int, max_step: int,
                context: str = "") -> str:
    """The curves as a figure for a file (PNG, SVG or PDF): a fresh ``TrainingPlots`` in the light theme under a
    title that says what and when (``context``: task, step, accuracy), the shown step marked. The window's own
    plots are left alone (their theme, their size). Returns the plain title, also in the file's metadata."""
    from app.widgets.rendering import ensure_application, write_titled_figure

    def fill(plots: TrainingPlots) -> None:
        plots.set_series(history.series(), max_step=max_step, joined=history.complete)
        plots.set_cursor(shown_step)

    ensure_application()
    return write_titled_figure(path, "Training curves: loss and accuracy", context, TrainingPlots(dark=False), fill)
