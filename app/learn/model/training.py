"""Lessons over the Training tab: the names a lesson's expressions may use about the window's ``TrainingSession``
(the tiny reversal transformer), the training goals of do steps, and how "show me" performs them. Qt-free.

Every figure comes from the session's recorded reports at the step the head grid shows (after a run: the last one)
or is measured on that step's model when asked (``accuracy_without``), never typed into a lesson.

Names (``context``):

- ``trained``: whether a model has been trained (some step past 0 recorded); ``train_step`` / ``total_steps``: the
  shown step and the run's length; ``causal``: whether the model on screen uses the causal mask; ``model_layers`` /
  ``model_heads``: its layers and heads per layer (before any model: the Training tab's settings, else the
  defaults); ``goal_accuracy``: the greedy accuracy the Training tab calls "reached" (its ETA line, 0.99).
- ``sequence_accuracy``: greedy exact-sequence accuracy on the held-out test set (the Training tab's "greedy"
  curve); ``token_accuracy``: teacher-forced per-token accuracy on the same set; both fractions of the latest
  evaluation at or before the shown step.
- ``seq_len``: L, the number of input tokens; a probe is ``x_0 … x_{L-1} SEP x_{L-1} … x_0`` and the model reads its
  first 2L positions (position L is SEP, whose query predicts the first reversed token).
- ``head_scores``: (layers, heads) reversal scores (how often a head's strongest key is the mirrored input);
  ``best_layer`` / ``best_head`` (1-based, as the grid labels them) and ``best_head_score``: the top head.
- ``best_map``: that head's attention map on the probe, (2L, 2L), indexed by position (``best_map[seq_len]``: the
  SEP query's row, ``argmax(best_map[seq_len])``: the key it attends to most).
- ``heads_off``: how many heads are switched off; ``ablated_accuracy`` / ``unablated_accuracy``: greedy accuracy
  with them off / with every head on (the Ablate tab's figures).
- ``step_reached(x)``: the first evaluated step whose greedy accuracy reached x; ``accuracy_without(layer, head)``:
  greedy accuracy with that head (1-based) switched off, measured on the shown step's model.

Goals (a do step's ``goal``): ``{"trained": 0.99}`` (a run started in this step reached that greedy accuracy; the
lesson then pauses it there, so the grid holds the model as it was when it learned and the heads can be switched
off; Start goes on), ``{"causal": false}`` (a run of a model with / without the causal mask, started in this
step, predicts 99 % of the answer tokens right teacher-forced, or trained to its end; paused there too),
``{"ablate": "best"}`` (the best head is switched off), ``{"ablate": "best-layer"}`` (every head of the best head's
layer is switched off).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from app.common.runner import ThreadRunner
from app.learn.model.expr import Labeled, LessonExprError

if TYPE_CHECKING:
    from app.training.model.session import TrainingSession

TRAINING_GOALS = ("trained", "causal", "ablate")
TRAINING_FUNCTIONS = frozenset({"step_reached", "accuracy_without"})
TRAINING_NAMES = frozenset({"trained", "train_step", "total_steps", "causal", "sequence_accuracy", "token_accuracy",
                            "model_layers", "model_heads", "goal_accuracy",
                            "seq_len", "head_scores", "best_layer", "best_head", "best_head_score", "best_map",
                            "heads_off", "ablated_accuracy", "unablated_accuracy", *TRAINING_FUNCTIONS})
NO_MODEL = "no trained model yet: train it first (the lesson's training step, or Start in the Training tab)"

Wait = Callable[[Callable[[], bool], float], bool]
"""``wait(done, timeout_s)``: deliver the run's steps until ``done()`` or the timeout; whether ``done()`` held."""


def uses_training(lesson: Any) -> bool:
    """Whether a lesson needs a training session (a training goal, the Training tab's views, or a training name in
    an expression)."""
    return any(st.get("view") in ("training", "ablate") or is_training_goal(st.get("goal"))
               for st in lesson.steps) or bool(expression_names(lesson) & TRAINING_NAMES)


def expression_names(lesson: Any) -> set[str]:
    """Every name the expressions of a lesson's steps use (texts, hints, answers)."""
    import ast

    from app.learn.model.expr import parse, placeholders

    exprs: list[str] = []
    for st in lesson.steps:
        for key in ("text", "why", "hint", "title"):
            try:
                exprs += [e for e, _ in placeholders(str(st.get(key, "")))]
            except LessonExprError:
                continue
        if isinstance(st.get("ask"), dict) and isinstance(st["ask"].get("answer"), str):
            exprs.append(st["ask"]["answer"])
    out: set[str] = set()
    for expr in exprs:
        try:
            out |= {n.id for n in ast.walk(parse(expr)) if isinstance(n, ast.Name)}
        except LessonExprError:
            continue
    return out


def is_training_goal(goal: dict[str, Any] | None) -> bool:
    return bool(goal) and next(iter(goal or {})) in TRAINING_GOALS


def best_head(session: TrainingSession) -> tuple[int, int]:
    """(layer, head), 0-based, of the shown step's highest reversal score."""
    snap = _trained_snapshot(session)
    scores = snap.reversal_scores
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(layer), int(head)


def _trained_snapshot(session: TrainingSession) -> Any:
    snap = session.shown_snapshot
    if snap is None or session.trainer is None or snap.step == 0:
        raise LessonExprError(NO_MODEL)
    return snap


def context(session: TrainingSession, cache: dict[Any, float] | None = None) -> dict[str, Any]:
    """The training names of the module docstring, computed from ``session`` now (``cache``: measured accuracies
    by (step, head), kept by the caller while the model does not change)."""
    cache = {} if cache is None else cache
    snap = session.shown_snapshot
    trainer = session.trainer
    names: dict[str, Any] = {"trained": bool(snap is not None and trainer is not None and snap.step > 0)}
    cfg = session.model_config
    if cfg is None:
        from attention_core.tiny.config import TrainConfig

        cfg = TrainConfig()  # what "show me" would train
    from app.training.model.run import GOAL

    names.update(seq_len=int(cfg.seq_len), causal=bool(cfg.causal), total_steps=int(session.total_steps or
                 cfg.total_steps), model_layers=int(cfg.num_layers), model_heads=int(cfg.num_heads),
                 goal_accuracy=float(GOAL))

    def need() -> Any:
        return _trained_snapshot(session)

    def step_reached(threshold: float) -> int:
        need()
        step = session.history.first_step_reaching(float(threshold))
        if step is None:
            raise LessonExprError(f"this run never reached {float(threshold):.0%} greedy accuracy")
        return step

    def accuracy_without(layer: float, head: float) -> float:
        s = need()
        li, h = int(layer) - 1, int(head) - 1
        layers, heads = s.reversal_scores.shape
        if not (0 <= li < layers and 0 <= h < heads):
            raise LessonExprError(f"there is no layer {int(layer)} head {int(head)} ({layers} layers × {heads} heads)")
        if s.params is None:
            raise LessonExprError(f"the parameters of step {s.step} were not kept: nothing to switch heads off in")
        key = (id(trainer), s.step, li, h)
        if key not in cache:
            from app.training.model.results import measure

            model_cfg = session.model_config
            assert model_cfg is not None
            cache[key] = float(measure(model_cfg, s, ((li, h),)).seq)
        return cache[key]

    names.update(step_reached=step_reached, accuracy_without=accuracy_without)
    if not names["trained"]:
        return names
    assert snap is not None
    r = snap.report
    scores = snap.reversal_scores
    li, h = np.unravel_index(int(np.argmax(scores)), scores.shape)
    names.update(train_step=int(snap.step), sequence_accuracy=float(r.sequence_accuracy),
                 token_accuracy=float(r.reversal_accuracy), head_scores=Labeled(scores, (None, None)),
                 best_layer=int(li) + 1, best_head=int(h) + 1, best_head_score=float(scores[li, h]),
                 best_map=Labeled(np.asarray(snap.probe_weights[int(li)][int(h)], dtype=float), (None, None)),
                 heads_off=len(session.ablated))
    ab = session.ablation
    if ab is not None and ab.off:
        names.update(ablated_accuracy=float(ab.now_seq), unablated_accuracy=float(ab.base_seq))
    return names


class Baseline:
    """What the session held when a do step opened: a training goal is met only by a run started after that."""

    def __init__(self, session: TrainingSession) -> None:
        latest = session.history.latest
        self.trainer = session.trainer
        self.step = latest.step if latest is not None else -1

    def moved(self, session: TrainingSession) -> bool:
        """A new model, or the same one trained on: past the one step that may have been in flight when the step
        opened (a run the lesson paused delivers it afterwards)."""
        latest = session.history.latest
        return self.new_model(session) or (latest is not None and latest.step > self.step + 1)

    def new_model(self, session: TrainingSession) -> bool:
        return session.trainer is not self.trainer

    def reached(self, session: TrainingSession, accuracy: float, metric: str = "sequence_accuracy") -> bool:
        """An evaluation after the step opened (any, for a new model) reached ``accuracy`` (greedy, or the
        teacher-forced per-token ``"reversal_accuracy"``)."""
        after = -1 if self.new_model(session) else self.step + 1
        return any(s.step > after and s.report.evaluated and getattr(s.report, metric) >= accuracy
                   for s in session.history)


ABLATE_TARGETS = ("best", "best-layer")


def ablate_targets(session: TrainingSession, value: str) -> list[tuple[int, int]]:
    """The heads (layer, head), 0-based, an ablate goal names: the best head, or every head of its layer."""
    layer, head = best_head(session)
    if value == "best":
        return [(layer, head)]
    return [(layer, h) for h in range(session.shown_snapshot.reversal_scores.shape[1])]  # type: ignore[union-attr]


def goal_met(session: TrainingSession, name: str, value: Any, baseline: Baseline | None) -> bool:
    if name == "ablate":
        try:
            return set(ablate_targets(session, value)) <= set(session.ablated)
        except LessonExprError:
            return False
    trainer = session.trainer
    if trainer is None or session.run_state == "building" or baseline is None or not baseline.moved(session):
        return False
    if name == "trained":
        return baseline.reached(session, float(value))
    if name == "causal":
        from app.training.model.run import GOAL

        return bool(trainer.config.causal) == bool(value) and (
            (not session.is_running and bool(trainer.finished)) or baseline.reached(session, GOAL, "reversal_accuracy"))
    return False


def on_goal_met(session: TrainingSession, name: str) -> None:
    """A "trained" or "causal" goal was just reached: pause the run there (see the module docstring)."""
    if name in ("trained", "causal") and session.is_running:
        session.pause()


def perform(session: TrainingSession, name: str, value: Any) -> tuple[bool, str]:
    """Start what the goal asks ("show me"): a training run with the Training tab's settings (the app's defaults
    unless the learner changed them; the causal mask as the goal says), or switch the heads off. (started,
    message)."""
    if name == "ablate":
        if session.is_running:
            return False, "Wait for the run to finish (or pause it): heads are switched off in a stopped model."
        try:
            heads = ablate_targets(session, value)
        except LessonExprError as exc:
            return False, str(exc)
        return all(session.toggle_head(li, h) for li, h in heads if (li, h) not in session.ablated), ""
    from attention_core.tiny.config import TrainConfig

    causal = bool(value) if name == "causal" else True
    mask = "with" if causal else "without"
    under_way = (f"Training a model {mask} the causal mask (see the Training tab): the step is done when it reaches "
                 "its goal.")
    trainer = session.trainer
    if session.run_state == "building" or (session.is_running and trainer is not None
                                           and bool(trainer.config.causal) == causal):
        return True, under_way  # a second press must not restart the run
    cfg = session.config or TrainConfig()
    if cfg.causal != causal:
        cfg = replace(cfg, causal=causal)
    if session.is_running:
        session.stop()
    session.set_config(cfg, "")
    if not session.start(new_run=True):
        return False, session.status
    return True, under_way


def default_wait(*runners: object) -> Wait:
    """Waiting without Qt: the ``ThreadRunner`` s among ``runners`` (a training session's, the Lab's) are pumped
    here; any other runner must be pumped by its owner (the window's Learn passes a wait that spins the Qt event
    loop)."""
    def wait(done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        pumps = [r for r in runners if isinstance(r, ThreadRunner)]
        while not done():
            if time.monotonic() > deadline:
                return False
            for r in pumps:
                r.pump(0.05 / len(pumps))
            if not pumps:
                time.sleep(0.05)
        return True
    return wait
