"""The timeline under the head grid: step 0, a slider over every recorded step, the step shown, Replay, Live.

Follows the session's ``history`` and ``shown``; moving the slider, Replay and Live call the session (``seek``,
``replay``, ``go_live``), which moves its playback cursor and tells every view.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSlider, QWidget

from ..models.training_session import TrainingSession
from .frame import FRAME_MS, FrameCoalescer


class Timeline(QWidget):
    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.start_step_button = QPushButton("step 0")
        self.start_step_button.setToolTip("Show step 0: the untrained model.")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setToolTip("Scrub through the recorded steps (maps, numbers, Try it, Ablate and the cursor in "
                               "the plots follow).")
        self.label = QLabel("step –")
        self.label.setMinimumWidth(92)
        self.replay_button = QPushButton("▶ Replay")
        self.replay_button.setToolTip("Play the recorded steps from here at the chosen speed.")
        self.live_button = QPushButton("● Live")
        self.live_button.setToolTip("Follow the newest step.")
        self.live_button.setCheckable(True)
        self.live_button.setChecked(True)
        for w in (self.start_step_button, self.slider, self.label, self.replay_button, self.live_button):
            row.addWidget(w, 1 if w is self.slider else 0)
        self.slider.valueChanged.connect(self._on_slider)
        self.start_step_button.clicked.connect(lambda: session.seek(0))
        self.replay_button.clicked.connect(self._on_replay)
        self.live_button.clicked.connect(lambda: session.go_live())
        self.redraw_soon = FrameCoalescer(self.redraw, FRAME_MS, self)
        session.events.shown.connect(self.redraw_soon)
        session.events.history.connect(self.redraw_soon)
        self.redraw()

    def redraw(self) -> None:
        s = self.session
        n = len(s.history)
        with QSignalBlocker(self.slider):
            self.slider.setRange(0, max(0, n - 1))
            self.slider.setValue(s.shown_index)
        snap = s.shown_snapshot
        self.label.setText(f"step {snap.step} / {s.total_steps}" if snap is not None else "step –")
        self.live_button.setChecked(s.cursor.follow_live)
        self.replay_button.setText("■ Stop replay" if s.cursor.playing else "▶ Replay")
        for w in (self.slider, self.start_step_button, self.replay_button, self.live_button):
            w.setEnabled(n > 0)

    def _on_slider(self, value: int) -> None:
        if value != self.session.shown_index or self.session.cursor.follow_live:
            self.session.seek(value)

    def _on_replay(self) -> None:
        s = self.session
        if s.cursor.playing:
            s.seek(s.shown_index)  # stop where it is
        else:
            s.replay()
