"""Teacher tools: File → Save state as lesson step… turns the playground into a step of a lesson file
(validated, computed, written atomically), the step's ``session`` puts the playground back in that state through the
undo stack; lessons opened from files stay listed after a restart; F1 names lessons and presentation mode."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtWidgets import QMessageBox

from app.learn.model.authoring import append_step, make_step
from app.learn.model.engine import LessonRun
from app.learn.model.files import find_lesson, load_lesson, parse_lesson
from app.learn.model.library import LessonLibrary
from app.learn.model.schema import LessonFileError
from app.playground.model.playground import PlaygroundModel


def _teacher_model():
    m = PlaygroundModel("cat-sat-mat")
    m.set_mask("causal")
    m.set_cell("X", 1, 0, 2.5)
    return m


def test_saved_states_make_a_lesson_whose_steps_restore_them(tmp_path):
    path = tmp_path / "mine.json"
    m = _teacher_model()
    saved = append_step(path, make_step(m, "sat·cat = {scores[sat][cat]}", "look", "First"), m, "My lesson")
    assert saved.step == 1 and "draft" in saved.note and "4 more steps" in saved.note
    with pytest.raises(LessonFileError):  # a draft does not open yet
        load_lesson(path)
    ask = {"type": "choice", "choices": ["cat", "sat", "mat"], "answer": "argmax(weights[sat])"}
    for i in range(4):
        m.set_cell("X", 0, 1, float(i))
        kind = "predict" if i == 2 else "look"
        step = make_step(m, f"step {i + 2}: {{weights[sat][cat]}}", kind, ask=ask if kind == "predict" else None,
                         cover=["weights", "output"] if kind == "predict" else None)
        saved = append_step(path, step, m)
    assert saved.step == 5 and saved.note == ""
    lesson = load_lesson(path)
    assert lesson.id == "my-lesson" and lesson.title == "My lesson" and lesson.precision == 3
    assert "device" not in lesson.steps[0]["session"]
    learner = PlaygroundModel("it-animal-street")
    applied = []

    def apply(text, fn):  # the window's undo stack: every change the lesson makes is an undo step
        applied.append(text)
        fn(learner)
        return True

    run = LessonRun(lesson, learner, apply)
    run.start(0)
    assert learner.mask_mode == "causal" and learner.matrices["X"][1, 0] == 2.5
    assert run.text == f"sat·cat = {learner.result.scores[1, 0]:.3f}".rstrip("0")
    run.go(3)
    assert learner.matrices["X"][0, 1] == 2.0 and "Lesson step 4" in applied
    assert run.covered == ("weights", "output")
    run.close()


def test_a_bad_step_is_refused_and_the_file_is_untouched(tmp_path):
    path = tmp_path / "mine.json"
    m = _teacher_model()
    append_step(path, make_step(m, "fine", "look"), m, "My lesson")
    before = path.read_bytes()
    with pytest.raises(ValueError, match="unknown name"):
        append_step(path, make_step(m, "{nonsense[cat]}", "look"), m)
    bad_ask = {"type": "choice", "choices": ["a", "b"], "answer": "argmax(weights[sat])"}
    with pytest.raises(ValueError, match="not among the choices"):
        append_step(path, make_step(m, "which?", "predict", ask=bad_ask), m)
    with pytest.raises(ValueError, match="look or a predict"):
        make_step(m, "x", "do")
    with pytest.raises(ValueError, match="title"):
        append_step(tmp_path / "new.json", make_step(m, "fine", "look"), m, "")
    assert path.read_bytes() == before and not (tmp_path / "new.json").exists()


def test_schema_checks_session_and_precision():
    data = json.loads(open(find_lesson("masks").file, encoding="utf-8").read())
    data["steps"][0]["session"] = {"mode": "qkv"}
    data["precision"] = 9
    with pytest.raises(LessonFileError) as err:
        parse_lesson(json.dumps(data, indent=1))
    reasons = " ".join(p.reason for p in err.value.problems)
    assert "session:" in reasons and "precision must be" in reasons


def test_file_menu_saves_the_state_as_a_step(window, qtbot, tmp_path):
    from app.learn.qt.step_dialog import StepDialog

    file_menu = window.menuBar().actions()[0].menu()
    act = next(a for a in file_menu.actions() if a.text().replace("&", "") == "Save state as lesson step…")
    window.edits.apply("mask", lambda m: m.set_mask("causal"))
    act.trigger()
    dlg = next(w for w in window.findChildren(StepDialog) if w.isVisible())
    dlg.file_edit.setText(str(tmp_path / "lesson.json"))
    dlg.text.setPlainText("fine")
    assert dlg.save() is None and "needs a title" in dlg.message.text() and dlg.isVisible()
    dlg.lesson_title.setText("Masks again")
    dlg.text.setPlainText("{nope}")
    assert dlg.save() is None and "unknown name" in dlg.message.text() and dlg.isVisible()
    dlg.kind.setCurrentText("predict")
    dlg.ask_type.setCurrentText("number")
    dlg.answer.setText("weights[sat][cat]")
    dlg.tolerance.setText("0.01")
    dlg.text.setPlainText("How much does 'sat' give 'cat'?")
    saved = dlg.save()
    assert saved is not None and not dlg.isVisible() and "Step 1 saved" in window.statusBar().currentMessage()
    step = json.loads((tmp_path / "lesson.json").read_text())["steps"][0]
    assert step["ask"] == {"type": "number", "answer": "weights[sat][cat]", "tolerance": 0.01}
    assert step["session"]["mask_mode"] == "causal"


def test_opened_lessons_are_listed_after_a_restart(window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: None)
    data = json.loads(open(find_lesson("masks").file, encoding="utf-8").read())
    path = tmp_path / "teacher.json"
    path.write_text(json.dumps({**data, "id": "from-a-teacher"}))
    learn = window.learn
    assert learn.open_file(str(path)) is not None
    fresh = LessonLibrary.default()  # what the next launch reads
    assert [x.id for x in fresh.lessons()[0]] == ["from-a-teacher"]
    # the next launch's panel lists it (a new Learn over the same data folder)
    from app.learn.qt.dock import Learn

    again = Learn(window)
    assert "from-a-teacher" in {x.id for x in again.panel.lessons}
    path.unlink()  # the file vanished: dropped with a note in the status bar, no crash
    third = Learn(window)
    assert "from-a-teacher" not in {x.id for x in third.panel.lessons}
    assert "teacher.json" in window.statusBar().currentMessage()


def test_f1_help_names_lessons_and_presentation_mode():
    from app.shell.help import HELP_TEXT

    assert "Lessons" in HELP_TEXT and "presentation mode" in HELP_TEXT and "Save state as lesson step" in HELP_TEXT


def test_a_step_session_is_a_premise_cut(tmp_path):
    """A step that restores a whole session is its own state: earlier do goals are not its premises."""
    from app.learn.model.goals import premises

    steps = [{"kind": "do", "text": "x", "goal": {"mask": "causal"}}, {"kind": "look", "text": "y"},
             {"kind": "look", "text": "z", "session": {}}]
    assert premises(steps, 1) == [(0, {"mask": "causal"})] and premises(steps, 2) == []
    assert np.isfinite(1.0)


def test_the_complete_example_in_the_docs_checks_and_walks(tmp_path):
    from pathlib import Path

    from app.learn.model.walk import check_file, dry_run

    doc = (Path(__file__).resolve().parents[2] / "docs" / "lessons.md").read_text(encoding="utf-8")
    block = doc[doc.index("## A complete example"):]
    text = block[block.index("```json") + len("```json"):block.index("```\n", block.index("```json") + 7)]
    path = tmp_path / "example.json"
    path.write_text(text, encoding="utf-8")
    assert check_file(path) == []
    lesson = load_lesson(path)
    assert dry_run(lesson, right=False) == []
    kinds = {s["kind"] for s in lesson.steps}
    goals = {next(iter(s["goal"])) for s in lesson.steps if s["kind"] == "do"}
    asks = {s["ask"]["type"] for s in lesson.steps if s["kind"] == "predict"}
    assert kinds == {"look", "do", "predict"} and goals == {"scale", "mask", "heads", "points_at", "edit"}
    assert asks == {"choice", "number", "cell"} and lesson.precision == 2
    assert any("session" in s for s in lesson.steps) and any("cover" in s for s in lesson.steps)
