"""The Training tab's Flow view: the shared flow drawing (``app.widgets.flow``) for the session's shown step, with a
layer picker."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QComboBox, QWidget

from app.common.flow import FlowData
from app.common.titles import ExportContext
from app.training.model.flow import training_flow
from app.training.model.session import TrainingSession
from app.widgets.flow.view import FlowView
from app.widgets.frame import FRAME_MS, FrameCoalescer, RedrawWhenShown


class TrainingFlowView(RedrawWhenShown, FlowView):
    """The Training tab's flow: the shown step (live, scrubbed or replayed) of the session, the layer picked here
    and the heads switched on, redrawn at most once a frame."""

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.layer_combo = QComboBox()
        self.layer_combo.setToolTip("The layer whose heads are drawn")
        self.controls.insertWidget(0, self.layer_combo)
        self.layer_combo.currentIndexChanged.connect(lambda _i: self.request_redraw())
        self.redraw_soon = FrameCoalescer(self.request_redraw, FRAME_MS, self)
        session.events.shown.connect(self.redraw_soon)
        session.events.history.connect(self.redraw_soon)
        self.redraw()

    def empty_text(self) -> str:
        return "<b>Flow</b> — no model yet: press <b>Start</b> (or <b>Step</b>) to see where each position looks."

    def current_data(self) -> FlowData | None:
        snap = self.session.shown_snapshot
        self.layer_combo.setVisible(snap is not None)  # no model, no layers: no empty picker
        if snap is None:
            return None
        layers = len(snap.probe_weights)
        if self.layer_combo.count() != layers:
            with QSignalBlocker(self.layer_combo):
                keep = self.layer_combo.currentIndex()
                self.layer_combo.clear()
                self.layer_combo.addItems([f"layer {i + 1}" for i in range(layers)])
                self.layer_combo.setCurrentIndex(min(max(keep, 0), layers - 1))
        return training_flow(snap, self.layer_combo.currentIndex())

    def export_context(self) -> ExportContext | str:
        from app.training.film import frame_title

        s = self.session
        if not len(s.history):
            return ""
        title, line = frame_title(s.history, s.shown_index, s.total_steps)
        return f"{title.removeprefix('Heads at ')} · {line}"
