"""The Training tab: layout and wiring around one ``TrainingSession`` (``app/training/model/session.py``).

Left: set-up form, run controls, probe, files. Centre: the layer × head grid at the shown step and the timeline.
Right: loss/accuracy curves over tabs for Try it, Ablate and Compare. Every view subscribes to the session's
events and draws what the session holds; nothing here computes a number or pushes one into a widget. Training
runs on the window's ``QtRunner`` (superqt worker, ``app/widgets/workers.py``), the torch warm-up on
``run_in_background``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.training.model.driver import warm_up as _warm_up  # module-level: tests replace it
from app.training.model.session import TrainingSession
from app.training.qt.causality import CausalityView
from app.training.qt.compare import AblationView, CompareView
from app.training.qt.export import TrainingExports
from app.training.qt.flow import TrainingFlowView
from app.training.qt.heads import HeadsView
from app.training.qt.layout import TrainingColumns, quiet_hover_label
from app.training.qt.plots import TrainingPlots
from app.training.qt.probe import ProbeBox
from app.training.qt.run import RunControls
from app.training.qt.setup import TrainingSetupForm
from app.training.qt.timeline import Timeline
from app.training.qt.tryit import TryItView
from app.widgets.grid.head_grid import HeadGrid
from app.widgets.settings import Settings, dialog_dir, remember_dialog_path
from app.widgets.side_panel import SideScroll
from app.widgets.workers import run_in_background
from attention_core.tiny.config import TrainConfig

TICK_MS = 33  # replay and the live Try it refresh advance on this timer (the session decides what changes)


def _group(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    lay = QVBoxLayout(box)
    lay.setContentsMargins(6, 4, 6, 6)
    lay.addWidget(widget)
    return box


class TrainingPanel(QWidget):
    """Set up, run, watch, replay, probe, try and ablate the tiny reversal transformer of ``session``."""

    def __init__(self, session: TrainingSession, parent: QWidget | None = None, settings: Settings | None = None,
                 *, warm_up_torch: bool = True, preview_untrained: bool = True) -> None:
        """``warm_up_torch``: import torch and run one tiny step in the background when the panel is built, so
        Start does not wait for it (``--self-test`` switches it off: it exits within a second).
        ``preview_untrained``: once torch is loaded, build the settings' model (paused at step 0) so the grid shows
        the untrained heads before the learner presses anything (tests switch it off to control every run)."""
        super().__init__(parent)
        self.session = session
        self.warm_up_torch, self.preview_untrained = warm_up_torch, preview_untrained
        self._was_running = False  # the run state ``_on_run_state`` last saw
        root = QHBoxLayout(self)
        root.setContentsMargins(4, 4, 4, 4)
        # left | (centre | right), adapting to the window and remembered (``layout.py``)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        root.addWidget(self.splitter)
        self.main_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self._build_left())
        self.splitter.addWidget(self.main_splitter)
        self.main_splitter.addWidget(self._build_centre())
        self.main_splitter.addWidget(self._build_right())
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setCollapsible(1, False)
        self.main_splitter.setStretchFactor(0, 3)
        self.main_splitter.setStretchFactor(1, 1)
        self.main_splitter.setCollapsible(0, False)
        self.splitter.setSizes([312, 966])
        self.main_splitter.setSizes([566, 396])
        self.columns = TrainingColumns(self, {"training": self.splitter, "training-main": self.main_splitter,
                                              "training-right": self.right_splitter},
                                       self.heads.legend_label, self.head_grid, settings)
        self._wire()
        self._tick = QTimer(self)
        self._tick.setInterval(TICK_MS)
        self._tick.timeout.connect(session.tick)
        self._tick.start()
        self._closing = False
        self.warm_worker = None
        if self.warm_up_torch:
            self.warm_worker = run_in_background(_warm_up, on_done=lambda _r: self._on_warm(),
                                                 on_error=self._on_warm_failed)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    # ================================================================== layout
    def _build_left(self) -> QWidget:
        inner = QWidget()
        col = QVBoxLayout(inner)
        col.setContentsMargins(2, 2, 6, 2)
        col.setSpacing(6)
        self.form = TrainingSetupForm()
        col.addWidget(_group("Set-up", self.form))
        self.run_controls = RunControls(self.session)
        self.run_group = _group("Run", self.run_controls)
        col.addWidget(self.run_group)
        self.probe_box = ProbeBox(self.session)
        col.addWidget(_group("Probe sequence (shown in the grid)", self.probe_box))
        files = QWidget()
        fl = QHBoxLayout(files)
        fl.setContentsMargins(0, 0, 0, 0)
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Save the model with its recorded history (safetensors + JSON + CSV).")
        self.load_button = QPushButton("Load…")
        self.load_button.setToolTip("Load a model saved by this app (its history too, when it was saved).")
        self.export_button = QToolButton()
        self.export_button.setText("Export ▾")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.export_menu = QMenu(self.export_button)
        self.export_button.setMenu(self.export_menu)
        for w in (self.save_button, self.load_button, self.export_button):
            fl.addWidget(w)
        col.addWidget(_group("Model and export", files))
        col.addStretch(1)
        self.left_scroll = SideScroll(inner)  # as wide as the form needs, never clipped (the splitter may widen it)
        return self.left_scroll

    def _build_centre(self) -> QWidget:
        w = QWidget()
        v = QVBoxLayout(w)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(3)
        self.heads = HeadsView(self.session)
        quiet_hover_label(self.heads.hover_label)
        v.addWidget(self.heads, 1)
        self.timeline = Timeline(self.session)
        v.addWidget(self.timeline)
        return w

    def _build_right(self) -> QWidget:
        split = QSplitter(Qt.Orientation.Vertical)
        self.plots = TrainingPlots(self.session)
        split.addWidget(self.plots)
        self.tabs = QTabWidget()
        self.tryit = TryItView(self.session)
        self.ablation = AblationView(self.session)
        self.compare = CompareView(self.session)
        self.tabs.addTab(self.tryit, "Try it")
        self.tabs.addTab(self.ablation, "Ablate")
        self.tabs.addTab(self.compare, "Compare steps")
        self.flow, self.causality = TrainingFlowView(self.session), CausalityView(self.session)
        self.tabs.addTab(self.flow, "Flow")
        self.tabs.addTab(self.causality, "Causality")
        split.addWidget(self.tabs)
        split.setSizes([310, 420])
        split.setChildrenCollapsible(False)
        self.right_splitter = split
        return split

    # the widgets tests and scripts reach for, by their old names
    @property
    def head_grid(self) -> HeadGrid:
        return self.heads.head_grid

    @property
    def status_label(self) -> QLabel:
        return self.run_controls.status_label

    # ================================================================== wiring
    def _wire(self) -> None:
        s, ev = self.session, self.session.events
        self.form.configChanged.connect(lambda _ok: s.set_config(self.form.config(), self.form.error()))
        s.set_config(self.form.config(), self.form.error())
        ev.config.connect(self._show_config)
        ev.run_state.connect(self._on_run_state)
        self.run_controls.startRequested.connect(self.start)
        self.heads.head_grid.headClicked.connect(lambda _l, _h: self.tabs.setCurrentWidget(self.ablation))
        self.save_button.clicked.connect(self._save_dialog)
        self.load_button.clicked.connect(self._load_dialog)
        self.exports = TrainingExports(self)
        self.export_menu.aboutToShow.connect(lambda: self.exports.fill_menu(self.export_menu))
        self._on_run_state()

    def _show_config(self, config: TrainConfig | None) -> None:
        """The form shows the settings in force (a loaded model brings its own)."""
        if config is not None and config != self.form.config():
            with QSignalBlocker(self.form):
                self.form.set_config(config)

    def _on_run_state(self, *_: object) -> None:
        s = self.session
        self.form.setEnabled(not s.is_running)
        if s.is_running != self._was_running:
            # a run's progress, ETA and status sit at the Run box's foot: on a short screen (1024 x 640) the column
            # scrolls, and they were cut off by its bottom edge. Followed while the run goes, unless the learner
            # scrolls away
            self.left_scroll.keep_in_view(self.run_group if s.is_running else None)
        self._was_running = s.is_running
        latest = s.history.latest
        self.save_button.setEnabled(not s.is_running and latest is not None and latest.params is not None)

    # ================================================================== actions
    def start(self) -> bool:
        """Start; after a finished run (or with changed settings while paused) ask: continue, or a new run."""
        s = self.session
        if not s.start_needs_choice():
            return s.start()
        choice = self.ask_continue_or_new()
        if choice is None:
            return False
        return s.start(new_run=(choice == "new"))

    def ask_continue_or_new(self) -> str | None:
        """"continue", "new" or None (cancelled). Its own method so tests and scripts can answer it."""
        s = self.session
        latest = s.history.latest
        step = latest.step if latest is not None else 0
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Continue or start a new run?")
        box.setText(f"The current model has {len(s.history)} recorded steps (up to step {step}).")
        box.setInformativeText("Continue training this model (its history is kept), or start a new run from the "
                               "settings (the recorded steps are discarded; save the model first to keep them)?")
        cont = box.addButton("Continue training", QMessageBox.ButtonRole.AcceptRole)
        new = box.addButton("New run", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        return "continue" if box.clickedButton() is cont else "new" if box.clickedButton() is new else None

    def _on_warm(self) -> None:
        if self._closing:
            return
        self.form.refresh_devices()
        s = self.session
        if self.preview_untrained and s.trainer is None and not s.is_alive and s.config is not None:
            s.reset()

    def _on_warm_failed(self, exc: Exception) -> None:
        if not self._closing:  # the form keeps offering the CPU only
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
            self.session.report_device_problem(f"The warm-up failed ({reason}); training runs on the CPU.")

    def shutdown(self) -> None:
        """Stop training and wait for every background thread (before the window and the interpreter go)."""
        if not self._closing:
            self.columns.save()
        self._closing = True
        self._tick.stop()
        self.session.shutdown()
        if self.warm_worker is not None:
            from app.widgets.workers import wait_for_workers

            wait_for_workers(30.0)

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self.shutdown()
        super().closeEvent(event)

    # ================================================================== files
    def save_model(self, path: str | Path) -> Path:
        """The latest step's model with the recorded history (see ``TrainingSession.save``)."""
        return self.session.save(path)

    def load_model(self, path: str | Path) -> bool:
        """Load a saved model; a damaged or foreign file is refused with the reason (nothing changes)."""
        from attention_core.tiny.checkpoint import CheckpointError

        try:
            self.session.load(path)
        except (CheckpointError, OSError) as exc:
            QMessageBox.warning(self, "Cannot load this model", str(exc))
            return False
        return True

    def _save_dialog(self) -> None:
        latest = self.session.history.latest
        name = f"{latest.task}-step{latest.step}.safetensors" if latest is not None else "model.safetensors"
        path, _ = QFileDialog.getSaveFileName(self, "Save model", str(Path(dialog_dir()) / name),
                                              "Models (*.safetensors)")
        if not path:
            return
        remember_dialog_path(path)
        if not path.endswith(".safetensors"):
            path += ".safetensors"
        try:
            self.save_model(path)
        except (RuntimeError, OSError) as exc:
            QMessageBox.warning(self, "Cannot save the model", str(exc))

    def _load_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load model", dialog_dir(),
                                              "Models (*.safetensors);;All files (*)")
        if path:
            remember_dialog_path(path)
            self.load_model(path)

    # ================================================================== export (app/training/qt/export.py)
    def export_grid(self, path: str | Path) -> str:
        return self.exports.export_grid(path)

    def export_head(self, layer: int, head: int, path: str | Path) -> str:
        return self.exports.export_head(layer, head, path)

    def export_history_csv(self, path: str | Path) -> Path:
        return self.exports.export_history_csv(path)

    def export_timeline(self, path: str | Path) -> Path | None:
        """GIF or MP4 of the recorded steps, with a progress dialog and Cancel (None when cancelled)."""
        return self.exports.export_timeline(path)

    # ================================================================== self-test
    def self_test(self, out_dir: Path) -> list[Path]:
        """Render the grid, the plots and the whole panel to PNGs; returns their paths."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        if not self.isVisible() and self.parent() is None:
            self.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
            self.resize(1280, 760)
            self.show()
        for _ in range(3):
            QApplication.processEvents()
        self.heads.redraw()
        QApplication.processEvents()
        written = []
        for name, widget in (("training-grid.png", self.head_grid), ("training-plots.png", self.plots),
                             ("training-panel.png", self), ("training-flow.png", self.flow),
                             ("training-causality.png", self.causality)):
            path = out_dir / name
            if widget.grab().save(str(path)):
                written.append(path)
        return written
