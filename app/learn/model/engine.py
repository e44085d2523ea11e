"""Learn mode's engine: a lesson (data, ``app.learn.model.schema``) walked step by step over the real
``PlaygroundModel``. Qt-free and evented.

Every change the lesson makes to the playground goes through ``apply(text, fn)`` — in the window that is
``UndoableEdits.apply``, so a lesson's moves are undo steps like the learner's own — and every number a step
shows or checks is computed from the model's current state when it is needed (``app.learn.model.expr``).

    run = LessonRun(load_lesson("resources/lessons/01-dot-product.json"), PlaygroundModel())
    run.start(); run.text; run.next(); run.show_me(); run.answer("animal")
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from psygnal import Signal, SignalGroup

from app.learn.model import predict
from app.learn.model.context import context, pointing_row, token_index
from app.learn.model.expr import Evaluator, LessonExprError, render
from app.learn.model.files import (  # noqa: F401 (re-exported: one import for the app, the CLI and the tests)
    LESSON_DIR,
    JsonStore,
    Lesson,
    MemoryStore,
    ProgressStore,
    bundled_lessons,
    find_lesson,
    load_lesson,
    parse_lesson,
)
from app.learn.model.links import EXTERNAL_GOALS, RUN_GOALS, Links
from app.learn.model.schema import LessonFileError, Problem  # noqa: F401
from app.learn.model.training import Wait
from app.playground.model.playground import PlaygroundModel

if TYPE_CHECKING:
    from app.inspect.model.session import InspectSession
    from app.lab.model import ScalingLab
    from app.training.model.session import TrainingSession

Apply = Callable[[str, Callable[[PlaygroundModel], Any]], bool]


# ---------------------------------------------------------------------------------------------- the walk
@dataclass(frozen=True)
class Feedback:
    correct: bool
    answer: Any
    expected: str
    text: str


class LessonEvents(SignalGroup):
    step = Signal()      # another step opened (or the lesson restarted)
    text = Signal()      # the current step's text changed (the numbers it shows moved)
    done = Signal()      # the current do step's goal was met
    answered = Signal(object)  # a predict step was answered: the Feedback


class LessonRun:
    """One lesson being walked over ``model``. ``apply``: how edits reach the model (default: call directly).
    ``training``: the window's ``TrainingSession`` for lessons about the Training tab (``app.learn.model.training``);
    ``lab``: its ``ScalingLab`` (``app.learn.model.lab``); ``inspect``: its Model tab's ``InspectSession``
    (``app.learn.model.model_link``); ``wait(done, timeout_s)``: how to let their runs go on until ``done()``
    (default: pump their ``ThreadRunner`` s)."""

    def __init__(self, lesson: Lesson, model: PlaygroundModel, apply: Apply | None = None,
                 store: ProgressStore | None = None, training: TrainingSession | None = None,
                 wait: Wait | None = None, lab: ScalingLab | None = None,
                 inspect: InspectSession | None = None) -> None:
        self.lesson, self.model = lesson, model
        self.apply: Apply = apply or direct_apply(model)
        self.store = store or MemoryStore()
        self.events = LessonEvents()
        self.index = 0
        self.done = False
        self.feedback: dict[int, Feedback] = {}
        self.first_try: dict[int, bool] = {}
        self.text = ""
        self.message = ""
        self._baseline: np.ndarray | None = None
        self._busy = False
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
        """The playground view the current step wants on screen (``VIEWS``): its own, else the last one an earlier
        step asked for (a resumed lesson looks as it did), else None."""
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
    def can_next(self) -> bool:
        if self.index >= self.total - 1:
            return False
        return self.kind == "look" or (self.kind == "do" and self.done) or (self.kind == "predict" and self.revealed)

    @property
    def score(self) -> tuple[int, int]:
        """(predict steps right at the first try, predict steps in the lesson)."""
        n = sum(1 for s in self.lesson.steps if s["kind"] == "predict")
        return sum(1 for ok in self.first_try.values() if ok), n

    def evaluator(self) -> Evaluator:
        m = self.model
        names = context(m)
        linked, missing = self.links.names()
        names.update(linked)
        return Evaluator(names, frozenset(m.query_tokens) | frozenset(m.key_tokens), missing)

    def render(self, text: str) -> str:
        return render(text, self.evaluator())

    # ------------------------------------------------------------------ moving
    def start(self, index: int | None = None) -> None:
        """Put the playground in the lesson's starting state and open step ``index`` (default: the saved one)."""
        saved = self.store.load(self.lesson.id)
        if index is None:
            index = int(saved.get("step", 0)) if isinstance(saved.get("step", 0), int) else 0
            index = min(max(index, 0), self.total - 1)
        self._set_state({"preset": self.lesson.preset, "mode": None, "scale": "standard", "mask": "none",
                         "heads": 1, **self.lesson.state}, f"Lesson: {self.lesson.title}")
        busy, self._busy = self._busy, True
        try:
            for st in self.lesson.steps[:index]:  # replay the steps before, so a resumed lesson looks as it did
                if "state" in st:
                    self._set_state(st["state"], "")
                if st["kind"] == "do" and not RUN_GOALS & set(st["goal"]):
                    self._perform(st["goal"])  # a run (training, measuring) is not replayed: the learner's stays
        finally:
            self._busy = busy
        self.go(index)

    def restart(self) -> None:
        self.feedback.clear()
        self.first_try.clear()
        self.start(0)

    def go(self, index: int) -> None:
        if not 0 <= index < self.total:
            raise ValueError(f"step {index + 1} does not exist (1..{self.total})")
        self.index, self.done, self.message = index, False, ""
        st = self.step
        if "state" in st:
            self._set_state(st["state"], f"Lesson step {index + 1}")
        if st["kind"] == "do":
            self._baseline = self._goal_target()
            self.links.opened()
            self.done = self.goal_met()  # met already: the lesson file's mistake (``dry_run`` reports it)
        h = st.get("highlight")
        if h:
            self._pin(h)
        elif st.get("cover"):  # a pinned cell's explanation could give the answer away
            self.model.unpin()
            self.model.hover(None)
        self._refresh_text()
        self._save()
        self.events.step.emit()

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
        m = self.model
        if name in EXTERNAL_GOALS:
            return self.links.goal_met(name, v)
        if name == "scale":
            return m.scale_mode == "sqrt" if v == "standard" else math.isclose(m.result.scale, float(v))
        if name == "mask":
            return bool(m.mask_mode == v)
        if name == "heads":
            return bool(m.num_heads == v)
        if name == "points_at":
            q = token_index(m.query_tokens, v["query"])
            return int(np.argmax(m.result.weights[q])) == token_index(m.key_tokens, v["key"])
        target = self._goal_target()
        return self._baseline is not None and target is not None and not np.array_equal(target, self._baseline)

    def show_me(self) -> bool:
        """Do the current do step for the learner, through ``apply`` (one undo step)."""
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
        m = self.model
        if name in EXTERNAL_GOALS:
            ok, self.message = self.links.perform(name, v)
            return ok
        if name == "scale":
            return self.apply("Lesson: show me (scale)", lambda mm: mm.set_scale("standard" if v == "standard" else v))
        if name == "mask":
            return self.apply("Lesson: show me (mask)", lambda mm: mm.set_mask(v))
        if name == "heads":
            return self.apply("Lesson: show me (heads)", lambda mm: mm.set_heads(v))
        if name == "points_at":
            row = pointing_row(m, v["query"], v["key"])
            if row is None:
                self.message = "Show me cannot do this one here: edit the Q row yourself."
                return False
            q = token_index(m.query_tokens, v["query"])
            return self.apply("Lesson: show me (point Q)", lambda mm: mm.set_block("Q", q, 0, row.reshape(1, -1)))
        mat, r = self._edit_cell(goal)
        return self.apply("Lesson: show me (edit)",
                          lambda mm: mm.set_cell(mat, r, 0, float(mm.matrices[mat][r, 0]) + 1.0))

    def _edit_cell(self, goal: dict[str, Any]) -> tuple[str, int]:
        e = goal["edit"]
        mat = str(e["matrix"])
        m = self.model
        if mat not in m.matrices:
            raise ValueError(f"there is no matrix {mat} to edit in this mode ({', '.join(m.matrices)})")
        tokens = m.query_tokens if mat in ("Q", "X", "X_q") else m.key_tokens
        return mat, token_index(tokens, e["row"])

    def _goal_target(self) -> np.ndarray | None:
        goal = self.step.get("goal") or {}
        if "edit" not in goal:
            return None
        mat, r = self._edit_cell(goal)
        return np.array(self.model.matrices[mat][r], copy=True)

    def _on_model(self, *_: object) -> None:
        if self._busy:
            return
        if self.kind == "do" and not self.done and self.goal_met():
            self.done = True
            self.message = ""
            self.links.reached(next(iter(self.step["goal"])))
            self._refresh_text()
            self._save()
            self.events.done.emit()
            return
        self._refresh_text()

    # ------------------------------------------------------------------ predict steps
    def expected(self) -> Any:
        """The right answer of the current predict step, computed from the model now."""
        return predict.expected(self.step["ask"], self.evaluator(), self.model)

    def expected_text(self) -> str:
        return predict.expected_text(self.step["ask"], self.expected())

    def answer(self, given: Any) -> Feedback:
        """Check an answer (a choice, a number, or the (row, col) cell clicked) against the live value; the
        first answer counts for the score. Reveals the covered maps."""
        if self.kind != "predict":
            raise ValueError("this step asks nothing")
        ask = self.step["ask"]
        exp = self.expected()
        correct, shown, exp_text = predict.check(ask, given, exp, self.expected_text(), self.model)
        why = self.render(self.step.get("why", ""))
        head = (f"Right: {exp_text}." if correct else f"Not quite: you said {shown}; the answer is {exp_text}.")
        fb = Feedback(correct, given, exp_text, f"{head} {why}".strip())
        self.feedback[self.index] = fb
        self.first_try.setdefault(self.index, correct)
        self._save()
        self.events.answered.emit(fb)
        return fb

    def sample_answer(self, right: bool) -> Any:
        """An answer that is right (or wrong) now: what ``--run`` gives."""
        return predict.sample(self.step["ask"], self.expected(), self.model, right)

    # ------------------------------------------------------------------ internals
    def _set_state(self, st: dict[str, Any], text: str) -> None:
        def change(m: PlaygroundModel) -> None:
            if st.get("preset"):
                m.load_preset(st["preset"])
            if st.get("mode") and st["mode"] != m.mode:
                m.set_mode(st["mode"])
            for dim, n in st.get("dims", {}).items():
                if m.dims[dim] != n:
                    m.set_dim(dim, n)
            if "scale" in st:
                m.set_scale(st["scale"])
            if "heads" in st and m.num_heads != st["heads"]:
                m.set_heads(st["heads"])
            if "padding" in st:
                blocked = {token_index(m.key_tokens, k) for k in st["padding"]}
                for k, keep in enumerate(list(m.padding_keep)):
                    if keep == (k in blocked):
                        m.toggle_padding(k)
            if "mask" in st and m.mask_mode != st["mask"]:
                m.set_mask(st["mask"])
            for c in st.get("cells", []):
                tokens = m.query_tokens if c["matrix"] in ("Q", "X", "X_q") else m.key_tokens
                m.set_cell(c["matrix"], token_index(tokens, c["row"]), int(c["col"]), float(c["value"]))

        busy, self._busy = self._busy, True
        try:
            if not self.apply(text or "Lesson", change):
                raise ValueError(f"the lesson could not set {st}")
        finally:
            self._busy = busy

    def _pin(self, h: dict[str, Any]) -> None:
        m = self.model
        row = token_index(m.query_tokens, h.get("row", 0))
        tokens = m.key_tokens if h["map"] != "output" else [str(i) for i in range(m.result.output.shape[1])]
        col = token_index(tokens, h.get("col", 0)) if not isinstance(h.get("col", 0), int) else int(h.get("col", 0))
        m.pin(h["map"], row, col)

    def _refresh_text(self) -> None:
        try:
            text = self.render(self.step["text"])
        except LessonExprError as exc:
            text = f"(this step's text cannot be computed: {exc})"
        if text != self.text:
            self.text = text
            self.events.text.emit()

    def _save(self) -> None:
        old = self.store.load(self.lesson.id)
        right, n = self.score
        finished = self.index == self.total - 1 and self.can_finish
        self.store.save(self.lesson.id, {"step": self.index, "furthest": max(self.index, int(old.get("furthest", 0))),
                                         "score": right, "of": n, "done": bool(old.get("done")) or finished})

    @property
    def can_finish(self) -> bool:
        return self.kind == "look" or (self.kind == "do" and self.done) or (self.kind == "predict" and self.revealed)


def direct_apply(model: PlaygroundModel) -> Apply:
    """``apply`` without an undo stack: call the model; a refused edit (ValueError) returns False."""
    def apply(_text: str, fn: Callable[[PlaygroundModel], Any]) -> bool:
        try:
            fn(model)
        except ValueError:
            return False
        return True
    return apply
