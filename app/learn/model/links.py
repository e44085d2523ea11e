"""What a lesson reaches beyond the playground: the window's ``TrainingSession`` (``app.learn.model.training``), its
Lab (``app.learn.model.lab``) and its Model tab (``app.learn.model.model_tab``). ``Links`` gives the lesson engine
one place for their expression names, their do-step goals (detected from their events, performed by "show me") and
waiting for their background runs. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.learn.model import lab as lesson_lab
from app.learn.model import training as lesson_training
from app.learn.model.model_tab import MODEL_GOALS, MODEL_NAMES, ModelTabLink
from app.learn.model.training import Wait, default_wait

if TYPE_CHECKING:
    from app.lab.model import ScalingLab
    from app.model_tab.model.session import InspectSession
    from app.training.model.session import TrainingSession

EXTERNAL_GOALS = (*lesson_training.TRAINING_GOALS, *lesson_lab.LAB_GOALS, *MODEL_GOALS)
RUN_GOALS = frozenset({"trained", "causal", "measured", "model_open", "model_detected", "model_heads_off"})
"""Goals that start a background run: a resumed lesson does not replay them (the learner's model stays)."""


class Links:
    """The training session, the Lab and the Model tab a lesson may use (any may be None: its names then say why)."""

    def __init__(self, training: TrainingSession | None = None, lab: ScalingLab | None = None,
                 wait: Wait | None = None, inspect: InspectSession | None = None) -> None:
        self.training, self.lab = training, lab
        self.model_tab = ModelTabLink(inspect) if inspect is not None else None
        self.wait: Wait = wait or default_wait(*(x.runner for x in (training, lab, inspect) if x is not None))
        self._train_baseline: lesson_training.Baseline | None = None
        self._lab_baseline: lesson_lab.Baseline | None = None
        self._measured: dict[Any, float] = {}  # accuracies measured with a head off, by (model, step, head)

    def signals(self) -> list[Any]:
        """The events after which a goal may be met or a text's figures may have moved."""
        out: list[Any] = []
        if self.training is not None:
            ev = self.training.events
            out += [ev.run_state, ev.history, ev.ablation, ev.shown, ev.config]
        if self.lab is not None:
            out += [self.lab.events.run_state, self.lab.events.results]
        if self.model_tab is not None:
            out += self.model_tab.signals()
        return out

    def names(self) -> tuple[dict[str, Any], dict[str, str]]:
        """(the names' values now, why each name without a value has none)."""
        names: dict[str, Any] = {}
        if self.training is not None:
            names.update(lesson_training.context(self.training, self._measured))
        if self.lab is not None:
            names.update(lesson_lab.context(self.lab))
        if self.model_tab is not None:
            names.update(self.model_tab.context())
        no_training = lesson_training.NO_MODEL if self.training is not None else (
            "this lesson needs the Training tab (run it in the app)")
        no_lab = lesson_lab.NO_MEASUREMENT if self.lab is not None else "this lesson needs the Lab (run it in the app)"
        return names, dict.fromkeys(lesson_training.TRAINING_NAMES, no_training) | dict.fromkeys(
            lesson_lab.LAB_NAMES, no_lab) | (self.model_tab.missing() if self.model_tab is not None else dict.fromkeys(
            MODEL_NAMES, "this lesson needs the Model tab (run it in the app)"))

    def opened(self) -> None:
        """A do step opened: what its goal must move beyond."""
        self._train_baseline = lesson_training.Baseline(self.training) if self.training is not None else None
        self._lab_baseline = lesson_lab.Baseline(self.lab) if self.lab is not None else None

    def goal_met(self, name: str, value: Any) -> bool:
        if name in MODEL_GOALS:
            return self.model_tab is not None and self.model_tab.goal_met(name, value)
        if name in lesson_training.TRAINING_GOALS:
            return self.training is not None and lesson_training.goal_met(self.training, name, value,
                                                                          self._train_baseline)
        return self.lab is not None and lesson_lab.goal_met(self.lab, self._lab_baseline)

    def reached(self, name: str) -> None:
        """The goal ``name`` was just met (a "trained" run is paused there)."""
        if self.training is not None:
            lesson_training.on_goal_met(self.training, name)

    def perform(self, name: str, value: Any) -> tuple[bool, str]:
        """Show me: (started or done, message)."""
        if name in MODEL_GOALS:
            if self.model_tab is None:
                return False, "This step needs the Model tab: open the lesson in the app."
            return self.model_tab.perform(name, value)
        if name in lesson_training.TRAINING_GOALS:
            if self.training is None:
                return False, "This step needs the Training tab: open the lesson in the app."
            return lesson_training.perform(self.training, name, value)
        if self.lab is None:
            return False, "This step needs the Lab: open the lesson in the app."
        return lesson_lab.perform(self.lab)

    def busy(self) -> bool:
        """A background run is going on (training, being built, or measuring)."""
        t, lab = self.training, self.lab
        return bool((t is not None and (t.is_running or t.run_state == "building")) or (lab is not None and
                                                                                          lab.is_running)
                    or (self.model_tab is not None and self.model_tab.busy()))
