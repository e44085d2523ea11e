"""An experiment's curves, overlaid: training loss (log scale) and held-out greedy exact-sequence accuracy against
step, one colour per run, the legend naming each run by the options that differ. Follows each run's
``TrainingSession`` (its ``history`` event, a few redraws a second while steps stream); the curves are the
sessions' recorded series, nothing computed here. ``write_experiment_plots`` draws them for a file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.frame import FrameCoalescer
from app.widgets.theme import LIGHT, ThemeColors, colors_for, follow_theme, style_legend, style_plot, style_view

if TYPE_CHECKING:
    from app.experiments.model.session import ExperimentSession

RUN_COLORS = ("blue", "orange", "good", "magenta", "ideal", "warn")
"""The ThemeColors field of run 1, 2, …: blue and orange first (they stay apart for colour-blind eyes)."""
RUN_STYLES = (Qt.PenStyle.SolidLine, Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DashLine,
              Qt.PenStyle.DotLine, Qt.PenStyle.DotLine)
PLOTS = {"loss": "Training loss (batch, log scale)", "accuracy": "Held-out sequence accuracy (greedy)"}
SERIES_MS = 150
EMPTY_TEXT = "Run trains these runs: the curves draw as they learn"
"""What the plots say before any run has a recorded step (empty axes alone looked like a broken view)."""


class ExperimentPlots(QWidget):
    """Loss and accuracy side by side; ``model`` None: drawn by ``redraw(model)`` only (for files)."""

    def __init__(self, model: ExperimentSession | None = None, parent: QWidget | None = None,
                 dark: bool | None = None) -> None:
        """``dark``: None follows the application's theme; True or False is fixed (the plots made for a file)."""
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.graphics = pg.GraphicsLayoutWidget()
        layout.addWidget(self.graphics)
        self.colors: ThemeColors = LIGHT
        self.plots: dict[str, pg.PlotItem] = {}
        # one legend above both plots (the colours are the same in both): inside a plot it hid the curves of runs
        # that do not learn (flat at the top of the loss, at 0 in the accuracy)
        self.legend = pg.LegendItem(colCount=3, labelTextSize="8pt", horSpacing=16, verSpacing=-6)
        self.graphics.addItem(self.legend, row=0, col=0, colspan=2)
        self.curves: dict[tuple[str, int], pg.PlotDataItem] = {}
        self.goal = pg.InfiniteLine(0.99, angle=0, pen=pg.mkPen(LIGHT.goal, width=1, style=Qt.PenStyle.DotLine))
        for col, (what, title) in enumerate(PLOTS.items()):
            plot = self.graphics.addPlot(row=1, col=col)
            plot.setTitle(title, size="9pt")
            plot.setMenuEnabled(False)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.getAxis("bottom").setLabel("step")
            if what == "loss":
                plot.setLogMode(x=False, y=True)
            else:
                plot.setYRange(0, 1.02, padding=0)
                plot.addItem(self.goal, ignoreBounds=True)
            self.plots[what] = plot
        self.empty_note = pg.TextItem(EMPTY_TEXT, anchor=(0.5, 0.5))  # in the accuracy plot, at its middle
        self.plots["accuracy"].addItem(self.empty_note, ignoreBounds=True)
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(colors_for(dark))
        self.model = model
        self._subscribed: list[tuple[Any, Callable[..., Any]]] = []
        if model is not None:
            self.redraw_soon = FrameCoalescer(lambda: self.redraw(model), SERIES_MS, self)
            model.events.sessions.connect(self._resubscribe)
            model.events.runs.connect(self.redraw_soon)
            self._resubscribe()

    def _resubscribe(self) -> None:
        """Follow the new experiment's sessions (and no longer the old one's)."""
        assert self.model is not None
        for signal, slot in self._subscribed:
            signal.disconnect(slot)
        self._subscribed = []
        for s in self.model.sessions:
            s.events.history.connect(self.redraw_soon)
            self._subscribed.append((s.events.history, self.redraw_soon))
        self.redraw(self.model)

    # ---------------------------------------------------------------- theme
    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        style_view(self.graphics, c)
        for plot in self.plots.values():
            style_plot(plot, c)
        style_legend(self.legend, c)
        self.legend.setPen(None)
        self.legend.setBrush(None)
        self.goal.setPen(pg.mkPen(c.goal, width=1, style=Qt.PenStyle.DotLine))
        self.empty_note.setColor(c.muted)
        for (_what, i), curve in self.curves.items():
            self._style(curve, i)

    def _style(self, curve: pg.PlotDataItem, i: int) -> None:
        color = getattr(self.colors, RUN_COLORS[i % len(RUN_COLORS)])
        curve.setPen(pg.mkPen(color, width=2, style=RUN_STYLES[i % len(RUN_STYLES)]))

    # ---------------------------------------------------------------- data
    def redraw(self, model: ExperimentSession) -> None:
        """One curve per run of the experiment trained (or, before any, of the runs set up: empty, for the
        legend); the legend follows the runs' names."""
        runs = model.trained_runs if model.sessions else model.runs
        names = [r.name for r in runs]
        if self.legend_texts() != names:
            for (what, _i), curve in self.curves.items():
                self.plots[what].removeItem(curve)
            self.legend.clear()
            self.curves.clear()
            for what, plot in self.plots.items():
                for i, name in enumerate(names):
                    curve = self.curves[(what, i)] = plot.plot([], [])
                    self._style(curve, i)
                    if what == "loss":
                        self.legend.addItem(curve, name)
            self.legend.setColumnCount(len(names) if len(names) <= 4 else 3)
        top, drawn = 1.0, False
        for i in range(len(names)):
            x_loss, y_loss, x_acc, y_acc = self.series(model, i)
            self.curves[("loss", i)].setData(x_loss, y_loss)
            self.curves[("accuracy", i)].setData(x_acc, y_acc)
            drawn = drawn or bool(len(x_loss))
            if len(x_loss):
                top = max(top, float(x_loss[-1]))
            elif i < len(runs):
                top = max(top, float(runs[i].config.total_steps))
        for plot in self.plots.values():
            plot.setXRange(0, top, padding=0.02)
        self.empty_note.setVisible(not drawn)
        self.empty_note.setPos(top / 2, 0.5)

    def empty_text(self) -> str:
        """The note shown instead of curves ("" once a run has recorded a step)."""
        return self.empty_note.textItem.toPlainText() if self.empty_note.isVisible() else ""

    @staticmethod
    def series(model: ExperimentSession, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Run ``i``'s (steps, loss, evaluated steps, greedy sequence accuracy) as recorded by its session (the
        loss from step 1: step 0's is the untrained model's, before any batch)."""
        if i >= len(model.sessions):
            empty = np.zeros(0)
            return empty, empty, empty, empty
        s = model.sessions[i].history.series()
        keep = s["step"] > 0
        return s["step"][keep], s["loss"][keep], s["eval_step"], s["sequence_accuracy"]

    def legend_texts(self) -> list[str]:
        """The legend's entries (one per run, for both plots)."""
        return [label.text for _sample, label in self.legend.items]

    def curve_data(self, what: str, i: int) -> tuple[np.ndarray, np.ndarray]:
        curve = self.curves.get((what, i))
        x, y = (None, None) if curve is None else curve.getOriginalDataset()
        return (np.zeros(0), np.zeros(0)) if x is None else (np.asarray(x), np.asarray(y))


def write_experiment_plots(path: str | Path, model: ExperimentSession, context: str = "") -> str:
    """Both plots as one figure for a file (PNG, SVG or PDF), light theme, titled with the experiment; returns the
    plain title (also in the file's metadata)."""
    from app.widgets.rendering import ensure_application, write_titled_figure

    ensure_application()
    return write_titled_figure(path, "Experiment: loss and held-out sequence accuracy per run", context,
                               ExperimentPlots(dark=False), lambda plots: plots.redraw(model), size=(1100, 480))
