"""Lessons as state: a step's text, its "done", its feedback and the saved progress are functions of the
playground *now* — undo a do step's goal and the lesson says so; numbers use the lesson's precision; progress and
score survive a restart exactly; lessons opened from files stay in the list."""

from __future__ import annotations

import json
import re

from app.learn.model.engine import LessonRun
from app.learn.model.files import JsonStore, find_lesson, parse_lesson
from app.learn.model.library import LessonLibrary
from app.playground.model.playground import PlaygroundModel

SIX_DIGITS = re.compile(r"\d\.\d{4,}")


def _run(lesson_id, index=0, store=None):
    lesson = find_lesson(lesson_id)
    run = LessonRun(lesson, PlaygroundModel(lesson.preset), store=store)
    run.start(index)
    return run


def test_undoing_a_do_goal_makes_the_next_step_say_so_not_describe_a_mask_that_is_gone():
    run = _run("masks", 2)  # "Mask the future": choose causal
    assert run.show_me() and run.next()  # step 4: "The causal mask sets …"
    assert "The causal mask sets" in run.text and "−∞" in run.text
    run.model.set_mask("none")  # what Ctrl+Z does
    assert "The causal mask sets" not in run.text
    assert "causal" in run.text and "step 3" in run.text  # names what is missing, and where it was done
    assert run.premise_broken and not run.can_next
    assert run.show_me()  # puts the missing goal back
    assert run.model.mask_mode == "causal" and "The causal mask sets" in run.text and run.can_next
    run.close()


def test_numbers_use_the_lessons_precision_never_six_digits():
    run = _run("masks", 0)
    run.go(3)  # the step's text with ':g' placeholders, on the unmasked numbers
    assert not SIX_DIGITS.search(run.render(run.step["text"])), run.render(run.step["text"])
    assert run.lesson.precision == 3
    run.close()
    data = json.loads(find_lesson("masks").file and open(find_lesson("masks").file, encoding="utf-8").read())
    data["precision"] = 2
    lesson = parse_lesson(json.dumps(data))
    run = LessonRun(lesson, PlaygroundModel(lesson.preset))
    run.start(0)
    w = run.evaluator().value("weights[cat][sat]")
    assert run.render("{weights[cat][sat]:g}") == f"{w:.2f}".rstrip("0").rstrip(".")
    assert run.render("{weights[cat][sat]:.4f}") == f"{w:.4f}"  # an explicit spec is the author's choice
    run.close()


def test_undoing_a_do_steps_edit_reopens_it():
    run = _run("softmax-cat-sat-mat", 8)  # "Move a token": edit row mat of X
    before = float(run.model.matrices["X"][2, 0])
    run.model.set_cell("X", 2, 0, before + 1.0)
    assert run.done and run.can_next
    run.model.set_cell("X", 2, 0, before)  # undone
    assert not run.done and not run.can_next
    run.close()


def test_feedback_about_an_earlier_state_is_recomputed():
    run = _run("softmax-cat-sat-mat", 7)  # output[sat][0], two decimals
    then = run.expected()
    fb = run.answer(then)
    assert fb.correct and f"{then:.2f}" in run.feedback_text()
    run.model.set_cell("X", 1, 0, 2.0)
    now = run.expected()
    text = run.feedback_text()
    assert f"now {now:.2f}" in text and f"{then:.2f}" in text, text
    assert f"{now:.3f}" in text  # the why's numbers are today's too
    run.close()


def test_progress_and_score_survive_a_restart(tmp_path):
    path = tmp_path / "progress.json"
    run = _run("softmax-cat-sat-mat", 0, JsonStore(path))
    for i in range(4):  # steps 1..4: two predicts, one right and one wrong ... then step 5's right
        run.go(i)
        if run.kind == "predict":
            run.answer(run.sample_answer(right=(i != 3)))
    run.go(4)
    run.answer(run.sample_answer(right=True))
    assert run.score == (2, 4) and run.index == 4
    run.close()
    store = JsonStore(path)  # the next launch
    assert store.load("softmax-cat-sat-mat")["score"] == 2
    again = _run("softmax-cat-sat-mat", None, store)
    assert again.index == 4 and again.score == (2, 4)
    assert store.load("softmax-cat-sat-mat")["score"] == 2 and JsonStore(path).load("softmax-cat-sat-mat")["score"] == 2
    assert again.revealed  # step 5 was answered: its feedback is back
    again.close()


def test_old_progress_without_answers_keeps_its_score(tmp_path):
    path = tmp_path / "progress.json"
    path.write_text(json.dumps({"softmax-cat-sat-mat": {"step": 4, "furthest": 4, "score": 2, "of": 4,
                                                        "done": False}}))
    store = JsonStore(path)
    run = _run("softmax-cat-sat-mat", None, store)
    assert run.index == 4 and run.score == (2, 4) and store.load("softmax-cat-sat-mat")["score"] == 2
    run.close()


def test_opened_lessons_are_remembered_and_a_vanished_one_is_dropped_with_a_note(tmp_path):
    mine = tmp_path / "data" / "My lessons"
    mine.mkdir(parents=True)
    src = json.loads(open(find_lesson("masks").file, encoding="utf-8").read())
    (mine / "a.json").write_text(json.dumps({**src, "id": "in-my-folder"}))
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({**src, "id": "opened-from-a-file"}))
    lib = LessonLibrary(mine, tmp_path / "data" / "opened-lessons.json")
    lib.remember(elsewhere)
    lessons, notes = LessonLibrary(mine, tmp_path / "data" / "opened-lessons.json").lessons()
    assert [x.id for x in lessons] == ["in-my-folder", "opened-from-a-file"] and notes == []
    elsewhere.unlink()
    lessons, notes = LessonLibrary(mine, tmp_path / "data" / "opened-lessons.json").lessons()
    assert [x.id for x in lessons] == ["in-my-folder"]
    assert len(notes) == 1 and "elsewhere.json" in notes[0]
    assert LessonLibrary(mine, tmp_path / "data" / "opened-lessons.json").files == []  # forgotten


def test_restart_starts_the_score_afresh_and_numpy_answers_are_saved(tmp_path):
    import numpy as np

    path = tmp_path / "progress.json"
    run = _run("softmax-cat-sat-mat", 1, JsonStore(path))
    run.answer(np.float64(run.expected()))  # a numpy number (a script's answer) is saved as plain JSON
    assert run.score == (1, 4) and JsonStore(path).load("softmax-cat-sat-mat")["answers"] == {"1": run.expected()}
    run.restart()
    assert run.index == 0 and run.score == (0, 4) and JsonStore(path).load("softmax-cat-sat-mat")["score"] == 0
    run.close()


def test_a_resumed_step_says_what_was_said_when_it_was_answered(tmp_path):
    """Found by the currency oracle: a lesson resumed after a restart rebuilt its feedback from the answer saved,
    checked against the numbers at the moment of resuming: "the answer is 0.87" where the learner had been told
    0.02. The feedback is saved as given; the numbers now are said beside it."""
    path = tmp_path / "progress.json"
    run = _run("softmax-cat-sat-mat", 7, JsonStore(path))  # output[sat][0]
    run.model.set_cell("X", 1, 0, -1.0)  # the learner's own numbers when answering (not the lesson's)
    then = run.expected()
    fb = run.answer(then + 1.0)  # wrong
    assert not fb.correct and f"{then:.2f}" in fb.text
    run.model.set_cell("X", 1, 0, 2.0)  # the learner edits on, then quits
    now = run.expected()
    said, on_screen = run.feedback_text(), run.model.snapshot()
    run.close()
    again = LessonRun(run.lesson, PlaygroundModel(run.lesson.preset), store=JsonStore(path))  # the next launch
    again.start(None)
    again.model.restore(on_screen)  # the same numbers on screen (a session opened)
    assert again.index == 7 and again.revealed
    assert again.feedback[7].text == fb.text and f"the answer is {then:.2f}" in again.feedback_text()
    assert f"now {now:.2f}" in again.feedback_text() and again.feedback_text() == said
    again.close()
