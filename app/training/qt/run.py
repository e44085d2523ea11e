"""The Training tab's run controls: Start / Pause·Resume / Step / Stop / Reset, speed, progress, ETA, status.

Every label and enabled state is derived from the session on its events (``run_state``, ``config``,
``progress``, ``history``, ``speed``, ``status``), so a button can never claim a state the run is not in: while
paused only one button reads "Resume". Start is emitted as ``startRequested`` because the panel may have to ask
first (continue a finished run, or start a new one); the other buttons call the session directly.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from app.training.model.session import TrainingSession
from app.training.model.tools import SPEEDS


class RunControls(QWidget):
    startRequested = Signal()

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(4)
        self.start_button = QPushButton("▶ Start")
        self.start_button.setToolTip("Train from the settings. After a finished run (or with changed settings) it "
                                     "asks: continue this model, or a new run.")
        self.pause_button = QPushButton("Pause")
        self.pause_button.setToolTip("Pause after the current step; Resume continues.")
        self.step_button = QPushButton("Step")
        self.step_button.setToolTip("Train exactly one batch, then stay paused.")
        self.stop_button = QPushButton("■ Stop")
        self.stop_button.setToolTip("End training; the recorded steps stay for replay, try-it and ablation.")
        self.reset_button = QPushButton("↺ Reset")
        self.reset_button.setToolTip("A fresh model from the settings (same seed = same initialisation), at step 0.")
        grid.addWidget(self.start_button, 0, 0)
        grid.addWidget(self.pause_button, 0, 1)
        grid.addWidget(self.step_button, 0, 2)
        grid.addWidget(self.stop_button, 1, 0)
        grid.addWidget(self.reset_button, 1, 1)
        speed_row = QHBoxLayout()
        speed_row.addWidget(QLabel("speed"))
        self.speed_combo = QComboBox()
        for label, value in SPEEDS:
            self.speed_combo.addItem(label, value)
        self.speed_combo.setToolTip("Steps per second, for training and for replay. Every step is recorded; "
                                    "'as fast as possible' trains at full speed (replay: the recorded pace).")
        speed_row.addWidget(self.speed_combo, 1)
        grid.addLayout(speed_row, 2, 0, 1, 3)
        self.progress = QProgressBar()
        grid.addWidget(self.progress, 3, 0, 1, 3)
        self.eta_label = QLabel()
        self.eta_label.setWordWrap(True)
        grid.addWidget(self.eta_label, 4, 0, 1, 3)
        self.status_label = QLabel()
        self.status_label.setObjectName("trainingStatus")
        self.status_label.setWordWrap(True)
        grid.addWidget(self.status_label, 5, 0, 1, 3)

        self.start_button.clicked.connect(self.startRequested.emit)
        self.pause_button.clicked.connect(session.toggle_pause)
        self.step_button.clicked.connect(session.step)
        self.stop_button.clicked.connect(lambda: session.stop())
        self.reset_button.clicked.connect(session.reset)
        self.speed_combo.currentIndexChanged.connect(lambda i: session.set_speed(self.speed_combo.itemData(i)))
        ev = session.events
        for signal in (ev.run_state, ev.config, ev.history, ev.probe):
            signal.connect(self.update_buttons)
        ev.progress.connect(self.update_progress)
        ev.run_state.connect(self.update_progress)
        ev.speed.connect(self._on_speed)
        ev.status.connect(self.update_status)
        self._on_speed()
        self.update_buttons()
        self.update_progress()
        self.update_status()

    def update_buttons(self, *_: object) -> None:
        s = self.session
        running, paused, alive = s.is_running, s.is_paused, s.is_alive
        valid = s.config is not None
        settings_changed = s.trainer is not None and s.config != s.trainer.config
        latest = s.history.latest
        started = latest is not None and latest.step > 0
        # paused mid-run: only Pause reads "Resume" (Start would do the same); paused at step 0 (the untrained
        # preview, Reset): Start starts it, and there is nothing to resume yet
        self.start_button.setEnabled(valid and not running and not (paused and started and not settings_changed))
        self.pause_button.setEnabled(alive and (started or not paused))
        self.pause_button.setText("Resume" if paused and started else "Pause")
        self.step_button.setEnabled((valid or s.trainer is not None) and not running)
        self.stop_button.setEnabled(alive)
        self.reset_button.setEnabled(valid and not running)

    def update_progress(self, *_: object) -> None:
        value, maximum, fmt = self.session.progress
        self.progress.setRange(0, maximum)
        self.progress.setValue(value)
        self.progress.setFormat(fmt)
        self.eta_label.setText(self.session.eta_text)

    def update_status(self, *_: object) -> None:
        s = self.session
        self.status_label.setText(s.status)
        if self.status_label.property("error") != s.status_is_error:  # the colour: resources/styles/
            self.status_label.setProperty("error", s.status_is_error)
            self.status_label.style().unpolish(self.status_label)
            self.status_label.style().polish(self.status_label)

    def _on_speed(self, *_: object) -> None:
        i = [v for _, v in SPEEDS].index(self.session.speed)
        with QSignalBlocker(self.speed_combo):
            self.speed_combo.setCurrentIndex(i)
