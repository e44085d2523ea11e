"""The probe box: which L input tokens the head grid shows, typed or picked from a few examples.

Follows the session's ``probe`` (the tokens in use, or the reason a typed text was refused, shown next to the
box) and ``config`` (the examples fit the model's L and vocabulary). Enter or a pick calls ``set_probe``.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QComboBox, QLabel, QVBoxLayout, QWidget

from app.training.model.session import TrainingSession


def example_probes(seq_len: int, vocab_size: int) -> list[list[int]]:
    """A few valid probes for this shape: counting up, a stride-3 walk, counting down."""
    span = vocab_size - 2
    return [[2 + i % span for i in range(seq_len)], [2 + (3 * i + 1) % span for i in range(seq_len)],
            [2 + (span - 1 - i) % span for i in range(seq_len)]]


class ProbeBox(QWidget):
    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        self.combo = QComboBox()
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.combo.setToolTip("The L input tokens whose attention maps the grid shows; type your own "
                              "(space-separated, then Enter) or pick one.")
        v.addWidget(self.combo)
        self.error_label = QLabel()
        self.error_label.setObjectName("errorLabel")  # its colour: resources/styles/
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        v.addWidget(self.error_label)
        self._shape: tuple[int, int] | None = None
        if (line := self.combo.lineEdit()) is not None:  # the combo is editable: it has one
            line.returnPressed.connect(self.submit)
        self.combo.activated.connect(lambda _i: self.submit())
        session.events.probe.connect(lambda _p: self.redraw())
        session.events.config.connect(lambda _c: self.redraw())
        self.redraw()

    def submit(self) -> bool:
        return self.session.set_probe(self.combo.currentText())

    def redraw(self) -> None:
        s = self.session
        cfg = s.model_config
        with QSignalBlocker(self.combo):
            if cfg is not None and (cfg.seq_len, cfg.vocab_size) != self._shape:
                self._shape = (cfg.seq_len, cfg.vocab_size)
                self.combo.clear()
                for p in example_probes(cfg.seq_len, cfg.vocab_size):
                    self.combo.addItem(" ".join(map(str, p)))
            if s.probe is not None and not s.probe_error:
                self.combo.setEditText(" ".join(map(str, s.probe)))
        self.error_label.setText(s.probe_error)
        self.error_label.setVisible(bool(s.probe_error))
