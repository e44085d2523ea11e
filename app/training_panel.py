"""The Training tab: train the tiny reversal transformer and watch its heads change.

Layout (left to right): set-up and run controls | the layer x head grid of attention maps for the probe, with
a timeline to scrub through the recorded snapshots | loss/accuracy curves over tabs for Try it, Ablate and
Compare.

Threads: training runs in a ``TrainingWorker`` on its own QThread, which owns the trainer while it runs and
emits one immutable ``Snapshot`` per step. This widget only stores snapshots (``TrainingHistory``) and draws at
most ~30 times a second (a frame timer), so the window stays responsive at any training speed. The GUI thread
touches the model only when no step can run: the worker is paused (inside ``worker.access()``, which holds the
step lock) or its thread has ended.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .training_state import (
    DEFAULT_SPEED_INDEX,
    SPEEDS,
    PlaybackCursor,
    Snapshot,
    TrainingHistory,
    format_eta,
    greedy_with_attention,
    model_accuracy,
    parse_tokens,
    token_labels,
    trainer_from_checkpoint,
)
from .training_worker import TrainingRun, TrainingWorker, protect_singletons
from .views.head_grid import HeadGrid
from .views.training_compare import AblationView, CompareView
from .views.training_plots import TrainingPlots
from .views.training_setup import TrainingSetupForm
from .views.training_tryit import TryItView, format_tokens

protect_singletons()  # shiboken6 6.12.0 + Python 3.11 refcount bug: see app/qt_compat.py

FRAME_MS = 33  # redraw at most ~30 times a second
SERIES_INTERVAL_S = 0.15  # loss/accuracy curves and sparklines while training runs
TRY_INTERVAL_S = 0.5  # the Try it tab while training runs
GOAL = 0.99

LEGEND = (
    "<b>How to read a map:</b> rows are queries (the position predicting the next token), columns are keys (the "
    "positions it looks at); darker = more attention. <span style='color:#0096ff'>○</span> marks the ideal "
    "anti-diagonal: the query at position L+p predicts reversed token p and should look at the mirrored input "
    "L−1−p. As the model learns, a copying head's weight gathers on the circles. Hatched cells are the future, "
    "blocked by the causal mask. Under each map: <span style='color:#d95f02'>rev</span> = reversal score (share of "
    "100 test sequences whose query L+p looks most at L−1−p), <span style='color:#1b6ac9'>focus</span> = mean row "
    "maximum and entropy (nats), over the probe's L output queries; sparklines show rev and focus over the run. "
    "<b>Click a head</b> to switch it off."
)


class _Warmup(QObject):
    done = Signal()


class TrainingPanel(QWidget):
    """Set up, run, watch, replay, probe and ablate a tiny reversal transformer.

    Signals: ``snapshotReceived(Snapshot)`` for every step that reaches the GUI thread; ``runFinished(str)``
    ("finished", "stopped" or "error") when the worker thread has ended.
    """

    snapshotReceived = Signal(object)
    runFinished = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.history = TrainingHistory()
        self.cursor = PlaybackCursor()
        self.cursor.speed = SPEEDS[DEFAULT_SPEED_INDEX][1]
        self.trainer: Any = None
        self.run: TrainingRun | None = None
        self._finished_runs: list[TrainingRun] = []
        self._pending_probe: list[int] | None = None
        self._loading_from: str | None = None
        self._ablation_base: dict[str, Any] | None = None
        self._drawn_key: tuple[Any, ...] = ()
        self._series_cache: tuple[int, Any] = (-1, None)
        self._series_drawn_at = 0.0
        self._try_refreshed_at = 0.0
        self._start_time: float | None = None
        self.time_to_goal: float | None = None
        self.goal_step: int | None = None
        self.last_error = ""
        self._build()
        # build the (empty) grid now: creating its plot items takes ~0.2 s, better here than after Start
        self.head_grid.set_shape(self.form.num_layers.value(), self.form.num_heads.value())
        self._frame = QTimer(self)
        self._frame.setInterval(FRAME_MS)
        self._frame.timeout.connect(self._on_frame)
        self._frame.start()
        self._warm = _Warmup(self)
        self._warm.done.connect(self.form.refresh_devices)
        self._warm.done.connect(self._preview_untrained)
        # not a daemon: a thread still importing torch or stepping a model while the interpreter shuts down can
        # crash it; shutdown() (on close) and interpreter exit wait for it instead
        self._closing = False
        self._warm_thread = threading.Thread(target=self._warm_up, name="torch-warm-up")
        if self.warm_up_torch:
            self._warm_thread.start()
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        self._update_controls()

    # ================================================================== building
    def _build(self) -> None:
        root = QHBoxLayout(self)
        root.setContentsMargins(4, 4, 4, 4)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        root.addWidget(splitter)
        splitter.addWidget(self._build_left())
        splitter.addWidget(self._build_centre())
        splitter.addWidget(self._build_right())
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 3)
        splitter.setStretchFactor(2, 1)
        splitter.setSizes([312, 566, 396])
        splitter.setChildrenCollapsible(False)
        self.splitter = splitter

    def _build_left(self) -> QWidget:
        inner = QWidget()
        col = QVBoxLayout(inner)
        col.setContentsMargins(2, 2, 6, 2)
        col.setSpacing(6)
        setup = QGroupBox("Set-up")
        sl = QVBoxLayout(setup)
        sl.setContentsMargins(6, 4, 6, 6)
        self.form = TrainingSetupForm()
        sl.addWidget(self.form)
        col.addWidget(setup)

        run = QGroupBox("Run")
        rl = QGridLayout(run)
        rl.setContentsMargins(6, 4, 6, 6)
        rl.setSpacing(4)
        self.start_button = QPushButton("▶ Start")
        self.start_button.setToolTip("Train from the form's settings (continues the current run if it is "
                                     "unfinished and the settings are unchanged).")
        self.pause_button = QPushButton("Pause")
        self.pause_button.setToolTip("Pause after the current step; Resume continues.")
        self.step_button = QPushButton("Step")
        self.step_button.setToolTip("Train exactly one batch, then stay paused.")
        self.stop_button = QPushButton("■ Stop")
        self.stop_button.setToolTip("End training; the recorded steps stay for replay, try-it and ablation.")
        self.reset_button = QPushButton("↺ Reset")
        self.reset_button.setToolTip("A fresh model from the form (same seed = same initialisation), at step 0.")
        rl.addWidget(self.start_button, 0, 0)
        rl.addWidget(self.pause_button, 0, 1)
        rl.addWidget(self.step_button, 0, 2)
        rl.addWidget(self.stop_button, 1, 0)
        rl.addWidget(self.reset_button, 1, 1)
        speed_row = QHBoxLayout()
        speed_row.addWidget(QLabel("speed"))
        self.speed_combo = QComboBox()
        for label, _ in SPEEDS:
            self.speed_combo.addItem(label)
        self.speed_combo.setCurrentIndex(DEFAULT_SPEED_INDEX)
        self.speed_combo.setToolTip("Steps per second, for training and for replay. Every step is recorded; "
                                    "'as fast as possible' trains at full speed (replay: the recorded pace).")
        speed_row.addWidget(self.speed_combo, 1)
        rl.addLayout(speed_row, 2, 0, 1, 3)
        self.progress = QProgressBar()
        self.progress.setFormat("not started")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        rl.addWidget(self.progress, 3, 0, 1, 3)
        self.eta_label = QLabel("ETA –")
        self.eta_label.setWordWrap(True)
        rl.addWidget(self.eta_label, 4, 0, 1, 3)
        self.status_label = QLabel("Ready. Start trains the model at a watchable speed.")
        self.status_label.setWordWrap(True)
        self.status_label.setStyleSheet("color:#333")
        rl.addWidget(self.status_label, 5, 0, 1, 3)
        col.addWidget(run)

        probe = QGroupBox("Probe sequence (shown in the grid)")
        pl = QVBoxLayout(probe)
        pl.setContentsMargins(6, 4, 6, 6)
        self.probe_combo = QComboBox()
        self.probe_combo.setEditable(True)
        self.probe_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.probe_combo.setToolTip("The L input tokens whose attention maps the grid shows; type your own "
                                    "(space-separated, then Enter) or pick one.")
        pl.addWidget(self.probe_combo)
        self.probe_error = QLabel()
        self.probe_error.setStyleSheet("color:#b00020")
        self.probe_error.setWordWrap(True)
        self.probe_error.setVisible(False)
        pl.addWidget(self.probe_error)
        self.ideal_check = QCheckBox("show ideal anti-diagonal ○")
        self.ideal_check.setChecked(True)
        pl.addWidget(self.ideal_check)
        col.addWidget(probe)

        files = QGroupBox("Model and export")
        fl = QHBoxLayout(files)
        fl.setContentsMargins(6, 4, 6, 6)
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Save the model (safetensors + its training config).")
        self.load_button = QPushButton("Load…")
        self.load_button.setToolTip("Load a model saved by this app.")
        self.export_button = QToolButton()
        self.export_button.setText("Export ▾")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.export_menu = QMenu(self.export_button)
        self.export_button.setMenu(self.export_menu)
        self.export_menu.aboutToShow.connect(self._fill_export_menu)
        fl.addWidget(self.save_button)
        fl.addWidget(self.load_button)
        fl.addWidget(self.export_button)
        col.addWidget(files)
        col.addStretch(1)

        scroll = QScrollArea()
        scroll.setWidget(inner)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFixedWidth(312)

        self.start_button.clicked.connect(self.start)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.step_button.clicked.connect(self.step)
        self.stop_button.clicked.connect(self.stop)
        self.reset_button.clicked.connect(self.reset)
        self.speed_combo.currentIndexChanged.connect(self._on_speed_changed)
        self.form.configChanged.connect(lambda _ok: self._on_form_changed())
        self.probe_combo.lineEdit().returnPressed.connect(self._on_probe_entered)
        self.probe_combo.activated.connect(lambda _i: self._on_probe_entered())
        self.ideal_check.toggled.connect(self._on_ideal_toggled)
        self.save_button.clicked.connect(self._save_dialog)
        self.load_button.clicked.connect(self._load_dialog)
        self._fill_probe_presets()
        return scroll

    def _build_centre(self) -> QWidget:
        w = QWidget()
        v = QVBoxLayout(w)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(3)
        self.title_label = QLabel("<b>Heads</b> — no model yet: press <b>Start</b> (or <b>Step</b>) to build it "
                                  "and watch every head's attention map change as it learns to reverse.")
        self.title_label.setTextFormat(Qt.TextFormat.RichText)
        self.title_label.setWordWrap(True)
        v.addWidget(self.title_label)
        self.head_grid = HeadGrid()
        self.head_grid.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        v.addWidget(self.head_grid, 1)
        self.hover_label = QLabel(" ")
        self.hover_label.setTextFormat(Qt.TextFormat.RichText)
        self.hover_label.setStyleSheet("color:#222; font-weight:bold")
        v.addWidget(self.hover_label)
        self.legend_label = QLabel(LEGEND)
        self.legend_label.setWordWrap(True)
        self.legend_label.setTextFormat(Qt.TextFormat.RichText)
        self.legend_label.setStyleSheet("color:#444; font-size:8pt")
        v.addWidget(self.legend_label)
        timeline = QHBoxLayout()
        self.start_step_button = QPushButton("step 0")
        self.start_step_button.setToolTip("Show step 0: the untrained model.")
        self.timeline = QSlider(Qt.Orientation.Horizontal)
        self.timeline.setRange(0, 0)
        self.timeline.setToolTip("Scrub through the recorded steps (maps, numbers and the cursor in the plots).")
        self.timeline_label = QLabel("step –")
        self.timeline_label.setMinimumWidth(92)
        self.replay_button = QPushButton("▶ Replay")
        self.replay_button.setToolTip("Play the recorded steps from here at the chosen speed.")
        self.live_button = QPushButton("● Live")
        self.live_button.setToolTip("Follow the newest step.")
        self.live_button.setCheckable(True)
        self.live_button.setChecked(True)
        timeline.addWidget(self.start_step_button)
        timeline.addWidget(self.timeline, 1)
        timeline.addWidget(self.timeline_label)
        timeline.addWidget(self.replay_button)
        timeline.addWidget(self.live_button)
        v.addLayout(timeline)
        self.head_grid.headClicked.connect(self.toggle_head)
        self.head_grid.cellHovered.connect(self._on_cell_hovered)
        self.timeline.valueChanged.connect(self._on_timeline_moved)
        self.start_step_button.clicked.connect(lambda: self.seek(0))
        self.replay_button.clicked.connect(self.replay)
        self.live_button.clicked.connect(self._on_live_clicked)
        return w

    def _build_right(self) -> QWidget:
        split = QSplitter(Qt.Orientation.Vertical)
        self.plots = TrainingPlots()
        split.addWidget(self.plots)
        self.tabs = QTabWidget()
        self.tryit = TryItView()
        self.ablation = AblationView()
        self.compare = CompareView()
        self.tabs.addTab(self.tryit, "Try it")
        self.tabs.addTab(self.ablation, "Ablate")
        self.tabs.addTab(self.compare, "Compare steps")
        split.addWidget(self.tabs)
        split.setSizes([310, 420])
        split.setChildrenCollapsible(False)
        self.tryit.requested.connect(self.try_sequence)
        self.ablation.restoreRequested.connect(self.restore_heads)
        self.compare.baselineChanged.connect(lambda _i: self._redraw(force=True))
        self.tabs.currentChanged.connect(lambda _i: self._update_compare())
        return split

    # ================================================================== run control
    @property
    def worker(self) -> TrainingWorker | None:
        return self.run.worker if self.run is not None else None

    def is_running(self) -> bool:
        """A worker thread exists and is not paused (a step may be in flight)."""
        return self.run is not None and self.run.is_alive() and not self.run.worker.paused

    def is_paused(self) -> bool:
        return self.run is not None and self.run.is_alive() and self.run.worker.paused

    def speed(self) -> float | None:
        return SPEEDS[self.speed_combo.currentIndex()][1]

    def set_speed(self, steps_per_second: float | None) -> None:
        """Select a playback/training speed (one of ``SPEEDS``' values; None = as fast as possible)."""
        for i, (_, sps) in enumerate(SPEEDS):
            if sps == steps_per_second:
                self.speed_combo.setCurrentIndex(i)
                return
        raise ValueError(f"speed must be one of {[s for _, s in SPEEDS]}")

    def start(self) -> None:
        """Start training from the form's settings: resumes a paused run and continues an unfinished one when the
        settings are unchanged; otherwise builds a fresh, seeded model."""
        cfg = self.form.config()
        if self.run is not None and self.run.is_alive():
            if not self.run.worker.paused:
                return
            if cfg is None or self._form_matches_trainer():
                self.resume()
                return
        if cfg is None:
            self._set_status(f"Cannot start: {self.form.error()}", error=True)
            return
        self._start_time = time.perf_counter()
        self.time_to_goal = None
        self.goal_step = None
        self._launch(self._factory_for(cfg), paused=False)
        self._set_status(self._training_status() if self.trainer is not None else "Building the model and data…")
        self.cursor.go_live()

    def toggle_pause(self) -> None:
        if self.is_paused():
            self.resume()
        elif self.is_running():
            self.pause()

    def pause(self) -> None:
        """Pause after the step in flight; returns when no step runs any more."""
        if self.run is not None and self.run.is_alive():
            self.run.worker.pause()
            self._set_status(f"Paused at step {self._current_step()}. Step trains one batch; Resume continues.")
            self._auto_try()
        self._update_controls()

    def resume(self) -> None:
        if self.run is None or not self.run.is_alive():
            return
        with self.run.worker.access() as trainer:
            self._restore_heads_locked(trainer)
        if self._start_time is None:
            self._start_time = time.perf_counter()
        self.cursor.go_live()
        self.run.worker.resume()
        self._set_status(self._training_status())
        self._update_controls()

    def step(self) -> None:
        """Train exactly one batch (pausing a running run, or starting a paused one first)."""
        cfg = self.form.config()
        alive = self.run is not None and self.run.is_alive()
        if alive and self.run is not None and (cfg is None or self._form_matches_trainer()):
            with self.run.worker.access() as trainer:
                self._restore_heads_locked(trainer)
            self.cursor.go_live()
            self.run.worker.request_step()
            self._update_controls()
            return
        if cfg is None:
            self._set_status(f"Cannot step: {self.form.error()}", error=True)
            return
        self._launch(self._factory_for(cfg), paused=True)
        self.cursor.go_live()
        assert self.run is not None
        self.run.worker.request_step()
        self._update_controls()

    def stop(self) -> None:
        """End training and wait for the worker thread to finish (at most one step)."""
        if self.run is not None:
            self.run.shutdown()
            self._set_status(f"Stopped at step {self._current_step()}. Scrub the timeline, try sequences, "
                             "click heads to ablate, or Start to continue.")
        self._update_controls()

    def reset(self) -> None:
        """A fresh model from the form (same seed = same initialisation), shown at step 0, paused."""
        cfg = self.form.config()
        if cfg is None:
            self._set_status(f"Cannot reset: {self.form.error()}", error=True)
            return
        self._end_run()
        self.trainer = None
        self.history.clear()
        self.cursor.go_live()
        self._start_time = None
        self.time_to_goal = None
        self.goal_step = None
        self._launch(self._new_trainer_factory(cfg), paused=True)
        self._set_status("Reset: the untrained model at step 0. Start or Step to train.")

    def shutdown(self) -> None:
        """Stop any worker and wait for its thread, and for the torch warm-up (call before the window closes)."""
        self._closing = True
        if self._warm_thread.is_alive():  # never started counts as not alive
            self._warm_thread.join(timeout=60)
        self._end_run()

    def _end_run(self) -> None:
        """Stop the worker and wait for its thread (before a new run, a reset or a load)."""
        if self.run is not None:
            self.run.shutdown()
            self._cleanup_run()

    def _factory_for(self, cfg: Any) -> Any:
        """Continue the current trainer when it is unfinished and built from this config, else a fresh one."""
        if self.trainer is not None and not self.trainer.finished and cfg == self.trainer.config:
            trainer = self.trainer
            return lambda: trainer
        return self._new_trainer_factory(cfg)

    def _new_trainer_factory(self, cfg: Any) -> Any:
        probe = self._pending_probe
        if probe is not None and len(probe) != cfg.seq_len:
            probe = None

        def make() -> Any:
            from attention_core.training import ReversalTrainer

            try:
                return ReversalTrainer(cfg, probe)
            except ValueError:
                return ReversalTrainer(cfg)

        return make

    def _launch(self, factory: Any, *, paused: bool) -> None:
        if self.run is not None:
            self._end_run()
        if self.trainer is not None:
            self._restore_heads_locked(self.trainer)
        worker = TrainingWorker(factory, start_paused=paused, steps_per_second=self.speed())
        worker.ready.connect(self._on_ready)
        worker.snapshot.connect(self._on_snapshot)
        worker.progress.connect(self._on_progress)
        worker.pausedChanged.connect(self._on_paused_changed)
        worker.error.connect(self._on_error)
        worker.finished.connect(self._on_finished)
        self.run = TrainingRun(worker, self)
        self.run.start()
        self._update_controls()

    # ================================================================== worker signals
    def _on_ready(self, trainer: Any, snapshots: list[Snapshot]) -> None:
        if self.run is None or self.sender() is not self.run.worker:
            return
        if trainer is not self.trainer:
            self.trainer = trainer
            self.history.clear()
            self._ablation_base = None
            cfg = trainer.config
            self.tryit.set_heads(cfg.num_layers, cfg.num_heads)
            self.head_grid.set_disabled_heads(set())
            if not self.tryit.input.text().strip() or len(self.tryit.input.text().split()) != cfg.seq_len:
                self.tryit.input.setText(format_tokens(trainer.probe[: cfg.seq_len].tolist()))
            self._fill_probe_presets(trainer.probe[: cfg.seq_len].tolist())
        if self._loading_from is not None:
            self.form.set_config(trainer.config)
            self._set_status(f"Loaded {self._loading_from} (step {trainer.step_count}). Start continues training; "
                             "step 0 is the untrained model of the same seed.")
            self._loading_from = None
        for s in snapshots:
            self.history.add(s)
        if self.run is not None and not self.run.worker.paused:
            self._set_status(self._training_status())
        elif self.tryit.result is None or self.tryit.result.inputs != tuple(trainer.probe[: trainer.config.seq_len]
                                                                              .tolist()):
            self._auto_try()  # a paused preview or a loaded model: fill the Try it tab right away
        self._update_controls()

    def _training_status(self) -> str:
        sps = self.speed()
        pace = "as fast as possible" if sps is None else f"at {sps:g} steps/s"
        return f"Training {pace}… Pause, Step or Stop any time; every step is recorded for replay."

    def _on_snapshot(self, snap: Snapshot) -> None:
        if self.run is None or self.sender() is not self.run.worker:
            return
        if not self.history.add(snap):
            return
        r = snap.report
        if (self.goal_step is None and r.evaluated and r.sequence_accuracy >= GOAL):
            self.goal_step = snap.step
            if self._start_time is not None:
                self.time_to_goal = time.perf_counter() - self._start_time
        self.snapshotReceived.emit(snap)

    def _on_progress(self, step: int, total: int, eta: float) -> None:
        self.progress.setFormat("step %v / %m")
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(step)
        text = "ETA –" if eta < 0 else format_eta(eta)
        if self.goal_step is not None:
            took = f" ({self.time_to_goal:.1f} s after Start)" if self.time_to_goal is not None else ""
            text += f" · ≥ 99 % exact-sequence at step {self.goal_step}{took}"
        self.eta_label.setText(text)

    def _on_paused_changed(self, _paused: bool) -> None:
        self._update_controls()

    def _on_error(self, text: str) -> None:
        self.last_error = text
        last = text.strip().splitlines()[-1] if text.strip() else "unknown error"
        self._set_status(f"Training failed: {last}", error=True)

    def _on_finished(self, reason: str) -> None:
        run = self.run
        if run is not None and self.sender() is run.worker:
            run.thread.wait(5000)
            self._cleanup_run()
            if reason == "finished" and self.trainer is not None:
                last = self.history.latest
                acc = f"{last.report.sequence_accuracy:.1%}" if last is not None else "?"
                self._set_status(f"Finished: {self.trainer.step_count} steps, exact-sequence test accuracy "
                                 f"{acc}. Scrub the timeline, try sequences, or click heads to ablate.")
            self._auto_try()
            self._update_controls()
            self.runFinished.emit(reason)
        self._update_controls()

    def _auto_try(self) -> None:
        """Refresh the Try it tab with the current model once it is idle (so it is never empty)."""
        if self.trainer is None or self.is_running():
            return
        try:
            self.try_sequence(self.tryit.input.text())
        except RuntimeError:
            pass

    def _cleanup_run(self) -> None:
        run = self.run
        self.run = None
        if run is not None:
            run.thread.wait(5000)
            # keep the finished objects referenced until Qt is done delivering their last signals
            self._finished_runs.append(run)
            self._finished_runs = [r for r in self._finished_runs[-3:]]
        self._update_controls()

    # ================================================================== model access
    @contextmanager
    def model_access(self) -> Iterator[Any]:
        """Yield the trainer when no training step can run (paused worker: under its lock; no worker: freely).

        Raises RuntimeError while training runs: acting on a model mid-training would change the run.
        """
        if self.trainer is None:
            raise RuntimeError("no model yet: Start, Step or Load first")
        if self.run is not None and self.run.is_alive():
            worker = self.run.worker
            if not worker.paused:
                raise RuntimeError("pause or stop training first")
            with worker.access() as trainer:
                yield trainer if trainer is not None else self.trainer
        else:
            yield self.trainer

    def _restore_heads_locked(self, trainer: Any) -> None:
        if trainer is None:
            return
        off = trainer.model.disabled_heads()
        for li, h in off:
            trainer.model.set_head_enabled(li, h, True)
        if off:
            self.head_grid.set_disabled_heads(set())
            self._ablation_base = None
            self.ablation.set_result({"off": [], "step": trainer.step_count,
                                      "base_seq": float("nan"), "base_tok": float("nan")})

    # ================================================================== ablation
    def toggle_head(self, layer: int, head: int) -> None:
        """Switch one head off (or back on) and show the effect on accuracy and the probe's output."""
        try:
            with self.model_access() as trainer:
                model = trainer.model
                if not model.disabled_heads() or self._ablation_base is None:
                    self._ablation_base = self._measure(trainer)
                model.set_head_enabled(layer, head, not model.head_enabled(layer, head))
                now = self._measure(trainer)
                off = model.disabled_heads()
        except RuntimeError as exc:
            self._set_status(f"To switch heads off, {exc}.", error=True)
            return
        base = self._ablation_base
        self.head_grid.set_disabled_heads(set(off))
        self.ablation.set_result({
            "off": off, "step": trainer.step_count, "base_seq": base["seq"], "base_tok": base["tok"],
            "now_seq": now["seq"], "now_tok": now["tok"], "probe_in": format_tokens(base["probe_in"]),
            "probe_base": format_tokens(base["probe_out"]), "probe_now": format_tokens(now["probe_out"]),
        })
        self.tabs.setCurrentWidget(self.ablation)
        state = "off" if (layer, head) in off else "back on"
        self._set_status(f"Layer {layer + 1} head {head + 1} switched {state}: exact-sequence test accuracy "
                         f"{now['seq']:.1%} (all heads: {base['seq']:.1%}).")
        if self.tryit.result is not None:
            self.try_sequence(self.tryit.input.text())

    def restore_heads(self) -> None:
        """Switch every head back on."""
        try:
            with self.model_access() as trainer:
                self._restore_heads_locked(trainer)
                base = self._measure(trainer)
        except RuntimeError as exc:
            self._set_status(str(exc), error=True)
            return
        self.ablation.set_result({"off": [], "step": trainer.step_count, "base_seq": base["seq"],
                                  "base_tok": base["tok"]})
        if self.tryit.result is not None:
            self.try_sequence(self.tryit.input.text())

    def _measure(self, trainer: Any) -> dict[str, Any]:
        cfg = trainer.config
        tok, seq = model_accuracy(trainer.model, trainer.test_data, cfg.seq_len, cfg.causal)
        probe_in = trainer.probe[: cfg.seq_len].tolist()
        out = greedy_with_attention(trainer.model, probe_in, cfg.causal).generated
        return {"tok": tok, "seq": seq, "probe_in": probe_in, "probe_out": list(out)}

    # ================================================================== try it
    def try_sequence(self, text: str) -> None:
        """Greedy-reverse the typed tokens with the current model and show the attention of each output step."""
        if self.trainer is None:
            self.tryit.set_error("No model yet: press Start (or Step, or Load a model) first.")
            return
        cfg = self.trainer.config
        try:
            tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size)
        except ValueError as exc:
            self.tryit.set_error(str(exc))
            return
        worker = self.worker
        if worker is not None and self.run is not None and self.run.is_alive():
            with worker.access() as trainer:  # waits for the step in flight (< 0.1 s)
                trainer = trainer or self.trainer
                result = greedy_with_attention(trainer.model, tokens, cfg.causal)
                step = int(trainer.step_count)
        else:
            result = greedy_with_attention(self.trainer.model, tokens, cfg.causal)
            step = int(self.trainer.step_count)
        self.tryit.set_heads(cfg.num_layers, cfg.num_heads)
        self.tryit.set_result(result, step)

    def _refresh_try_live(self) -> None:
        """While training runs, refresh Try it about twice a second — only when the worker is between steps
        (a non-blocking lock attempt), so the GUI never waits for a training step."""
        now = time.perf_counter()
        r = self.tryit.result
        if (r is None or self.trainer is None or now - self._try_refreshed_at < TRY_INTERVAL_S
                or self.tryit.step == self.trainer.step_count or self.worker is None):
            return
        self._try_refreshed_at = now
        with self.worker.try_access() as trainer:
            if trainer is None or trainer.model.disabled_heads():
                return
            result = greedy_with_attention(trainer.model, list(r.inputs), trainer.config.causal)
            step = int(trainer.step_count)
        self.tryit.set_result(result, step)

    # ================================================================== probe
    def _fill_probe_presets(self, default: list[int] | None = None) -> None:
        cfg = self.trainer.config if self.trainer is not None else self.form.config()
        L = cfg.seq_len if cfg is not None else self.form.seq_len.value()
        V = cfg.vocab_size if cfg is not None else self.form.vocab_size.value()
        presets = []
        if default is not None:
            presets.append(default)
        presets.append([2 + i % (V - 2) for i in range(L)])
        presets.append([2 + (3 * i + 1) % (V - 2) for i in range(L)])
        presets.append([2 + (V - 3 - i) % (V - 2) for i in range(L)])
        current = self.probe_combo.currentText()
        self.probe_combo.blockSignals(True)
        self.probe_combo.clear()
        seen = set()
        for p in presets:
            text = format_tokens(p)
            if text not in seen:
                seen.add(text)
                self.probe_combo.addItem(text)
        self.probe_combo.setEditText(format_tokens(default) if default is not None else current or
                                     self.probe_combo.itemText(0))
        self.probe_combo.blockSignals(False)

    def _on_probe_entered(self) -> None:
        self.set_probe_text(self.probe_combo.currentText())

    def set_probe_text(self, text: str) -> bool:
        """Use these L tokens as the probe (shown from now on; the latest step is redrawn when idle)."""
        cfg = self.trainer.config if self.trainer is not None else self.form.config()
        if cfg is None:
            return False
        try:
            tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size)
        except ValueError as exc:
            self.probe_error.setText(str(exc))
            self.probe_error.setVisible(True)
            return False
        self.probe_error.setVisible(False)
        self._pending_probe = tokens
        if self.trainer is None:
            return True
        from attention_core.analysis import probe_attention

        worker = self.worker
        idle = worker is None or not (self.run is not None and self.run.is_alive()) or worker.paused
        if worker is not None and self.run is not None and self.run.is_alive():
            with worker.access() as trainer:
                trainer.set_probe(tokens)
                weights = probe_attention(trainer.model, trainer.probe, cfg.causal) if idle else None
                probe = trainer.probe.tolist()
        else:
            self.trainer.set_probe(tokens)
            weights = probe_attention(self.trainer.model, self.trainer.probe, cfg.causal)
            probe = self.trainer.probe.tolist()
        latest = self.history.latest
        if weights is not None and latest is not None and latest.step == self.trainer.step_count:
            self.history.replace_latest(latest.with_probe(probe, weights))
        self._redraw(force=True)
        return True

    # ================================================================== timeline
    def seek(self, index: int) -> None:
        """Show recorded snapshot ``index`` (0 = the untrained model)."""
        self.cursor.set_length(len(self.history))
        self.cursor.seek(index)
        self._redraw(force=True)

    def go_live(self) -> None:
        self.cursor.go_live()
        self._redraw(force=True)

    def replay(self) -> None:
        self.cursor.set_length(len(self.history))
        self.cursor.play(time.perf_counter(), self.history)
        self._redraw(force=True)

    def shown_index(self) -> int:
        return self.cursor.index

    def shown_snapshot(self) -> Snapshot | None:
        if not len(self.history):
            return None
        return self.history[min(self.cursor.index, len(self.history) - 1)]

    def _on_timeline_moved(self, value: int) -> None:
        if value != self.cursor.index or self.cursor.follow_live:
            self.seek(value)

    def _on_live_clicked(self) -> None:
        self.go_live()

    def _on_speed_changed(self, _index: int) -> None:
        sps = self.speed()
        self.cursor.set_speed(sps, time.perf_counter(), self.history)
        if self.worker is not None:
            self.worker.set_speed(sps)

    def _on_ideal_toggled(self, on: bool) -> None:
        self.head_grid.set_show_ideal(on)

    def _on_form_changed(self) -> None:
        self._update_controls()
        if self.trainer is None:
            self._fill_probe_presets()

    # ================================================================== drawing
    def _on_frame(self) -> None:
        self._redraw()
        if self.is_running() and self.tabs.currentWidget() is self.tryit:
            self._refresh_try_live()

    def _redraw(self, force: bool = False) -> None:
        n = len(self.history)
        self.cursor.set_length(n)
        idx = self.cursor.tick(time.perf_counter(), self.history)
        key = (self.history.version, idx, self.cursor.follow_live, self.compare.baseline.value())
        if not force and key == self._drawn_key:
            return
        self._drawn_key = key
        if n == 0:
            self.timeline.blockSignals(True)
            self.timeline.setRange(0, 0)
            self.timeline.blockSignals(False)
            self.timeline_label.setText("step –")
            return
        snap = self.history[idx]
        latest = self.history[n - 1]
        self.head_grid.set_maps(snap.probe_weights, snap.labels, seq_len=snap.seq_len, causal=snap.causal,
                                reversal=snap.reversal_scores, entropy=snap.entropy, focus=snap.focus)
        self.head_grid.set_show_ideal(self.ideal_check.isChecked())
        total = self.trainer.total_steps if self.trainer is not None else latest.step
        version, _ = self._series_cache
        now = time.perf_counter()
        # curves over the whole run change a little per step: while training runs at full speed, redrawing them
        # ~6 times a second is enough, and leaves the GIL to the training thread (maps still update every frame)
        if version != self.history.version and (force or not self.is_running() or
                                                now - self._series_drawn_at >= SERIES_INTERVAL_S):
            steps, rev = self.history.head_series("reversal")
            _, foc = self.history.head_series("focus")
            self._series_cache = (self.history.version, None)
            self._series_drawn_at = now
            self.head_grid.set_sparklines(steps, rev, foc, max_step=max(total, latest.step))
            self.plots.set_series(self.history.series(), max_step=max(total, latest.step))
        self.head_grid.set_sparkline_cursor(snap.step)
        self.plots.set_cursor(snap.step)
        self.timeline.blockSignals(True)
        self.timeline.setRange(0, n - 1)
        self.timeline.setValue(idx)
        self.timeline.blockSignals(False)
        self.timeline_label.setText(f"step {snap.step} / {total}")
        self.live_button.setChecked(self.cursor.follow_live)
        self.replay_button.setText("■ Stop replay" if self.cursor.playing else "▶ Replay")
        r = snap.report
        L = snap.seq_len
        inputs = token_labels(snap.probe[:L])
        mask_note = "" if snap.causal else " · <span style='color:#b36b00'><b>no causal mask</b></span>"
        where = "live" if self.cursor.follow_live else ("replay" if self.cursor.playing else "scrubbed")
        self.title_label.setText(
            f"<b>Heads at step {snap.step}</b> of {total} ({where}) — probe <b>{' '.join(inputs)}</b> → "
            f"should give <b>{' '.join(reversed(inputs))}</b> · test exact-sequence "
            f"<b>{r.sequence_accuracy:.0%}</b>, per-token {r.reversal_accuracy:.0%}{mask_note}")
        if self.tabs.currentWidget() is self.compare:  # a hidden table need not follow every frame
            self._update_compare(idx)

    def _update_compare(self, idx: int | None = None) -> None:
        n = len(self.history)
        if n == 0:
            return
        idx = self.cursor.index if idx is None else idx
        idx = min(idx, n - 1)
        self.compare.set_steps([s.step for s in self.history])
        base = min(self.compare.baseline.value(), n - 1)
        self.compare.set_rows(self.history.compare(base, idx), self.history[base].step, self.history[idx].step)

    def _on_cell_hovered(self, layer: int, head: int, q: int, k: int) -> None:
        snap = self.shown_snapshot()
        if snap is None or layer < 0 or q < 0:
            self.hover_label.setText(" ")
            return
        labels = snap.labels
        w = snap.probe_weights[layer][head, q, k]
        L = snap.seq_len
        role = ""
        if L <= q < 2 * L:
            p = q - L
            role = (f" — this query predicts reversed token {p + 1}; the mirrored input is position {L - 1 - p}"
                    + (" ✓" if k == L - 1 - p else ""))
        future = " <span style='color:#b36b00'>(a future position: a leak)</span>" if k > q else ""
        self.hover_label.setText(
            f"layer {layer + 1} · head {head + 1}: query {q} ('{labels[q]}') → key {k} ('{labels[k]}'): weight "
            f"{w:.3f}{future}{role}")

    # ================================================================== controls state
    def _current_step(self) -> int:
        return int(self.trainer.step_count) if self.trainer is not None else 0

    def _update_controls(self) -> None:
        alive = self.run is not None and self.run.is_alive()
        paused = alive and self.run is not None and self.run.worker.paused
        running = alive and not paused
        valid = self.form.config() is not None
        has_model = self.trainer is not None
        same = self._form_matches_trainer()
        self.start_button.setEnabled(valid and not running)
        started = has_model and self.trainer.step_count > 0
        self.start_button.setText("▶ Resume" if paused and same and started else "▶ Start")
        self.pause_button.setEnabled(alive and (started or not paused))
        self.pause_button.setText("Resume" if paused else "Pause")
        self.step_button.setEnabled(valid and not running)
        self.stop_button.setEnabled(alive)
        self.reset_button.setEnabled(valid)
        self.save_button.setEnabled(has_model and not running)
        self.form.setEnabled(not running)

    def _form_matches_trainer(self) -> bool:
        return self.trainer is not None and self.form.config() == self.trainer.config

    def _set_status(self, text: str, error: bool = False) -> None:
        self.status_label.setText(text)
        self.status_label.setStyleSheet("color:#b00020" if error else "color:#333")

    # ================================================================== save / load / export
    def _default_dir(self) -> Path:
        from platformdirs import user_data_dir

        d = Path(user_data_dir("AttentionPlayground", appauthor=False)) / "models"
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError:
            return Path.home()
        return d

    def save_model(self, path: str | Path) -> Path:
        """Save the current model: ``NAME.safetensors`` (weights; training config, step and probe in its
        metadata, which is what Load reads) plus ``NAME.json``, the same config for people and other tools."""
        import json

        from attention_core.checkpoint import save_checkpoint
        from attention_core.fileio import atomic_write

        path = Path(path)
        with self.model_access() as trainer:
            extra = {"train_config": trainer.config.to_dict(), "step": int(trainer.step_count),
                     "probe": [int(t) for t in trainer.probe.tolist()]}
            save_checkpoint(path, trainer.model, extra=extra)
            text = json.dumps({"model_config": trainer.model.config.to_dict(), **extra}, indent=2)
        atomic_write(path.with_suffix(".json"), lambda fh: fh.write(text), text=True)
        return path

    def load_model(self, path: str | Path) -> bool:
        """Load a checkpoint; a corrupted or foreign file is refused with a message box giving the reason."""
        from attention_core.checkpoint import CheckpointError, load_checkpoint

        try:
            model, meta = load_checkpoint(path)
        except CheckpointError as exc:
            QMessageBox.warning(self, "Cannot load this model", str(exc))
            return False
        self._end_run()
        self.trainer = None
        self.history.clear()
        self.cursor.go_live()
        self._loading_from = Path(path).name

        def make() -> Any:
            return trainer_from_checkpoint(model, meta)

        self._launch(make, paused=True)
        return True

    def _save_dialog(self) -> None:
        step = self._current_step()
        path, _ = QFileDialog.getSaveFileName(self, "Save model", str(self._default_dir() /
                                                                     f"reversal-step{step}.safetensors"),
                                              "Models (*.safetensors)")
        if not path:
            return
        if not path.endswith(".safetensors"):
            path += ".safetensors"
        try:
            self.save_model(path)
        except (RuntimeError, OSError) as exc:
            QMessageBox.warning(self, "Cannot save the model", str(exc))
            return
        self._set_status(f"Saved {path}")

    def _load_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load model", str(self._default_dir()),
                                              "Models (*.safetensors);;All files (*)")
        if path:
            self.load_model(path)

    def _fill_export_menu(self) -> None:
        m = self.export_menu
        m.clear()
        has = len(self.history) > 0
        m.addAction("Head grid as PNG…", lambda: self._export_dialog("grid", ".png")).setEnabled(has)
        m.addAction("Head grid as SVG…", lambda: self._export_dialog("grid", ".svg")).setEnabled(has)
        heads = m.addMenu("One head (PNG, SVG or CSV)")
        heads.setEnabled(has)
        if has:
            layers, nh = self.head_grid.shape
            for li in range(layers):
                for h in range(nh):
                    heads.addAction(f"layer {li + 1} · head {h + 1}…",
                                    lambda li=li, h=h: self._export_dialog("head", ".png", (li, h)))
        m.addAction("Metrics history as CSV…", lambda: self._export_dialog("csv", ".csv")).setEnabled(has)

    def _export_dialog(self, what: str, suffix: str, head: tuple[int, int] | None = None) -> None:
        snap = self.shown_snapshot()
        step = snap.step if snap is not None else 0
        name = {"grid": f"heads-step{step}{suffix}", "csv": "training-history.csv",
                "head": f"layer{(head or (0, 0))[0] + 1}-head{(head or (0, 0))[1] + 1}-step{step}{suffix}"}[what]
        filters = {"grid": "Images (*.png *.svg)", "csv": "CSV (*.csv)", "head": "PNG, SVG or CSV (*.png *.svg *.csv)"}
        path, _ = QFileDialog.getSaveFileName(self, "Export", str(Path.home() / name), filters[what])
        if not path:
            return
        try:
            if what == "grid":
                self.export_grid(path)
            elif what == "head":
                assert head is not None
                self.export_head(head[0], head[1], path)
            else:
                self.export_history_csv(path)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export failed", str(exc))
            return
        self._set_status(f"Exported {path}")

    def export_grid(self, path: str | Path) -> Path:
        """The whole head grid (maps, numbers, colour bar) as one PNG or SVG."""
        from .export import export_widget_image

        export_widget_image(self.head_grid, path)
        return Path(path)

    def export_head(self, layer: int, head: int, path: str | Path) -> Path:
        """One head's map at the shown step as PNG, SVG or CSV."""
        from .export import export_heatmap

        snap = self.shown_snapshot()
        if snap is None:
            raise ValueError("nothing to export yet")
        vals = snap.probe_weights[layer][head]
        n = vals.shape[0]
        blocked = ~np.tril(np.ones((n, n), dtype=bool)) if snap.causal else None
        export_heatmap(path, vals, snap.labels, snap.labels,
                       f"layer {layer + 1} · head {head + 1} at step {snap.step}", blocked=blocked, kind="weights")
        return Path(path)

    def export_history_csv(self, path: str | Path) -> Path:
        """Every recorded step's metrics, one row per step."""
        from attention_core.training import write_history_csv

        write_history_csv(path, self.history.reports())
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
        self._redraw(force=True)
        QApplication.processEvents()
        written = []
        for name, widget in (("training-grid.png", self.head_grid), ("training-plots.png", self.plots),
                             ("training-panel.png", self)):
            path = out_dir / name
            if widget.grab().save(str(path)):
                written.append(path)
        return written

    # ================================================================== misc
    def _warm_up(self) -> None:
        """Import torch and run one tiny training step off the GUI thread, so Start does not wait for it.

        torch's first model build, optimiser step and evaluation cost ~0.9 s more than later ones (lazy kernel
        and allocator set-up); paying it here, while the learner reads the panel, keeps Start snappy.
        """
        try:
            import torch

            from attention_core.training import ReversalTrainer, TrainConfig

            torch.set_num_threads(1)  # see TrainingWorker.run: one thread is faster for this model
            ReversalTrainer(TrainConfig(train_size=64, test_size=16, train_eval_size=8, steps=1)).step()
        except Exception:
            return
        if self._closing:
            return
        try:
            self._warm.done.emit()
        except RuntimeError:  # the panel was deleted meanwhile
            pass

    warm_up_torch = True
    """Import torch in the background when the panel is built. ``--self-test`` switches it off: it exits within
    a second, and closing waits for the warm-up (about 1.5 s) for nothing."""

    preview_untrained = True
    """Once torch is loaded, build the form's model (paused at step 0) so the grid shows the untrained heads
    before the learner presses anything. Tests switch it off to control every run themselves."""

    def _preview_untrained(self) -> None:
        if not self.preview_untrained or self.trainer is not None or self.run is not None:
            return
        if self.form.config() is None:
            return
        self.reset()
        self._set_status("This is the untrained model (step 0): its heads look almost anywhere. Press Start to "
                         "train it at a watchable speed, or Step to go one batch at a time.")

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self.shutdown()
        super().closeEvent(event)
