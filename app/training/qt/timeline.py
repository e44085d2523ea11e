"""The timeline under the head grid: step 0, a slider over every recorded step, the step shown, Replay, Live.
Where the column is narrow, Replay and Live show their symbols alone (tooltips say what they do), so the slider keeps
room to scrub: at 1024 px it was ~45 px wide.

Follows the session's ``history`` and ``shown``; moving the slider, Replay and Live call the session (``seek``,
``replay``, ``go_live``), which moves its playback cursor and tells every view.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSlider, QWidget

from app.training.model.session import TrainingSession
from app.widgets.frame import FRAME_MS, FrameCoalescer

WIDGET_SIZE_MAX = (1 << 24) - 1  # Qt's QWIDGETSIZE_MAX (PySide6 does not export it)
SLIDER_ROOM = 140
"""The width the slider keeps before the buttons drop their words."""
TEXTS = {False: ("▶ Replay", "■ Stop replay", "● Live"), True: ("▶", "■", "●")}
"""(replay, stop replay, live) in full and in compact form."""


class Timeline(QWidget):
    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self._row = row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.start_step_button = QPushButton("step 0")
        self.start_step_button.setToolTip("Show step 0: the untrained model.")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setToolTip("Scrub through the recorded steps (maps, numbers, Try it, Ablate and the cursor in "
                               "the plots follow).")
        self.label = QLabel("step –")
        self.label.setMinimumWidth(92)
        self.compact = False
        self.replay_button = QPushButton(TEXTS[False][0])
        self.replay_button.setToolTip("Replay: play the recorded steps from here at the chosen speed.")
        self.live_button = QPushButton(TEXTS[False][2])
        self.live_button.setToolTip("Live: follow the newest step.")
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
        texts = TEXTS[self.compact]
        for button, text in ((self.replay_button, texts[1] if s.cursor.playing else texts[0]),
                             (self.live_button, texts[2])):
            button.setText(text)
            if self.compact:  # a push button's size hint never goes below ~80 px: fit the symbol instead
                button.setFixedWidth(button.fontMetrics().horizontalAdvance(text) + 24)
            else:
                button.setMinimumWidth(0)
                button.setMaximumWidth(WIDGET_SIZE_MAX)
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

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        compact = self.width() - self._others_width() < SLIDER_ROOM
        if compact != self.compact:
            self.compact = compact
            self.redraw()

    def _others_width(self) -> int:
        """The width everything but the slider takes with the buttons' words shown (whatever they show now)."""
        widgets = (self.start_step_button, self.label, self.replay_button, self.live_button)
        width = sum(max(w.sizeHint().width(), w.minimumWidth()) for w in widgets)
        width += self._row.spacing() * len(widgets)
        if self.compact:
            fm, replay = self.replay_button.fontMetrics(), 1 if self.session.cursor.playing else 0
            width += sum(fm.horizontalAdvance(TEXTS[False][i]) - fm.horizontalAdvance(TEXTS[True][i])
                         for i in (replay, 2))
        return width
