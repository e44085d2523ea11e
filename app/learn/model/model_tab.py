"""Lessons over the Model tab (an ``InspectSession`` and its ``HeadsAnalysis``): what a lesson's expressions may
name about the model that is open, its do-step goals, and what "show me" does. Qt-free; every number is computed
from the open model when a text or an answer needs it.

Names (``context``), all prefixed ``real_`` (the Training tab's lessons have their own ``model_layers``,
``best_layer`` …); layers and heads count from 0, kinds are the detectors' (``'previous-token'``,
``'duplicate-token'``, ``'induction'``, ``'first-token'``):

- ``real_open`` (a model is loaded and its text traced), ``real_name``, ``real_layers``, ``real_heads``;
- ``real_detected``: the detectors have run on the model as it is now (the heads that are off, off);
- ``real_score(kind, layer, head)``, ``real_best_layer(kind)``, ``real_best_head(kind)``, ``real_best_score(kind)``,
  ``real_above(kind)`` (how many heads score above 0.4): from the detectors run with every head on (run here when
  the Detect view has not);
- ``real_first_half_loss`` / ``real_second_half_loss``: the repeated random tokens' mean next-token loss per half
  (nats), as the model is now; ``real_clean_second_half_loss``: the same with every head on;
- ``real_second_half_without(which)``: that loss with ``'best-induction'`` (the strongest induction head) or
  ``'induction'`` (every induction head above 0.4) switched off — measured when asked, before the learner does it;
- ``real_off_count``: how many heads are off now.

Goals: ``{"model_open": true}`` (show me: with no model open, train the app's two-layer model on the induction task
— a few seconds — and open it); ``{"model_detected": true}`` (show me: every head back on, run the detectors);
``{"model_heads_off": "best-induction" | "induction"}`` (exactly those heads off, the detectors run again; show me
switches them off).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.learn.model.expr import LessonExprError
from app.model_tab.model.generate_lesson import GEN_NAMES, GenerateNames

if TYPE_CHECKING:
    from app.model_tab.model.session import InspectSession

MODEL_GOALS = ("model_open", "model_detected", "model_heads_off")
HEAD_SETS = ("best-induction", "induction")
MODEL_FUNCTIONS = frozenset({"real_score", "real_best_layer", "real_best_head", "real_best_score", "real_above",
                             "real_second_half_without"})
MODEL_NAMES = frozenset({"real_open", "real_name", "real_layers", "real_heads", "real_detected", "real_first_half_loss",
                         "real_second_half_loss", "real_clean_second_half_loss", "real_off_count", *MODEL_FUNCTIONS,
                         *GEN_NAMES})  # the Generate view's (app.model_tab.model.generate_lesson)
NO_MODEL = "no model is open: open one in the Model tab (or Show me on the lesson's first step)"
NO_DETECTION = ("the detectors have not run on the model as it is now (with the heads that are off): Run detectors "
                "in the Model tab's Detect view")
THRESHOLD = 0.4


def uses_model(lesson: Any) -> bool:
    """Whether a lesson names the Model tab (a goal or a view of it)."""
    for step in lesson.steps:
        if any(g in MODEL_GOALS for g in step.get("goal", {})) or step.get("view") in ("model", "detect", "generate"):
            return True
    return False


class ModelTabLink:
    """The lesson's hold on the Model tab: names, goals and show me, and the clean detection it remembers."""

    def __init__(self, session: InspectSession) -> None:
        self.session = session
        self.training = False  # show me is training the induction model it will open
        self._clean: Any = None  # the last detection with every head on, for the model open then
        self._without: dict[tuple[int, str], float] = {}
        self.generate = GenerateNames(session)  # the gen_ names: the model writing over its cache

    # ------------------------------------------------------------------ reading
    def signals(self) -> list[Any]:
        ev, heads = self.session.events, self.session.heads.events
        return [ev.load, ev.trace, heads.detection, heads.off]

    def busy(self) -> bool:
        s = self.session
        return self.training or s.load_state == "loading" or s.tracing or s.heads.busy

    def _open(self) -> bool:
        s = self.session
        return s.model is not None and s.trace is not None and s.load_state == "ready"

    def _detection(self) -> Any:
        """The current detection if it was run on the model as it is now, else None."""
        h = self.session.heads
        d = h.detection
        return d if d is not None and not h.detecting and d.off == h.off and self._open() else None

    def clean(self) -> Any:
        """The detectors with every head on, for the open model: the Detect view's run when it has one, else run
        here once (the same probe: its seed, batch and length), so a lesson can ask before the learner looks."""
        d = self._detection()
        if d is not None and not d.off:
            self._clean = d
        model = self.session.model
        if not self._open() or model is None:
            raise LessonExprError(NO_MODEL)
        if self._clean is None or self._clean.model != model.name:
            from app.model_tab.model.detect_runs import BATCH, SEED, run_detectors

            self._clean = run_detectors(model, (), seed=SEED, batch=BATCH)
        return self._clean

    def heads_of(self, which: str) -> tuple[tuple[int, int], ...]:
        if which not in HEAD_SETS:
            raise LessonExprError(f"heads {which!r}: say one of {', '.join(repr(w) for w in HEAD_SETS)}")
        scores = self.clean().scores["induction"]
        if which == "best-induction":
            return (tuple(int(x) for x in scores.best()),)  # type: ignore[return-value]
        return tuple(sorted(scores.heads_above(THRESHOLD)))

    def context(self) -> dict[str, Any]:
        """The names of the module docstring, now."""
        s = self.session
        names: dict[str, Any] = {"real_open": self._open(), "real_detected": self._detection() is not None,
                                 "real_off_count": len(s.heads.off)}
        if self._open():
            assert s.model is not None
            names.update(real_name=s.model.name, real_layers=s.model.info.layers, real_heads=s.model.info.heads)

        def kind_scores(kind: str) -> Any:
            try:
                return self.clean().scores[str(kind)]
            except KeyError:
                raise LessonExprError(f"no detector {kind!r}: say previous-token, duplicate-token, induction or "
                                      "first-token") from None

        names["real_score"] = lambda kind, layer, head: float(kind_scores(kind).scores[int(layer), int(head)])
        names["real_best_layer"] = lambda kind: int(kind_scores(kind).best()[0])
        names["real_best_head"] = lambda kind: int(kind_scores(kind).best()[1])
        names["real_best_score"] = lambda kind: float(kind_scores(kind).scores[kind_scores(kind).best()])
        names["real_above"] = lambda kind: len(kind_scores(kind).heads_above(THRESHOLD))
        names["real_second_half_without"] = self.second_half_without
        names.update(self.generate.context())
        d = self._detection()
        if d is not None:
            names["real_first_half_loss"] = float(d.repeat.first_half_loss)
            names["real_second_half_loss"] = float(d.repeat.second_half_loss)
        try:
            names["real_clean_second_half_loss"] = float(self.clean().repeat.second_half_loss)
        except LessonExprError:
            pass
        return names

    def missing(self) -> dict[str, str]:
        """Why each name without a value has none, now."""
        why = {name: NO_MODEL for name in MODEL_NAMES}
        if self._open():
            why.update(dict.fromkeys(("real_first_half_loss", "real_second_half_loss"), NO_DETECTION))
        return why

    def second_half_without(self, which: str) -> float:
        """The probe's second-half loss with ``which`` heads off (the same probe as the Detect view's)."""
        from app.model_tab.model.detect_runs import BATCH, SEED, run_detectors

        heads, clean = self.heads_of(str(which)), self.clean()
        key = (id(self.session.model), ",".join(f"{a}.{b}" for a, b in heads))
        if key not in self._without:
            run = run_detectors(self.session.model, heads, seq_len=clean.seq_len, seed=SEED, batch=BATCH,
                                clean_repeat=clean.repeat)
            self._without[key] = float(run.repeat.second_half_loss)
        return self._without[key]

    # ------------------------------------------------------------------ goals
    def goal_met(self, name: str, value: Any) -> bool:
        h = self.session.heads
        if name == "model_open":
            return self._open() == bool(value)
        if name == "model_detected":
            return self._detection() is not None
        try:
            target = set(self.heads_of(str(value)))
        except LessonExprError:
            return False
        return set(h.off) == target and self._detection() is not None

    def perform(self, name: str, value: Any) -> tuple[bool, str]:
        """Show me: (started or done, message)."""
        s = self.session
        if name == "model_open":
            if self._open():
                return True, f"{s.model.name if s.model else 'A model'} is open."
            self._train_and_open()
            return True, "Training the two-layer induction model (a few seconds), then opening it…"
        if not self._open():
            return False, NO_MODEL
        if name == "model_detected":
            if s.heads.off:
                s.heads.switch_all_on()  # the detectors rerun for every head on
            else:
                s.heads.detect()
            return True, "Running the detectors on repeated random tokens…"
        try:
            heads = self.heads_of(str(value))
        except LessonExprError as exc:
            return False, str(exc)
        s.heads.set_off(heads)
        return True, f"Switching off {', '.join(f'{a}.{b}' for a, b in heads)}; the detectors run again…"

    def _train_and_open(self) -> None:
        """Train the app's induction recipe (seed 0) off this thread, save it, then open it in the session."""
        self.training = True

        def work() -> Iterator[object]:
            from attention_core.tiny.checkpoint import save_checkpoint
            from attention_core.tiny.experiments import task_recipe
            from attention_core.tiny.training import ReversalTrainer

            trainer = ReversalTrainer(task_recipe("induction", seed=0))
            trainer.run()
            from app.common.outputs import scratch_folder

            path = scratch_folder("lesson-induction-") / "induction.safetensors"  # the lesson's own: gone at exit
            save_checkpoint(path, trainer.model, extra={"train_config": trainer.config.to_dict()})
            yield path

        def done(path: object) -> None:
            self.session.load(Path(str(path)))
            self.training = False

        def ended(reason: str) -> None:
            if reason != "finished":
                self.training = False

        self.session.runner.start(work, done, ended)
