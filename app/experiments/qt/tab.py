"""The Experiments tab: a seed question (preset) or your own runs in a table, Run / Cancel with one progress bar over
all runs, "What to see" (said from the measured results once runs finish; before, the question only), and below
three views of the results: the overlaid curves, the final table, and two runs' heads side by side at one step.
Each has an Export button (curves and grids as PNG / SVG / PDF, the final table as CSV).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.experiments.model.session import ExperimentSession
from app.experiments.qt.heads import ExperimentHeads, write_compare_figure
from app.experiments.qt.plots import ExperimentPlots, write_experiment_plots
from app.experiments.qt.table import RunsTable, SummaryTable
from app.widgets.export_button import IMAGE_FORMATS, add_format_actions, attach_export_button, export_with_dialog
from app.widgets.frame import FrameCoalescer
from app.widgets.theme import ThemeColors, colors_for, follow_theme
from attention_core.tiny.experiments import EXPERIMENT_PRESETS, write_summary_csv

VIEWS = ("Curves", "Final table", "Heads side by side")


class ExperimentTab(QWidget):
    def __init__(self, model: ExperimentSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self._dark = False
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        outer.addWidget(self.splitter)
        self.splitter.addWidget(self._build_top())
        self.views = QTabWidget()
        self.views.setDocumentMode(True)
        self.plots = ExperimentPlots(model)
        self.summary_table = SummaryTable(model)
        self.results = QWidget()
        results = QVBoxLayout(self.results)
        results.setContentsMargins(0, 4, 0, 0)
        heading = QLabel("<b>Final table</b>: each finished run at its last evaluation")
        heading.setMinimumHeight(24)
        results.addWidget(heading)
        results.addWidget(self.summary_table)
        self.results_findings = QLabel()
        self.results_findings.setWordWrap(True)
        self.results_findings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        results.addWidget(self.results_findings)
        results.addStretch(1)
        self.heads = ExperimentHeads(model)
        for widget, name in zip((self.plots, self.results, self.heads), VIEWS, strict=True):
            self.views.addTab(widget, name)
        self.splitter.addWidget(self.views)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.export_buttons = {
            "curves": attach_export_button(self.plots, self._fill_curves_export, "Export the curves…"),
            "table": attach_export_button(self.results, self._fill_table_export, "Export the final table…"),
            "heads": attach_export_button(self.heads, self._fill_heads_export, "Export the two grids…"),
        }
        self.progress_soon = FrameCoalescer(self.show_progress, 100, self)
        model.events.preset.connect(self._show_preset)
        model.events.runs.connect(self._show_run_state)
        model.events.run_state.connect(self._show_run_state)
        model.events.progress.connect(self.progress_soon)
        model.events.findings.connect(lambda _f: self.show_findings())
        self._show_preset(model.preset_id)
        self._show_buttons()
        self.show_progress()
        follow_theme(self._restyle)

    def _build_top(self) -> QWidget:
        top = QWidget()
        box = QVBoxLayout(top)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(4)
        row = QHBoxLayout()
        row.addWidget(QLabel("Experiment:"))
        self.preset_combo = QComboBox()
        for pid, preset in EXPERIMENT_PRESETS.items():
            self.preset_combo.addItem(preset.title, pid)
        self.preset_combo.activated.connect(self._on_preset)
        row.addWidget(self.preset_combo)
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip("Train every run, one after another, as fast as this machine allows")
        self.run_button.clicked.connect(self.model.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the run in flight and start none of the rest")
        self.cancel_button.clicked.connect(lambda: self.model.cancel())
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setMinimumWidth(160)
        self.progress_bar.setToolTip("All runs together: steps done over the steps of every run")
        self.add_button = QPushButton("Add run")
        self.add_button.setToolTip("One more run: a copy of the last with the next seed (at most 6)")
        self.add_button.clicked.connect(self.model.add_run)
        self.remove_button = QPushButton("Remove run")
        self.remove_button.setToolTip("Remove the last run (at least 2 stay)")
        self.remove_button.clicked.connect(lambda: self.model.remove_run(len(self.model.rows) - 1))
        for w in (self.add_button, self.remove_button, self.run_button, self.cancel_button):
            row.addWidget(w)
        row.addWidget(self.progress_bar, 1)
        box.addLayout(row)
        middle = QHBoxLayout()
        left = QVBoxLayout()
        self.runs_table = RunsTable(self.model)
        left.addWidget(self.runs_table)
        left.addStretch(1)
        middle.addLayout(left, 3)
        self.findings_label = QLabel()
        self.findings_label.setWordWrap(True)
        self.findings_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.findings_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.findings_label.setMargin(4)
        scroll = QScrollArea()
        scroll.setWidget(self.findings_label)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QFrame.Shape.StyledPanel)
        scroll.setMinimumWidth(260)
        scroll.setMinimumHeight(112)
        self.findings_scroll = scroll
        middle.addWidget(scroll, 2)
        box.addLayout(middle)
        return top

    # ---------------------------------------------------------------- following the model
    def _on_preset(self, index: int) -> None:
        pid = self.preset_combo.itemData(index)
        if pid != self.model.preset_id and not self.model.is_running:
            self.model.set_preset(pid)

    def _show_preset(self, pid: object) -> None:
        i = self.preset_combo.findData(pid)
        if i >= 0:
            self.preset_combo.setCurrentIndex(i)
        self.show_findings()

    def _show_run_state(self, *_: object) -> None:
        self._show_buttons()
        self.show_findings()

    def _show_buttons(self) -> None:
        running = self.model.is_running
        n = len(self.model.rows)
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.preset_combo.setEnabled(not running)
        self.add_button.setEnabled(not running and n < 6)
        self.remove_button.setEnabled(not running and n > 2)
        self.show_progress()

    def show_progress(self) -> None:
        m = self.model
        self.progress_bar.setValue(round(1000 * m.fraction))
        self.progress_bar.setFormat(m.progress_text.replace("%", "%%"))

    def show_findings(self) -> None:
        """The preset's question; under it, once runs have finished, what they showed (measured)."""
        c = colors_for(self._dark)
        lines = self.model.findings
        question = f"<b>Question:</b> {self.model.question}"
        if not lines:
            self.findings_label.setText(question)
            self.results_findings.setText(f"<span style='color:{c.muted}'>What the runs show is said here, from "
                                          f"the measured results, once they finish.</span>")
            return
        body = "".join(f"<li>{line}</li>" for line in lines)
        state = "" if self.model.run_state != "running" else f" <span style='color:{c.muted}'>(so far)</span>"
        title = "What to see"
        if self.model.results_are_stale:  # the table now holds other runs: say whose results these are
            m = self.model
            title = f"What the last experiment showed ({m.trained_title}: {', '.join(r.name for r in m.trained_runs)})"
        what = f"<b>{title}</b>{state}<ul style='margin-left:-24px; margin-top:0px'>{body}</ul>"
        self.findings_label.setText(f"{question}<br>{what}")
        self.results_findings.setText(what)

    def progress_text(self) -> str:
        return self.progress_bar.format().replace("%%", "%")

    def findings_text(self) -> str:
        return self.findings_label.text()

    def _restyle(self, c: ThemeColors) -> None:
        self._dark = c.dark
        self.show_findings()

    # ---------------------------------------------------------------- export
    def context_line(self) -> str:
        m = self.model
        preset = m.preset
        runs = m.trained_runs if m.sessions else m.runs
        what = preset.title if preset is not None else "custom runs"
        return f"{what} · runs: {', '.join(r.name for r in runs)}"

    def _fill_curves_export(self, menu: QMenu) -> None:
        add_format_actions(menu, IMAGE_FORMATS, lambda fmt: export_with_dialog(
            self, fmt, f"experiment-curves.{fmt}", self.export_curves), "The curves as ")
        for act in menu.actions():
            act.setEnabled(bool(self.model.sessions))

    def _fill_heads_export(self, menu: QMenu) -> None:
        add_format_actions(menu, IMAGE_FORMATS, lambda fmt: export_with_dialog(
            self, fmt, f"experiment-heads.{fmt}", self.export_heads), "The two grids as ")
        for act in menu.actions():
            act.setEnabled(self.model.compare.step is not None)

    def _fill_table_export(self, menu: QMenu) -> None:
        add_format_actions(menu, ("csv",), lambda fmt: export_with_dialog(
            self, fmt, "experiment-summary.csv", self.export_summary), "The final table as ")
        for act in menu.actions():
            act.setEnabled(bool(self.model.summary))

    def export_curves(self, path: str | Path) -> str:
        if not self.model.sessions:
            raise ValueError("nothing trained yet: press Run first")
        return write_experiment_plots(path, self.model, self.context_line())

    def export_heads(self, path: str | Path) -> str:
        if self.model.compare.step is None:
            raise ValueError("nothing trained yet: press Run first")
        return write_compare_figure(path, self.model, self.context_line())

    def export_summary(self, path: str | Path) -> Path:
        if not self.model.summary:
            raise ValueError("no run has finished yet: press Run first")
        write_summary_csv(path, self.model.summary)
        return Path(path)
