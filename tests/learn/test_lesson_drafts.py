"""A lesson saved a step at a time (File → Save state as lesson step…) can be tried from its first step: a *draft*
(fewer steps than a lesson has) opens in the Learn panel, marked as a draft; ``lessons --check`` still says it is not
yet a lesson. Before: the one-step file was refused ("a lesson has 5 to 15 steps (this one has 1)") and the dialog's
note said it would open only with 4 more steps."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QMessageBox

from app.learn.model.authoring import append_step, make_step
from app.learn.model.engine import LessonRun
from app.learn.model.files import MemoryStore, load_lesson, parse_lesson
from app.learn.model.library import LessonLibrary
from app.learn.model.schema import LessonFileError
from app.learn.model.walk import check_file
from app.learn.qt.panel import DRAFT
from app.playground.model.playground import PlaygroundModel


def _one_step(path):
    m = PlaygroundModel("cat-sat-mat")
    m.set_cell("X", 1, 0, 2.5)  # sat·cat = 2.5·1 + 0.9·0.5 + 0.1·0.2 + 0.4·0.8 = 3.29 (identity projections)
    return append_step(path, make_step(m, "sat·cat = {scores[sat][cat]}", "look", "First"), m, "My lesson")


def test_a_one_step_draft_loads_to_try_and_is_still_reported_by_check(tmp_path):
    path = tmp_path / "mine.json"
    saved = _one_step(path)
    assert saved.step == 1 and "draft" in saved.note and "opens it to try" in saved.note
    assert "4 more steps" in saved.note
    with pytest.raises(LessonFileError, match="this one has 1"):  # where a lesson is asked for, still refused
        load_lesson(path)
    lesson = load_lesson(path, drafts=True)
    assert lesson.draft and len(lesson.steps) == 1 and lesson.id == "my-lesson"
    learner = PlaygroundModel("it-animal-street")
    run = LessonRun(lesson, learner)
    run.start(0)
    assert learner.matrices["X"][1, 0] == 2.5  # the teacher's state, restored
    assert run.text == "sat·cat = 3.29" and run.can_finish and not run.can_next
    run.close()
    problems = check_file(path)  # `lessons --check`: not a lesson yet, and it says how it can be tried
    assert len(problems) == 1 and ":" in problems[0] and "this one has 1" in problems[0] and "a draft" in problems[0]


def test_drafts_open_only_with_a_step_and_are_otherwise_checked_in_full():
    lesson = {"id": "d", "title": "D", "preset": "cat-sat-mat", "steps": []}
    with pytest.raises(LessonFileError, match="this one has 0"):  # no step: nothing to try
        parse_lesson(json.dumps(lesson), drafts=True)
    lesson["steps"] = [{"kind": "look", "text": "x", "colour": "red"}]
    with pytest.raises(LessonFileError, match="colour"):
        parse_lesson(json.dumps(lesson), drafts=True)
    lesson["steps"] = [{"kind": "look", "text": "x"}] * 5
    assert not parse_lesson(json.dumps(lesson)).draft


def test_a_saved_step_opens_at_once_in_the_learn_panel_marked_as_a_draft(window, qtbot, tmp_path, monkeypatch):
    refused: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: refused.append(a[2]))
    path = tmp_path / "mine.json"
    _one_step(path)
    learn = window.learn
    learn.store = learn.panel.store = MemoryStore()
    lesson = learn.open_file(str(path))  # File → Open lesson…
    assert refused == [] and lesson is not None and lesson.draft
    panel, run = learn.panel, learn.run
    assert run is not None and run.lesson is lesson and run.total == 1
    assert panel.title.text() == f"My lesson{DRAFT}: First" and "Step 1 of 1" in panel.where.text()
    assert f"My lesson{DRAFT}" in panel.list.currentItem().text()
    assert window.playground.matrices["X"][1, 0] == 2.5
    qtbot.waitUntil(lambda: learn.dock.isVisible())
    assert panel.title.isVisible()


def test_drafts_in_my_lessons_are_listed(tmp_path):
    folder = tmp_path / "My lessons"
    folder.mkdir()
    _one_step(folder / "mine.json")
    lessons, notes = LessonLibrary(folder, tmp_path / "opened.json").lessons()
    assert notes == [] and [x.id for x in lessons] == ["my-lesson"] and lessons[0].draft
