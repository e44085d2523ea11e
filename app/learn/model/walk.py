"""Walking a whole lesson without a learner: every do step done ("show me"), every predict step answered rightly
or wrongly, one record per step. ``--run`` prints them; ``dry_run`` (and so ``--check``) turns the misbehaving ones
into ``FILE:LINE: reason`` problems. Qt-free."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.common.runner import ThreadRunner
from app.learn.model.engine import LessonRun
from app.learn.model.expr import LessonExprError
from app.learn.model.files import Lesson, load_lesson
from app.learn.model.lab import uses_lab
from app.learn.model.links import RUN_GOALS
from app.learn.model.model_tab import uses_model
from app.learn.model.schema import LessonFileError, Problem
from app.learn.model.training import uses_training
from app.playground.model.playground import PlaygroundModel


def dry_run(lesson: Lesson, right: bool = True) -> list[Problem]:
    """Walk the lesson on a fresh model, doing every do step and answering every predict step; each problem
    found (a text that cannot be computed, a goal that cannot be reached …) with its step's line."""
    problems: list[Problem] = []
    model = PlaygroundModel(lesson.preset)
    session = lab = None
    if uses_training(lesson):  # a lesson about the Training tab trains its own throw-away model (a few seconds)
        from app.training.model.session import TrainingSession

        session = TrainingSession(runner=ThreadRunner())
        session.set_speed(None)
    if uses_lab(lesson):  # and one about the Lab measures (its show me: a few seconds)
        from app.lab.model import ScalingLab

        lab = ScalingLab(runner=ThreadRunner())
    inspect = None
    if uses_model(lesson):  # and one about the Model tab opens (show me: trains in seconds) the model it reads
        from app.model_tab.model.session import InspectSession

        inspect = InspectSession(runner=ThreadRunner())
    run = LessonRun(lesson, model, training=session, lab=lab, inspect=inspect)
    try:
        for rec in step_records(run, right):
            if not rec["behaved"]:
                i = rec["step"] - 1
                where = lesson.lines.get(("steps", i, *rec.get("field", ())), lesson.line(i))
                problems.append(Problem(where, f"step {rec['step']}: {rec['feedback']}"))
    finally:
        run.close()
        if session is not None:
            session.shutdown()
        if lab is not None:
            lab.shutdown()
        if inspect is not None:
            inspect.shutdown()
    return problems


def step_records(run: LessonRun, right: bool) -> Iterator[dict[str, Any]]:
    """Drive ``run`` from the start: one record per step (step, kind, answer, expected, correct, feedback, and
    ``behaved``: right answers accepted, wrong ones refused with the expected value in the feedback, do steps
    reached, texts computed). A do step that starts a training run waits for it (``LessonRun.wait_for_goal``)."""
    try:
        run.start(0)
    except (ValueError, LessonExprError) as exc:
        yield {"step": 1, "kind": run.kind, "answer": None, "expected": None, "correct": False,
               "feedback": f"the lesson cannot start: {exc}", "behaved": False}
        return
    for i in range(run.total):
        if i:
            try:
                run.go(i)
            except (ValueError, LessonExprError) as exc:
                yield {"step": i + 1, "kind": run.lesson.steps[i]["kind"], "answer": None, "expected": None,
                       "correct": False, "feedback": f"cannot open this step: {exc}", "behaved": False}
                return
        rec: dict[str, Any] = {"step": i + 1, "kind": run.kind, "answer": None, "expected": None}
        try:
            behaved = not run.text.startswith("(this step's text cannot be computed") and not run.premise_broken
            if not behaved:  # (a broken premise: its state set the earlier goal aside; the text says how)
                rec["field"] = ("text",)
            if run.kind == "look":
                rec.update(correct=True, feedback=run.text)
            elif run.kind == "do":
                if run.done:
                    rec.update(correct=False, feedback="the goal is already met when the step opens", behaved=False,
                               field=("goal",))
                    yield rec
                    continue
                ok = run.show_me() or (bool(RUN_GOALS & set(run.step["goal"])) and run.wait_for_goal())
                (name, v), = run.step["goal"].items()
                rec.update(answer="show me", expected={name: v}, correct=ok,
                           feedback=run.text if ok else (run.message or "show me did not reach the goal"))
                behaved = behaved and ok
                rec.setdefault("field", ("goal",))
            else:
                rec.setdefault("field", ("ask", "answer"))
                given = run.sample_answer(right)
                fb = run.answer(given)
                rec.update(answer=list(given) if isinstance(given, tuple) else given, expected=fb.expected,
                           correct=fb.correct, feedback=fb.text)
                behaved = behaved and fb.correct == right and (right or fb.expected in fb.text)
        except (ValueError, LessonExprError, StopIteration) as exc:
            rec.update(correct=False, feedback=str(exc) or type(exc).__name__)
            behaved = False
        rec["behaved"] = behaved
        yield rec


def check_file(path: str | Path) -> list[str]:
    """Every problem of a lesson file, as ``FILE:LINE: reason``: the schema, then a dry run of every step on a
    fresh playground (unknown tokens, answers that are not among the choices, goals already met …)."""
    try:
        lesson = load_lesson(path)
    except LessonFileError as exc:
        return [p.format(exc.file) for p in exc.problems]
    return [p.format(str(path)) for p in dry_run(lesson)]
