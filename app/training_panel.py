"""The Training tab: layout and wiring around one ``TrainingSession`` (``app/models/training_session.py``).

Left: set-up form, run controls, probe, files. Centre: the layer × head grid at the shown step and the timeline.
Right: loss/accuracy curves over tabs for Try it, Ablate and Compare. Every view subscribes to the session's
events and draws what the session holds; nothing here computes a number or pushes one into a widget. Training
runs on the window's ``QtRunner`` (superqt worker, ``app/workers.py``), the torch warm-up on ``run_in_background``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from attention_core.train_config import TrainConfig

from .models.training_session import TrainingSession
from .settings import data_dir
from .views.head_grid import HeadGrid
from .views.training_compare import AblationView, CompareView
from .views.training_heads import HeadsView
from .views.training_plots import TrainingPlots
from .views.training_probe import ProbeBox
from .views.training_run import RunControls
from .views.training_setup import TrainingSetupForm
from .views.training_timeline import Timeline
from .views.training_tryit import TryItView
from .workers import run_in_background

TICK_MS = 33  # replay and the live Try it refresh advance on this timer (the session decides what changes)


def _group(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    lay = QVBoxLayout(box)
    lay.setContentsMargins(6, 4, 6, 6)
    lay.addWidget(widget)
    return box


class TrainingPanel(QWidget):
    """Set up, run, watch, replay, probe, try and ablate the tiny reversal transformer of ``session``."""

    warm_up_torch = True
    """Import torch and run one tiny step in the background when the panel is built, so Start does not wait for
    it. ``--self-test`` switches it off (it exits within a second)."""

    preview_untrained = True
    """Once torch is loaded, build the settings' model (paused at step 0) so the grid shows the untrained heads
    before the learner presses anything. Tests switch it off to control every run themselves."""

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        root = QHBoxLayout(self)
        root.setContentsMargins(4, 4, 4, 4)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        root.addWidget(self.splitter)
        self.splitter.addWidget(self._build_left())
        self.splitter.addWidget(self._build_centre())
        self.splitter.addWidget(self._build_right())
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setStretchFactor(2, 1)
        self.splitter.setSizes([312, 566, 396])
        self.splitter.setChildrenCollapsible(False)
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
        col.addWidget(_group("Run", self.run_controls))
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
        scroll = QScrollArea()
        scroll.setWidget(inner)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFixedWidth(312)
        return scroll

    def _build_centre(self) -> QWidget:
        w = QWidget()
        v = QVBoxLayout(w)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(3)
        self.heads = HeadsView(self.session)
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
        split.addWidget(self.tabs)
        split.setSizes([310, 420])
        split.setChildrenCollapsible(False)
        return split

    # the widgets tests and scripts reach for, by their old names
    @property
    def head_grid(self) -> HeadGrid:
        return self.heads.head_grid

    @property
    def status_label(self) -> QLabel:
        return self.run_controls.status_label

    def set_dark(self, dark: bool) -> None:
        """The theme, from the window (``app/theme.py``), to every view that draws colours of its own."""
        for view in (self.heads, self.plots, self.tryit, self.compare, self.ablation):
            view.set_dark(dark)

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
        self.export_menu.aboutToShow.connect(self._fill_export_menu)
        self._on_run_state()

    def _show_config(self, config: TrainConfig | None) -> None:
        """The form shows the settings in force (a loaded model brings its own)."""
        if config is not None and config != self.form.config():
            with QSignalBlocker(self.form):
                self.form.set_config(config)

    def _on_run_state(self, *_: object) -> None:
        s = self.session
        self.form.setEnabled(not s.is_running)
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
        self._closing = True
        self._tick.stop()
        self.session.shutdown()
        if self.warm_worker is not None:
            from .workers import wait_for_workers

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
        from attention_core.checkpoint import CheckpointError

        try:
            self.session.load(path)
        except (CheckpointError, OSError) as exc:
            QMessageBox.warning(self, "Cannot load this model", str(exc))
            return False
        return True

    def _save_dialog(self) -> None:
        latest = self.session.history.latest
        name = f"reversal-step{latest.step if latest is not None else 0}.safetensors"
        path, _ = QFileDialog.getSaveFileName(self, "Save model", str(_models_dir() / name), "Models (*.safetensors)")
        if not path:
            return
        if not path.endswith(".safetensors"):
            path += ".safetensors"
        try:
            self.save_model(path)
        except (RuntimeError, OSError) as exc:
            QMessageBox.warning(self, "Cannot save the model", str(exc))

    def _load_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load model", str(_models_dir()),
                                              "Models (*.safetensors);;All files (*)")
        if path:
            self.load_model(path)

    # ================================================================== export
    def _fill_export_menu(self) -> None:
        m = self.export_menu
        m.clear()
        has = self.session.shown_snapshot is not None
        m.addAction("Head grid as PNG…", lambda: self._export_dialog("grid", ".png")).setEnabled(has)
        m.addAction("Head grid as SVG…", lambda: self._export_dialog("grid", ".svg")).setEnabled(has)
        heads = m.addMenu("One head (PNG, SVG or CSV)")
        heads.setEnabled(has)
        layers, nh = self.head_grid.shape
        for li in range(layers if has else 0):
            for h in range(nh):
                heads.addAction(f"layer {li + 1} · head {h + 1}…",
                                lambda li=li, h=h: self._export_dialog("head", ".png", (li, h)))
        m.addAction("Metrics history as CSV…", lambda: self._export_dialog("csv", ".csv")).setEnabled(has)

    def _export_dialog(self, what: str, suffix: str, head: tuple[int, int] = (0, 0)) -> None:
        step = self.session.shown_step or 0
        name = {"grid": f"heads-step{step}{suffix}", "csv": "training-history.csv",
                "head": f"layer{head[0] + 1}-head{head[1] + 1}-step{step}{suffix}"}[what]
        filters = {"grid": "Images (*.png *.svg)", "csv": "CSV (*.csv)", "head": "PNG, SVG or CSV (*.png *.svg *.csv)"}
        path, _ = QFileDialog.getSaveFileName(self, "Export", str(Path.home() / name), filters[what])
        if not path:
            return
        try:
            {"grid": lambda: self.export_grid(path), "head": lambda: self.export_head(*head, path),
             "csv": lambda: self.export_history_csv(path)}[what]()
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export failed", str(exc))

    def export_grid(self, path: str | Path) -> Path:
        """The whole head grid (maps, numbers, colour bar) at the shown step as one PNG or SVG."""
        from .export import export_widget_image

        export_widget_image(self.head_grid, path)
        return Path(path)

    def export_head(self, layer: int, head: int, path: str | Path) -> Path:
        """One head's map at the shown step as PNG, SVG or CSV."""
        from attention_core.masks import causal_mask

        from .export import export_heatmap

        snap = self.session.shown_snapshot
        if snap is None:
            raise ValueError("nothing to export yet")
        vals = snap.probe_weights[layer][head]
        blocked = ~causal_mask(vals.shape[0]) if snap.causal else None
        export_heatmap(path, vals, snap.labels, snap.labels,
                       f"layer {layer + 1} · head {head + 1} at step {snap.step}", blocked=blocked, kind="weights")
        return Path(path)

    def export_history_csv(self, path: str | Path) -> Path:
        """Every recorded step's metrics, one row per step."""
        from attention_core.training import write_history_csv

        write_history_csv(path, self.session.history.reports())
        return Path(path)

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
                             ("training-panel.png", self)):
            path = out_dir / name
            if widget.grab().save(str(path)):
                written.append(path)
        return written


def _models_dir() -> Path:
    try:
        d = data_dir() / "models"
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return Path.home()
    return d


def _warm_up() -> None:
    """Import torch and run one tiny training step off the GUI thread: torch's first model build, optimiser step
    and evaluation cost ~0.9 s more than later ones (lazy kernel and allocator set-up)."""
    import torch

    from attention_core.training import ReversalTrainer, TrainConfig

    torch.set_num_threads(1)  # one thread is faster for this tiny model (see training_runner.drive)
    ReversalTrainer(TrainConfig(train_size=64, test_size=16, train_eval_size=8, steps=1)).step()
