"""The Training tab's causality probe: pick a position t and a number of trials, Run; a bar per position shows the
largest change of the logits when every token after t is replaced by random tokens, t is marked, the two numbers and
what they mean are said in words. Follows the shown step: while visible, a probe already run is run again on the
step the grid shows (a few milliseconds), so the bars never describe another step. Computing is the model's
(``app.training.model.causality``); this view draws its result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.training.model.causality import CausalityModel, CausalityResult
from app.training.model.session import TrainingSession
from app.widgets.export_button import add_format_actions, attach_export_button, export_with_dialog
from app.widgets.frame import FRAME_MS, FrameCoalescer, RedrawWhenShown
from app.widgets.theme import LIGHT, ThemeColors, follow_theme, span, style_plot, style_view
from app.widgets.workers import run_in_background

INTRO = ("Replace every token after position <b>t</b> by random tokens (N trials): a position up to t whose logits "
         "change has read the future.")


class CausalityChart(pg.PlotWidget):
    """Bars: the largest logit change per position; positions up to t in one colour, after t in another, and a
    dashed line between them."""

    def __init__(self, colors: ThemeColors = LIGHT) -> None:
        super().__init__()
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.setMinimumHeight(100)
        self.plotItem.setLabel("left", "largest |Δ logit|")
        self.plotItem.getAxis("bottom").setHeight(36)  # two lines per tick: the position and its token
        self.bars: dict[str, pg.BarGraphItem] = {}
        self.heights = np.zeros(0)
        self.boundary = pg.InfiniteLine(angle=90, movable=False)
        self.addItem(self.boundary)
        self.boundary.hide()
        self.colors = colors
        self.result: CausalityResult | None = None
        self.set_colors(colors)

    def set_colors(self, c: ThemeColors) -> None:
        self.colors = c
        style_view(self, c)
        style_plot(self.plotItem, c)
        self.boundary.setPen(pg.mkPen(c.magenta, width=1.5, style=Qt.PenStyle.DashLine))
        self.show_result(self.result)

    def show_result(self, result: CausalityResult | None) -> None:
        self.result = result
        for item in self.bars.values():
            self.removeItem(item)
        self.bars = {}
        if result is None:
            self.heights = np.zeros(0)
            self.boundary.hide()
            return
        p, c = result.probe, self.colors
        self.heights = np.asarray(p.changes, dtype=float)
        x = np.arange(len(self.heights))
        t = p.position
        for name, sel, colour in (("before", x <= t, c.blue), ("after", x > t, c.orange)):
            if sel.any():
                item = pg.BarGraphItem(x=x[sel], height=self.heights[sel], width=0.7, brush=colour, pen=None)
                self.addItem(item)
                self.bars[name] = item
        self.boundary.setValue(t + 0.5)
        self.boundary.show()
        ticks = [(i, f"{i}\n{lab}") for i, lab in enumerate(result.labels)]
        self.plotItem.getAxis("bottom").setTicks([ticks])
        top = float(self.heights.max()) if self.heights.size else 0.0
        self.setXRange(-0.6, len(x) - 0.4, padding=0)
        self.setYRange(0, top * 1.08 if top > 0 else 1.0, padding=0)


class CausalityView(RedrawWhenShown, QWidget):
    """Position and trials, Run, the bar chart, the numbers and their meaning, an Export button."""

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.model = CausalityModel(session)
        self.colors = LIGHT
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        intro.setToolTip("Run probes the step the grid shows; scrubbing the timeline probes the step shown.")
        intro.setContentsMargins(0, 0, 30, 0)  # room for the Export button
        lay.addWidget(intro)
        row = QHBoxLayout()
        row.addWidget(QLabel("t"))
        self.position_spin = QSpinBox()
        self.position_spin.setToolTip("Position t: the last position kept; every token after it is replaced")
        row.addWidget(self.position_spin)
        row.addWidget(QLabel("trials"))
        self.trials_spin = QSpinBox()
        self.trials_spin.setRange(1, 99)
        self.trials_spin.setValue(self.model.trials)
        self.trials_spin.setToolTip("How many random replacements to try (the largest change counts)")
        row.addWidget(self.trials_spin)
        self.run_button = QToolButton()  # a push button's style minimum (80 px) widened the Training tab's column
        self.run_button.setText("Run")
        self.run_button.setToolTip("Probe the model of the step the grid shows")
        row.addWidget(self.run_button)
        row.addStretch(1)
        lay.addLayout(row)
        self.error_label = QLabel("")
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        lay.addWidget(self.error_label)
        self.chart = CausalityChart()
        lay.addWidget(self.chart, 3)
        # the numbers and their meaning scroll when the column is short (at 1024 x 640 they overlapped the bars)
        words = QWidget()
        wl = QVBoxLayout(words)
        wl.setContentsMargins(0, 0, 0, 0)
        self.numbers_label = QLabel(" ")
        self.numbers_label.setTextFormat(Qt.TextFormat.RichText)
        self.numbers_label.setWordWrap(True)
        wl.addWidget(self.numbers_label)
        self.meaning_label = QLabel(" ")
        self.meaning_label.setWordWrap(True)
        wl.addWidget(self.meaning_label)
        wl.addStretch(1)
        self.words = QScrollArea()
        self.words.setWidgetResizable(True)
        self.words.setFrameShape(QFrame.Shape.NoFrame)
        self.words.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.words.setWidget(words)
        self.words.setMinimumHeight(56)
        lay.addWidget(self.words, 2)
        self._worker: Any = None
        self._again: tuple[int | None, int | None] | None = None
        self.run_button.clicked.connect(self.run)
        self.model.events.result.connect(self.request_redraw)
        self.follow_soon = FrameCoalescer(self._follow, FRAME_MS * 3, self)
        session.events.shown.connect(self.follow_soon)
        session.events.history.connect(self.follow_soon)
        self.export_button = attach_export_button(self, self._fill_export_menu, "Export the probe (PNG or SVG)…")
        self._fit_position()
        self.redraw()
        follow_theme(self._restyle)

    def run(self) -> bool:
        """Probe the shown step with the spin boxes' position and trials, off the GUI thread (~50 ms on a busy
        machine); False when refused (the reason shows under the controls)."""
        return self._start(self.position_spin.value(), self.trials_spin.value())

    def _start(self, position: int | None = None, trials: int | None = None) -> bool:
        if self._worker is not None:  # one probe at a time; the latest request runs when it is done
            self._again = (position, trials)
            return True
        job = self.model.job(position, trials)
        if job is None:
            return False
        self.run_button.setEnabled(False)
        self._worker = run_in_background(job, on_done=self._done, on_error=self._failed)
        return True

    def _finished(self) -> None:
        self._worker = None
        self.run_button.setEnabled(self.model.positions() >= 2)
        again, self._again = self._again, None
        if again is not None:
            self._start(*again)

    def _done(self, result: CausalityResult) -> None:
        self.model.accept(result)
        self._finished()

    def _failed(self, exc: Exception) -> None:
        self.model.fail(f"the probe failed: {exc}")
        self._finished()

    @property
    def busy(self) -> bool:
        return self._worker is not None

    def _fit_position(self) -> None:
        n = self.model.positions()
        with QSignalBlocker(self.position_spin):
            self.position_spin.setRange(0, max(n - 2, 0))
            if self.model.position is None:
                self.position_spin.setValue(self.model.default_position())
        self.run_button.setEnabled(n >= 2 and self._worker is None)

    def _follow(self) -> None:
        """The shown step moved: a probe already run follows it (only while visible; hidden, it waits); before any
        probe, the line under the chart follows whether there is a model to probe ("No model yet" stayed up beside
        the untrained model the grid showed)."""
        self._fit_position()
        if self.model.result is None:
            self.redraw()
        elif not self.model.current:
            if self.isVisible():
                self._start()
            else:
                self._stale = True

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self._fit_position()
        if self.model.result is not None and not self.model.current:
            self._start()
        super().showEvent(event)

    def redraw(self) -> None:
        self._stale = False
        m, c = self.model, self.colors
        self.error_label.setVisible(bool(m.error))
        self.error_label.setText(span(m.error, c.bad) if m.error else "")
        r = m.result
        self.chart.show_result(r)
        if r is None:
            snap = self.session.shown_snapshot  # positions() is 0 without one
            self.numbers_label.setText(f"No probe yet: Run probes the model at step {snap.step}."
                                       if snap is not None and m.positions() else
                                       "No model yet: press Start (or Step) first.")
            self.meaning_label.setText(" ")
            return
        p = r.probe
        exact = " (exactly)" if p.max_change_before == 0.0 else ""
        self.numbers_label.setText(
            f"Step {r.step}, t = {p.position} ('{r.labels[p.position]}'), {p.trials} trials, "
            f"{'causal mask' if p.causal else span('no causal mask', c.warn, bold=True)}: largest change at "
            f"positions 0..{p.position}: {span(f'{p.max_change_before:.4g}{exact}', c.blue, bold=True)} · after "
            f"{p.position}: {span(f'{p.max_change_after:.4g}', c.orange, bold=True)}")
        self.meaning_label.setText(r.explanation())

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.chart.set_colors(self.colors)
        self.redraw()

    # ------------------------------------------------------------------ export
    def _fill_export_menu(self, menu: QMenu) -> None:
        add_format_actions(menu, ("png", "svg"),
                           lambda f: export_with_dialog(self, f, f"causality-probe.{f}", self.export))
        for act in menu.actions():
            act.setEnabled(self.model.result is not None)

    def export(self, path: str | Path) -> str:
        """The bars and the two numbers in the light theme, titled with the step and the mask; PNG or SVG."""
        from app.common.titles import full_title, title_html
        from app.widgets.qt_compat import delete_now
        from app.widgets.rendering import light_figure, render_widget

        r = self.model.result
        if r is None:
            raise ValueError("nothing to export yet: run the probe first")
        if Path(path).suffix.lower() not in (".png", ".svg"):
            raise ValueError(f"the probe exports as .png or .svg, got {Path(path).suffix!r}")
        p = r.probe
        title = f"Causality probe: tokens after position {p.position} replaced ({p.trials} trials)"
        h = self.model.session.history
        task = h[r.index].task if r.index < len(h) else "reversal"  # the task of the run the probe measured
        context = (f"{task} task · step {r.step} · {'causal mask' if p.causal else 'no causal mask'} · largest "
                   f"change up to t {p.max_change_before:.4g}, after t {p.max_change_after:.4g}")
        fig, box = light_figure()
        label = QLabel(title_html(title, context))
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        label.setWordWrap(True)
        chart = CausalityChart(LIGHT)
        chart.show_result(r)
        box.addWidget(label)
        box.addWidget(chart, 1)
        try:
            fig.resize(720, 420)
            plain = full_title(title, context)
            render_widget(fig, Path(path), title=plain)
        finally:
            delete_now(fig)
        return plain
