"""File → Save state as lesson step…: a teacher's dialog that appends the playground as it is now to a lesson file
(or starts a new one) as a look or predict step with the text they type. Only the form: the step is made, checked
and written by ``app.learn.model.authoring``; a refusal is shown in the dialog with its reason, never raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.learn.model.authoring import STEP_KINDS, Saved, append_step, make_step
from app.learn.model.library import LessonLibrary
from app.learn.model.schema import ASK_TYPES, COVERS
from app.playground.model.playground import PlaygroundModel
from attention_core.steps import STEP_NAMES

_last_file: str = ""
"""The lesson file the last step went to (the next one goes there too, unless the teacher picks another)."""


class StepDialog(QDialog):
    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.saved: Saved | None = None
        self.setWindowTitle("Save state as lesson step")
        v = QVBoxLayout(self)
        intro = QLabel("The playground as it is now becomes a step of a lesson: when the step opens, the learner's "
                       "playground is put in this state. Write {weights[cat][sat]} (any expression) for a number "
                       "computed live.")
        intro.setWordWrap(True)
        v.addWidget(intro)
        form = QFormLayout()
        v.addLayout(form)
        row = QHBoxLayout()
        self.file_edit = QLineEdit(_last_file or str(LessonLibrary.default().folder / "my-lesson.json"))
        self.file_edit.textChanged.connect(self._on_file)
        choose = QPushButton("Choose…")
        choose.clicked.connect(self._choose)
        row.addWidget(self.file_edit, 1)
        row.addWidget(choose)
        form.addRow("Lesson file:", row)
        self.lesson_title = QLineEdit()
        self.lesson_title.setPlaceholderText("the title of the new lesson")
        form.addRow("New lesson's title:", self.lesson_title)
        self.kind = QComboBox()
        self.kind.addItems(list(STEP_KINDS))
        self.kind.currentTextChanged.connect(self._on_kind)
        form.addRow("Step kind:", self.kind)
        self.step_title = QLineEdit()
        form.addRow("Step title:", self.step_title)
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText("What the step says, e.g. 'cat' puts {weights[cat][cat]} on itself.")
        self.text.setFixedHeight(90)
        form.addRow("Text:", self.text)
        self.ask = QWidget()
        af = QFormLayout(self.ask)
        af.setContentsMargins(0, 0, 0, 0)
        self.ask_type = QComboBox()
        self.ask_type.addItems(list(ASK_TYPES))
        self.ask_type.currentTextChanged.connect(self._on_kind)
        self.answer = QLineEdit()
        self.answer.setPlaceholderText("an expression, e.g. argmax(weights[sat])")
        self.choices = QLineEdit()
        self.choices.setPlaceholderText("comma-separated, e.g. cat, sat, mat")
        self.tolerance = QLineEdit("0.01")
        self.row = QLineEdit()
        self.row.setPlaceholderText("the query row, e.g. sat")
        self.map = QComboBox()
        self.map.addItems(list(STEP_NAMES[:4]))
        self.map.setCurrentText("weights")
        self.cover = QLineEdit()
        self.cover.setPlaceholderText(f"maps hidden until the answer: {', '.join(COVERS)}")
        self.why = QLineEdit()
        self.why.setPlaceholderText("shown with the feedback (optional)")
        for label, w in (("Question type:", self.ask_type), ("Answer:", self.answer), ("Choices:", self.choices),
                         ("Tolerance:", self.tolerance), ("Row:", self.row), ("Map:", self.map),
                         ("Cover:", self.cover), ("Why:", self.why)):
            af.addRow(label, w)
        self._ask_form = af
        form.addRow(self.ask)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        v.addWidget(self.message)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        v.addWidget(buttons)
        self._on_file()
        self._on_kind()

    # ------------------------------------------------------------------ the form follows its choices
    def _on_file(self) -> None:
        self.lesson_title.setEnabled(not Path(self.file_edit.text().strip()).is_file())

    def _on_kind(self) -> None:
        predict = self.kind.currentText() == "predict"
        self.ask.setVisible(predict)
        t = self.ask_type.currentText()
        for w, shown in ((self.choices, t == "choice"), (self.tolerance, t == "number"), (self.row, t == "cell"),
                         (self.map, t == "cell")):
            self._ask_form.setRowVisible(w, shown)

    def _choose(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Lesson file", self.file_edit.text(), "Lessons (*.json)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self.file_edit.setText(path)

    # ------------------------------------------------------------------ saving
    def _ask(self) -> dict[str, Any]:
        t = self.ask_type.currentText()
        ask: dict[str, Any] = {"type": t, "answer": self.answer.text().strip()}
        if t == "choice":
            ask["choices"] = [c.strip() for c in self.choices.text().split(",") if c.strip()]
        elif t == "number":
            try:
                ask["tolerance"] = float(self.tolerance.text().replace(",", "."))
            except ValueError:
                raise ValueError(f"the tolerance {self.tolerance.text()!r} is not a number") from None
        else:
            r = self.row.text().strip()
            ask["row"] = int(r) if r.isdigit() else r
            ask["map"] = self.map.currentText()
        return ask

    def save(self) -> Saved | None:
        """Append the step; a refusal (bad text, unknown name, a lesson already full …) stays in the dialog."""
        global _last_file
        path = self.file_edit.text().strip()
        try:
            if not path:
                raise ValueError("choose the lesson file the step goes to")
            kind = self.kind.currentText()
            predict = kind == "predict"
            step = make_step(self.model, self.text.toPlainText(), kind, self.step_title.text(),
                             self._ask() if predict else None,
                             [c.strip() for c in self.cover.text().split(",") if c.strip()] if predict else None,
                             self.why.text() if predict else "")
            saved = append_step(path, step, self.model, self.lesson_title.text())
        except ValueError as exc:
            self.message.setStyleSheet("color: #c0392b;")
            self.message.setText(f"Not saved: {exc}")
            return None
        _last_file = str(saved.path)
        self.saved = saved
        said = f"Step {saved.step} saved to {saved.path}" + (f" ({saved.note})" if saved.note else "")
        parent = self.parent()
        if isinstance(parent, QMainWindow):
            parent.statusBar().showMessage(said, 8000)
        self.message.setStyleSheet("")
        self.message.setText(said)
        self.accept()
        return saved
