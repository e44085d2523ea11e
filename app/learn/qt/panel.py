"""The Learn panel: lessons with progress, the step's text, Back / Next / Restart, "Show me", the predict input
and its feedback. It shows what a ``LessonRun`` (``app.learn.model.engine``) says and passes clicks to it.

Until a predict step is answered, the panel asks its host to cover what the step names (``covers`` callback;
the cards are ``app.learn.qt.cover``'s).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.learn.model.engine import LessonRun
from app.learn.model.files import Lesson, ProgressStore
from app.learn.model.predict import Feedback
from app.learn.qt.cell_grid import CellGrid
from app.widgets.theme import ThemeColors, colors_for, follow_theme

AUTO_ADVANCE_MS = 900
"""How long a reached do step stays on screen (its "Done" visible) before the next step opens."""
DRAFT = " (a draft)"  # after the title of a lesson with fewer steps than a lesson has: a teacher's, to try


class LearnPanel(QWidget):
    """The dock's content. ``covers(names)``: called with the maps to hide now (empty: hide nothing)."""

    def __init__(self, lessons: list[Lesson], make_run: Callable[[Lesson], LessonRun], store: ProgressStore,
                 covers: Callable[[tuple[str, ...]], Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lessons, self.make_run, self.store, self.covers = list(lessons), make_run, store, covers
        self.run: LessonRun | None = None
        self._refused = False  # the feedback line holds a refusal (cleared when the numbers change)
        self.auto_advance = True
        self.dark = False
        v = QVBoxLayout(self)
        v.setContentsMargins(6, 6, 6, 6)
        self.offer = QWidget()
        oh = QHBoxLayout(self.offer)
        oh.setContentsMargins(0, 0, 0, 0)
        self.offer_label = QLabel("New here? Pick a lesson below: it walks you through the playground.")
        self.offer_label.setWordWrap(True)
        self.dismiss_button = QPushButton("Don't show again")
        oh.addWidget(self.offer_label, 1)
        oh.addWidget(self.dismiss_button)
        self.offer.hide()
        v.addWidget(self.offer)
        self.list = QListWidget()
        self.list.setMaximumHeight(130)
        self.list.setWordWrap(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.itemActivated.connect(self._on_pick)
        self.list.itemClicked.connect(self._on_pick)
        v.addWidget(self.list)
        self.title = QLabel("Pick a lesson")
        self.title.setStyleSheet("font-weight: bold;")
        self.title.setWordWrap(True)
        self.where = QLabel("")
        v.addWidget(self.title)
        v.addWidget(self.where)
        self.text = QLabel("")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        v.addWidget(self.text)
        self.inputs = QWidget()
        self.inputs_box = QVBoxLayout(self.inputs)
        self.inputs_box.setContentsMargins(0, 0, 0, 0)
        v.addWidget(self.inputs)
        self.number = QLineEdit()
        self.number.setPlaceholderText("your number")
        self.number.returnPressed.connect(self._check_number)
        self.choice_buttons: list[QPushButton] = []
        self.cell_grid: CellGrid | None = None
        """A cell question's covered map as an empty grid to click (None when not shown)."""
        self.feedback = QLabel("")
        self.feedback.setWordWrap(True)
        v.addWidget(self.feedback)
        nav = QHBoxLayout()
        self.back_button, self.next_button, self.restart_button, self.show_me_button = (
            QPushButton(t) for t in ("◀ Back", "Next ▶", "Restart", "Show me"))
        for b in (self.back_button, self.show_me_button, self.restart_button, self.next_button):
            nav.addWidget(b)
        v.addLayout(nav)
        v.addStretch(1)
        self.back_button.clicked.connect(lambda: self._safe(lambda run: run.back()))
        self.next_button.clicked.connect(lambda: self._safe(lambda run: run.next()))
        self.restart_button.clicked.connect(lambda: self._safe(lambda run: run.restart()))
        self.show_me_button.clicked.connect(self._show_me)
        self.fill_list()
        self._show()
        follow_theme(self._restyle)

    # ------------------------------------------------------------------ lessons
    def fill_list(self) -> None:
        self.list.clear()
        for lesson in self.lessons:
            p = self.store.load(lesson.id)
            done = "✓ " if p.get("done") else ""
            n = len(lesson.steps)
            # the step it resumes at, not the furthest one reached ("12/12" beside "Step 3 of 12"); ✓: finished once
            step = p.get("step", 0)
            progress = f"step {(step if isinstance(step, int) else 0) + 1}/{n}" if p else f"{n} steps"
            score = f" · score {p.get('score', 0)}/{p.get('of', 0)}" if p.get("of") else ""
            item = QListWidgetItem(f"{done}{lesson.title}{DRAFT * lesson.draft} · {progress}{score}")
            item.setData(Qt.ItemDataRole.UserRole, lesson.id)
            self.list.addItem(item)

    def add_lesson(self, lesson: Lesson) -> None:
        """A lesson opened from a file: listed (replacing one with the same id) and started."""
        self.lessons = [x for x in self.lessons if x.id != lesson.id] + [lesson]
        self.fill_list()
        self.open(lesson)

    def _on_pick(self, item: QListWidgetItem) -> None:
        lesson_id = item.data(Qt.ItemDataRole.UserRole)
        lesson = next((x for x in self.lessons if x.id == lesson_id), None)
        if lesson is not None and (self.run is None or self.run.lesson.id != lesson.id):
            self.open(lesson)

    def open(self, lesson: Lesson, index: int | None = None) -> LessonRun:
        if self.run is not None:
            self.run.close()
        run = self.run = self.make_run(lesson)
        run.events.step.connect(self._show)
        run.events.text.connect(self._show_text)
        run.events.numbers.connect(self._numbers_changed)
        run.events.done.connect(self._on_done)
        run.events.status.connect(self._show)
        run.events.answered.connect(self._on_answered)
        run.start(index)
        self.show_offer(False)  # "Pick a lesson below" no longer describes the panel once one is open
        self._show()
        return run

    # ------------------------------------------------------------------ showing the step
    def _show(self) -> None:
        run = self.run
        self._clear_inputs()
        if run is None:
            for b in (self.back_button, self.next_button, self.restart_button, self.show_me_button):
                b.setEnabled(False)
            self.covers(())
            return
        st = run.step
        self.title.setText(f"{run.lesson.title}{DRAFT * run.lesson.draft}: {st.get('title', '')}".rstrip(": "))
        words = {"look": "look", "do": "your turn: do it (or press Show me)"}.get(run.kind, "predict, then see")
        self.where.setText(f"Step {run.index + 1} of {run.total} · {words}")
        self._show_text()
        fb = run.feedback.get(run.index)
        self._set_feedback(fb)
        if run.kind == "predict" and fb is None and not run.premise_broken:
            self._build_inputs(st["ask"])
        if run.kind == "do":
            self.feedback.setText(self._done_text() if run.done else (run.message or ""))
        self.back_button.setEnabled(run.index > 0)
        self.next_button.setEnabled(run.can_next)
        self.restart_button.setEnabled(True)
        self.show_me_button.setEnabled(run.premise_broken or (run.kind == "do" and not run.done))
        self.covers(run.covered)
        self.fill_list()
        self._select_current()
        self.layout().activate()  # type: ignore[union-attr]  # the new controls placed now, not at the next pass

    def _select_current(self) -> None:
        if self.run is None:
            return
        for i in range(self.list.count()):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) == self.run.lesson.id:
                with QSignalBlocker(self.list):
                    self.list.setCurrentRow(i)

    def _show_text(self) -> None:
        """The step's text and its feedback, as the run says them for the numbers now."""
        run = self.run
        if run is not None:
            self.text.setText(run.text)
            fb = run.feedback.get(run.index)
            if fb is not None and run.kind == "predict":
                self.feedback.setText(run.feedback_text())

    def _numbers_changed(self) -> None:  # a refusal (a move's, Show me's) was about the numbers then: they changed
        run, self._refused, was = self.run, False, self._refused
        if run is not None and (was or (run.kind == "do" and not run.done)):
            self.feedback.setText(run.message if run.kind == "do" and not run.done else "")
        g, m = self.cell_grid, run.model if run is not None and run.kind == "predict" else None
        if g is not None and m is not None and (g.row_names(), g.col_names()) != (list(m.query_tokens),
                                                                                  list(m.key_tokens)):
            self._clear_inputs()  # the learner's tokens changed under the question: its grid follows them
            self._build_inputs(run.step["ask"])  # type: ignore[union-attr]
            self.layout().activate()  # type: ignore[union-attr]

    def _refuse(self, text: str) -> None:  # why a move or an answer is refused, under the step
        self.feedback.setStyleSheet(f"color: {colors_for(self.dark).bad};")
        self.feedback.setText(text)
        self._refused = True  # until the numbers change

    def _done_text(self) -> str:
        """Where the result of a finished do step is on screen (the step's view names the tab)."""
        view = self.run.view if self.run is not None else None
        where = {"lab": "the Lab", "training": "the Training tab", "ablate": "the Training tab's Ablate view",
                 "model": "the Model tab", "detect": "the Model tab's Detect view"}
        return f"Done: {where.get(view or '', 'the playground')} shows it."

    def _set_feedback(self, fb: Feedback | None) -> None:
        c = colors_for(self.dark)
        self.feedback.setText("" if fb is None else self.run.feedback_text() if self.run is not None else fb.text)
        self.feedback.setStyleSheet("" if fb is None else f"color: {c.good if fb.correct else c.bad};")

    def _clear_inputs(self) -> None:
        """The last step's controls out of sight at once, not at their deferred delete: a frame painted before it
        (a busy event loop under X11) drew a Check button over a cell grid, or its "e" between yes and no."""
        if self.number.parentWidget() is not self:  # kept by the panel (hidden): the row deleted below would take
            self.number.hide()  # the line edit along
            self.number.setParent(self)
        while (item := self.inputs_box.takeAt(0)) is not None:
            if (w := item.widget()) is not None:
                w.setParent(None)  # which hides it
                w.deleteLater()
        self.choice_buttons = []
        self.cell_grid = None

    def _add(self, w: QWidget) -> None:  # shown now: added to a shown layout, it would be by a queued call
        self.inputs_box.addWidget(w)
        w.show()

    def _build_inputs(self, ask: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        if ask["type"] == "number":
            row = QWidget()
            h = QHBoxLayout(row)
            h.setContentsMargins(0, 0, 0, 0)
            self.number.clear()
            h.addWidget(self.number, 1)
            self.number.show()
            check = QPushButton("Check")
            check.clicked.connect(self._check_number)
            h.addWidget(check)
            self._add(row)
            self.number.setFocus()
            return
        if ask["type"] == "cell" and ask.get("map") in run.covered:  # a click on the map would hit its cover
            self._build_cell_grid(ask)
            return
        if ask["type"] == "cell":
            row_name = ask["row"] if isinstance(ask["row"], str) else run.model.query_tokens[int(ask["row"])]
            hint = QLabel(f"Click a cell of row '{row_name}' in a map, or pick the key:")
            hint.setWordWrap(True)
            self._add(hint)
            choices = list(run.model.key_tokens)
        else:
            choices = list(ask["choices"])
        box = QWidget()
        h = QHBoxLayout(box)
        h.setContentsMargins(0, 0, 0, 0)
        for c in choices:
            b = QPushButton(c)
            b.clicked.connect(lambda _=False, c=c: self.choose(c))
            h.addWidget(b)
            self.choice_buttons.append(b)
        self._add(box)

    def _build_cell_grid(self, ask: dict[str, Any]) -> None:
        run = self.run
        assert run is not None
        rows, cols = list(run.model.query_tokens), list(run.model.key_tokens)
        row = ask["row"] if isinstance(ask["row"], int) else rows.index(ask["row"]) if ask["row"] in rows else None
        name = rows[row] if row is not None and 0 <= row < len(rows) else str(ask["row"])
        self._add(hint := QLabel(f"Click the cell of row '{name}' in this grid of the {ask['map']} map (the map "
                                 "itself stays covered until you answer):"))
        hint.setWordWrap(True)
        self.cell_grid = CellGrid(rows, cols, lambda i, j: self.answer((i, j)), highlight_row=row)
        self._add(self.cell_grid)

    # ------------------------------------------------------------------ the learner acts
    def choose(self, choice: str) -> Feedback | None:
        run = self.run
        if run is None or run.kind != "predict" or run.index in run.feedback:
            return None
        ask = run.step["ask"]
        if ask["type"] == "cell":
            row = ask["row"] if isinstance(ask["row"], int) else run.model.query_tokens.index(ask["row"])
            return self.answer((row, run.model.key_tokens.index(choice)))
        return self.answer(choice)

    def click_cell(self, view: str, row: int, col: int) -> Feedback | None:
        """A map's cell was clicked: the answer of a cell ask (ignored otherwise)."""
        run = self.run
        if (run is None or run.kind != "predict" or run.index in run.feedback
                or run.step["ask"]["type"] != "cell" or view in run.covered):
            return None
        return self.answer((row, col))

    def _check_number(self) -> None:
        if self.run is None or self.run.kind != "predict":
            return
        try:
            self.answer(float(self.number.text().replace(",", ".").replace("−", "-")))
        except ValueError:
            self._refuse(f"{self.number.text()!r} is not a number: type one such as 0.42")

    def answer(self, value: Any) -> Feedback | None:
        if self.run is None:
            return None
        try:
            return self.run.answer(value)
        except ValueError as exc:
            self._refuse(f"This answer cannot be checked now: {exc}.")
            return None

    def _safe(self, fn: Callable[[LessonRun], Any]) -> None:
        """A move the playground cannot make now is refused with the reason under the step, never raised into Qt."""
        if self.run is None:
            return
        try:
            fn(self.run)
        except ValueError as exc:
            self._refuse(f"This step cannot be shown now: {exc}. Press Restart to start the lesson afresh.")

    def _show_me(self) -> None:
        def show(run: LessonRun) -> None:
            if not run.show_me() and not run.done:
                self.feedback.setText(run.message or "Show me could not do it here.")
        self._safe(show)

    def _on_answered(self, _fb: Feedback) -> None:
        self._show()

    def _on_done(self) -> None:
        self._show()
        run = self.run
        if self.auto_advance and run is not None:
            index = run.index
            QTimer.singleShot(AUTO_ADVANCE_MS, self, lambda: self._advance_from(index))  # not after the panel is gone

    def _advance_from(self, index: int) -> None:
        run = self.run
        if run is not None and run.index == index and run.kind == "do" and run.done:
            run.next()

    def _restyle(self, c: ThemeColors) -> None:
        self.dark = c.dark
        if self.run is not None:
            self._set_feedback(self.run.feedback.get(self.run.index))

    def show_offer(self, visible: bool) -> None:
        self.offer.setVisible(visible)
