"""Learn mode's engine: a lesson (data, ``app.learn.model.schema``) walked step by step over the real
``PlaygroundModel``. Qt-free and evented.

Every change the lesson makes to the playground goes through ``apply(text, fn)`` — in the window that is
``UndoableEdits.apply``, so a lesson's moves are undo steps like the learner's own — and every number a step
shows or checks is computed from the model's current state when it is needed (``app.learn.model.expr``).

    run = LessonRun(load_lesson("resources/lessons/01-dot-product.json"), PlaygroundModel())
    run.start(); run.text; run.next(); run.show_me(); run.answer("animal")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from app.common.evented import Evented, ModelEvents, event
from app.learn.model import goals, predict
from app.learn.model.context import context, unavailable
from app.learn.model.expr import Evaluator, LessonExprError, render
from app.learn.model.files import Lesson, MemoryStore, ProgressStore
from app.learn.model.goals import Apply, direct_apply
from app.learn.model.links import EXTERNAL_GOALS, RUN_GOALS, Links
from app.learn.model.predict import Feedback
from app.learn.model.progress import LessonProgress
from app.learn.model.training import Wait
from app.playground.model.playground import PlaygroundModel

if TYPE_CHECKING:
    from app.lab.model import ScalingLab
    from app.model_tab.model.session import InspectSession
    from app.training.model.session import TrainingSession


# ---------------------------------------------------------------------------------------------- the walk
class LessonEvents(ModelEvents):  # its status: the step's goal met or not, its premises broken or not (Next, Show me)
    step = event()      # another step opened (or the lesson restarted)
    text = event()      # the current step's text (or its feedback) changed: the numbers it shows moved
    done = event()      # the current do step's goal was met
    answered = event(object)  # a predict step was answered: the Feedback
    numbers = event()  # the playground (or a linked run) changed: what was said about the numbers then may not hold


class LessonRun(Evented):
    """One lesson being walked over ``model``. ``apply``: how edits reach the model (default: call directly).
    ``training``: the window's ``TrainingSession`` for lessons about the Training tab (``app.learn.model.training``);
    ``lab``: its ``ScalingLab`` (``app.learn.model.lab``); ``inspect``: its Model tab's ``InspectSession``
    (``app.learn.model.model_tab``); ``wait(done, timeout_s)``: how to let their runs go on until ``done()``
    (default: pump their ``ThreadRunner`` s). What it says follows the playground now, on every change: the
    text (a broken premise, ``goals.premises``, is said instead), ``done``, the feedback (``feedback_text``)."""

    events: LessonEvents
    def __init__(self, lesson: Lesson, model: PlaygroundModel, apply: Apply | None = None,
                 store: ProgressStore | None = None, training: TrainingSession | None = None,
                 wait: Wait | None = None, lab: ScalingLab | None = None,
                 inspect: InspectSession | None = None) -> None:
        self.lesson, self.model = lesson, model
        self.apply: Apply = apply or direct_apply(model)
        self.store = store or MemoryStore()
        super().__init__()
        self.index = 0
        self.done = False
        self.feedback: dict[int, Feedback] = {}
        self.progress = LessonProgress()
        self.text = ""
        self.message = ""
        self._baselines: dict[int, np.ndarray | None] = {}  # an edit goal's row when its step opened
        self._broken: list[tuple[int, dict[str, Any]]] = []
        self._feedback_text = ""
        self._busy = self._loaded = False
        model.events.changed.connect(self._on_model)
        self.training, self.lab = training, lab
        self.links = Links(training, lab, wait, inspect)
        for sig in self.links.signals():
            sig.connect(self._on_model)

    # ------------------------------------------------------------------ reading
    @property
    def step(self) -> dict[str, Any]:
        return self.lesson.steps[self.index]

    @property
    def kind(self) -> str:
        return str(self.step["kind"])

    @property
    def total(self) -> int:
        return len(self.lesson.steps)

    @property
    def view(self) -> str | None:
        """The view the step wants (``VIEWS``): its own, else the last an earlier step asked for, else None."""
        for st in reversed(self.lesson.steps[: self.index + 1]):
            if "view" in st:
                return str(st["view"])
        return None

    @property
    def revealed(self) -> bool:
        return self.kind != "predict" or self.index in self.feedback

    @property
    def covered(self) -> tuple[str, ...]:
        """The maps the GUI hides now: a predict step's ``cover`` until it is answered."""
        return () if self.revealed else tuple(self.step.get("cover", ()))

    @property
    def first_try(self) -> dict[int, bool]:
        """Predict steps answered, by index: whether the first answer was right (kept across restarts)."""
        return self.progress.first_try

    @property
    def premise_broken(self) -> bool:
        """An earlier do step's goal that this step builds on no longer holds (undone): the text says which."""
        return bool(self._broken)

    @property
    def can_next(self) -> bool:
        """After a look step, a do step whose goal holds *now*, an answered predict step; never on a broken premise."""
        return self.index < self.total - 1 and self.can_finish

    @property
    def can_finish(self) -> bool:
        if self.premise_broken:
            return False
        return self.kind == "look" or (self.kind == "do" and self.done) or (self.kind == "predict" and self.revealed)

    @property
    def score(self) -> tuple[int, int]:
        """(predict steps right at the first try, predict steps in the lesson)."""
        n = sum(1 for s in self.lesson.steps if s["kind"] == "predict")
        return self.progress.score(n), n

    def evaluator(self) -> Evaluator:
        m = self.model
        names = context(m)
        linked, missing = self.links.names()
        names.update(linked)
        missing = {**unavailable(m), **missing}
        return Evaluator(names, frozenset(m.query_tokens) | frozenset(m.key_tokens), missing, self.lesson.precision)

    def render(self, text: str) -> str:
        return render(text, self.evaluator())

    # ------------------------------------------------------------------ moving
    def start(self, index: int | None = None) -> None:
        """Put the playground in the lesson's starting state and open step ``index`` (default: the saved one); the
        score and the answers saved come back with it."""
        saved = self.store.load(self.lesson.id)
        if not self._loaded:  # once: Restart starts the score afresh
            self.progress, self._loaded = LessonProgress.load(saved, self.lesson.steps), True
        if index is None:
            index = int(saved.get("step", 0)) if isinstance(saved.get("step", 0), int) else 0
            index = min(max(index, 0), self.total - 1)
        self._set_state({"preset": self.lesson.preset, "mode": None, "scale": "standard", "mask": "none",
                         "heads": 1, **goals.START, **self.lesson.state}, f"Lesson: {self.lesson.title}")
        busy, self._busy = self._busy, True
        try:
            for i, st in enumerate(self.lesson.steps[:index]):  # replay the steps before: a resumed lesson looks
                self._open_state(st, "")  # as it did
                if st["kind"] == "do" and not RUN_GOALS & set(st["goal"]):
                    self._baselines[i] = goals.target(st["goal"], self.model)
                    self._perform(st["goal"])  # a run (training, measuring) is not replayed: the learner's stays
        finally:
            self._busy = busy
        self.go(index)

    def restart(self) -> None:
        self.feedback.clear()
        self.progress.clear()
        self._loaded = True
        self.start(0)

    def go(self, index: int) -> None:
        """Open step ``index``; a step that cannot open on this playground (ValueError) leaves the lesson where it
        was, and says so on the way out."""
        if not 0 <= index < self.total:
            raise ValueError(f"step {index + 1} does not exist (1..{self.total})")
        before = self.index, self.done, self.message
        try:
            self._open(index)
        except ValueError:
            self.index, self.done, self.message = before
            self._refresh_text()
            raise

    def _open(self, index: int) -> None:
        self.index, self.done, self.message = index, False, ""
        st = self.step
        self._open_state(st, f"Lesson step {index + 1}")
        if st["kind"] == "do":
            self._baselines[index] = goals.target(st["goal"], self.model)
            self.links.opened()
            self.done = self.goal_met()  # met already: the lesson file's mistake (``dry_run`` reports it)
        h = st.get("highlight")
        if h:
            goals.pin(self.model, h)
        elif st.get("cover"):  # a pinned cell's explanation could give the answer away
            self.model.unpin()
            self.model.hover(None)
        if st["kind"] == "predict" and index not in self.feedback and index in self.progress.answers:
            self._resume_feedback(index)
        self._broken = self._broken_premises()
        self._refresh_text()
        self._save()
        self._announce("step")

    def next(self) -> bool:
        if not self.can_next:
            return False
        self.go(self.index + 1)
        return True

    def back(self) -> bool:
        if self.index == 0:
            return False
        self.go(self.index - 1)
        return True

    def close(self) -> None:
        self.model.events.changed.disconnect(self._on_model)
        for sig in self.links.signals():
            sig.disconnect(self._on_model)

    # ------------------------------------------------------------------ do steps
    def goal_met(self) -> bool:
        goal = self.step.get("goal") or {}
        (name, v), = goal.items()
        if name in EXTERNAL_GOALS:
            return self.links.goal_met(name, v)
        return goals.met(goal, self.model, self._baselines.get(self.index))

    def show_me(self) -> bool:
        """Do the current do step for the learner, through ``apply`` (one undo step); on a step whose premise is
        broken, make the earlier goals it builds on again first."""
        if self._broken:
            ok = all(self._perform(goal) for _i, goal in self._broken)
            self._on_model()
            if self.kind != "do" or not ok:
                return ok and not self._broken
        if self.kind != "do":
            return False
        ok = self._perform(self.step["goal"])
        self._on_model()
        return ok and self.done

    def wait_for_goal(self, timeout_s: float = 120.0) -> bool:
        """After "show me" started a run (training, measuring): let it go on until the do step's goal is met or
        the run ends (or ``timeout_s``); whether the goal is met."""
        links = self.links
        if self.kind == "do" and not self.done and links.busy():
            links.wait(lambda: self.done or not links.busy(), timeout_s)
            self._on_model()
        return self.done

    def _perform(self, goal: dict[str, Any]) -> bool:
        (name, v), = goal.items()
        if name in EXTERNAL_GOALS:
            ok, self.message = self.links.perform(name, v)
            return ok
        ok, message = goals.perform(goal, self.model, self.apply)
        self.message = message or self.message
        return ok

    def _broken_premises(self) -> list[tuple[int, dict[str, Any]]]:
        return goals.broken(self.lesson.steps, self.index, self.model, self._baselines)

    def _on_model(self, *args: object) -> None:
        if self._busy:
            return
        self.message = "" if args else self.message  # a change (not show_me's own call): a refusal was about then
        self._announce("numbers")
        broken = self._broken_premises()
        changed = broken != self._broken
        self._broken = broken
        if self.kind == "do":
            name = next(iter(self.step["goal"]))
            was = self.done
            if not (was and name in EXTERNAL_GOALS):  # a finished run stays done; a playground goal follows the state
                self.done = self.goal_met()
            if self.done and not was:
                self.message = ""
                self.links.reached(name)
                self._refresh_text()
                self._save()
                self._announce("done")
                return
            changed = changed or was != self.done
        self._refresh_text()
        if changed:
            self._set_status("what this step builds on no longer holds" if broken else
                             ("goal met" if self.done else "goal not met yet") if self.kind == "do" else "")

    # ------------------------------------------------------------------ predict steps
    def expected(self) -> Any:
        """The right answer of the current predict step, computed from the model now."""
        return predict.expected(self.step["ask"], self.evaluator(), self.model)

    def expected_text(self) -> str:
        return predict.expected_text(self.step["ask"], self.expected())

    def answer(self, given: Any) -> Feedback:
        """Check an answer (a choice, a number, or the (row, col) cell clicked) against the live value; the
        first answer counts for the score (and is saved). Reveals the covered maps."""
        if self.kind != "predict":
            raise ValueError("this step asks nothing")
        if self._broken:
            raise ValueError("first make what this step builds on again (see the step's text)")
        fb = self._feedback(given)
        self.progress.record(self.index, given, fb.correct, predict.saved(fb))
        self._save()
        self._announce(answered=fb)
        return fb

    def _feedback(self, given: Any) -> Feedback:
        ask = self.step["ask"]
        correct, shown, exp_text = predict.check(ask, given, self.expected(), self.expected_text(), self.model)
        why = self.render(self.step.get("why", ""))
        head = (f"Right: {exp_text}." if correct else f"Not quite: you said {shown}; the answer is {exp_text}.")
        fb = Feedback(correct, given, exp_text, f"{head} {why}".strip(), head)
        self.feedback[self.index] = fb
        self._feedback_text = fb.text
        return fb

    def _resume_feedback(self, index: int) -> None:
        """Answered before a restart: the feedback as it was given (saved), else checked again now."""
        said, given = self.progress.feedback.get(index), self.progress.answers[index]
        try:
            fb = predict.from_saved(said, given) if said else self._feedback(given)
        except ValueError:  # (LessonExprError too) a saved answer that no longer checks: asked again
            return
        self.feedback[index], self._feedback_text = fb, fb.text

    def feedback_text(self) -> str:
        """The current step's feedback for the numbers on screen now: as given while they are the same; after a
        change, what was said then, the answer now, and the ``why`` with today's numbers."""
        fb = self.feedback.get(self.index)
        if fb is None or self.kind != "predict":
            return ""
        try:
            return predict.feedback_now(fb, self.expected_text(), self.render(self.step.get("why", "")))
        except (LessonExprError, ValueError):
            return f"{fb.text} (about the numbers when you answered: they cannot be computed now)"

    def sample_answer(self, right: bool) -> Any:
        """An answer that is right (or wrong) now: what ``--run`` gives."""
        return predict.sample(self.step["ask"], self.expected(), self.model, right)

    # ------------------------------------------------------------------ internals
    def _open_state(self, st: dict[str, Any], text: str) -> None:
        """A step's ``session`` (the whole playground, ``PlaygroundModel.restore``), then its ``state``."""
        if "session" in st:
            self._quietly(text, lambda m: m.restore(st["session"]), "the playground to this step's session")
        if "state" in st:
            self._set_state(st["state"], text)

    def _set_state(self, st: dict[str, Any], text: str) -> None:
        self._quietly(text, goals.state_change(st), str(st))

    def _quietly(self, text: str, fn: Callable[[PlaygroundModel], Any], what: str) -> None:
        """A change the lesson makes (not the learner's: no goal is checked on the way)."""
        busy, self._busy = self._busy, True
        try:
            if not self.apply(text or "Lesson", fn):
                raise ValueError(f"the lesson could not set {what}")
        finally:
            self._busy = busy

    def _refresh_text(self) -> None:
        if self._broken:
            text = goals.broken_note(self._broken, self.lesson.steps, self.model)
        else:
            try:
                text = self.render(self.step["text"])
            except LessonExprError as exc:
                text = f"(this step's text cannot be computed: {exc})"
        feedback = self.feedback_text()
        if text != self.text or feedback != self._feedback_text:
            self.text, self._feedback_text = text, feedback
            self._announce("text")

    def _save(self) -> None:
        old = self.store.load(self.lesson.id)
        _right, n = self.score
        finished = self.index == self.total - 1 and self.can_finish
        self.store.save(self.lesson.id, self.progress.entry(old, self.index, n, finished))

