"""Two runs of an experiment side by side at one step: which two, the step (the latest both reached unless the
learner chose one), each run's recorded snapshot there (the probe's attention maps), and the per-head attention
entropy of each from its report at the latest evaluation at or before that step, with their difference.

Part of ``ExperimentSession`` (``session.compare``); emits ``session.events.compare``. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from app.experiments.model.findings import mean_entropy

if TYPE_CHECKING:
    from app.training.model.history import Snapshot
    from app.training.model.session import TrainingSession
    from attention_core.tiny.experiments import ExperimentRun
    from attention_core.tiny.report import TrainingReport

ENTROPY_SOURCE = ("mean attention entropy per head (nats) over every query of the first 100 held-out sequences, "
                  "from each run's latest evaluation at or before the step shown")
"""Where the entropy the comparison shows comes from (the caption says it): ``TrainingReport.head_entropy``."""



class ExperimentRuns(Protocol):
    """What the comparison reads of its ``ExperimentSession`` (declared here so this part never imports the
    session that owns it): the runs, the sessions that trained them, and how it announces a change."""

    runs: list[ExperimentRun]
    sessions: list[TrainingSession]
    trained_runs: list[ExperimentRun]

    def _announce(self, *names: str, **payloads: Any) -> None: ...  # ``app.common.evented.Evented``'s

@dataclass(frozen=True)
class CompareSide:
    """One run at the compared step: its name, the snapshot (maps on the probe), and the evaluation whose per-head
    entropy is shown (None when the run has not reached the step or has no evaluation with entropy)."""

    index: int
    name: str
    snapshot: Snapshot | None
    evaluation: TrainingReport | None

    @property
    def entropy(self) -> np.ndarray | None:
        e = self.evaluation
        return None if e is None or e.head_entropy is None else np.asarray(e.head_entropy, dtype=float)


class CompareState:
    """Which two runs, at which step (see the module docstring)."""

    def __init__(self, session: ExperimentRuns) -> None:
        self._session = session
        self.a, self.b = 0, 1
        self.chosen_step: int | None = None  # None: the latest step both runs reached
        self._seen: tuple[Any, ...] = ()

    # ---------------------------------------------------------------- commands
    def reset(self) -> None:
        self.a, self.b, self.chosen_step = 0, min(1, max(0, len(self._session.runs) - 1)), None
        self._emit()

    def set_pair(self, a: int, b: int) -> None:
        n = len(self._session.sessions) or len(self._session.runs)
        if not (0 <= a < n and 0 <= b < n):
            raise ValueError(f"runs are numbered 1-{n}")
        self.a, self.b = a, b
        self._emit()

    def set_step(self, step: int | None) -> None:
        """Compare at ``step`` (clamped to the steps both runs reached); None follows the latest."""
        top = self.max_step
        self.chosen_step = None if step is None or top is None or step >= top else max(0, int(step))
        self._emit()

    def follow(self) -> None:
        """The runs moved on: announce when what is shown changes."""
        key = (self.a, self.b, self.step, self.max_step)
        if key != self._seen:
            self._emit()

    def _emit(self) -> None:
        self._seen = (self.a, self.b, self.step, self.max_step)
        self._session._announce("compare")

    # ---------------------------------------------------------------- reading
    def _latest(self, index: int) -> int | None:
        sessions = self._session.sessions
        if not 0 <= index < len(sessions):
            return None
        latest = sessions[index].history.latest
        return None if latest is None else latest.step

    @property
    def max_step(self) -> int | None:
        """The last step both runs have recorded (None until both have one)."""
        a, b = self._latest(self.a), self._latest(self.b)
        return None if a is None or b is None else min(a, b)

    @property
    def step(self) -> int | None:
        top = self.max_step
        if top is None:
            return None
        return top if self.chosen_step is None else min(self.chosen_step, top)

    def side(self, which: str) -> CompareSide:
        """``"a"`` or ``"b"`` at the compared step."""
        index = self.a if which == "a" else self.b
        runs = self._session.trained_runs if self._session.sessions else self._session.runs
        name = runs[index].name if index < len(runs) else "?"
        step = self.step
        sessions = self._session.sessions
        if step is None or index >= len(sessions):
            return CompareSide(index, name, None, None)
        history = sessions[index].history
        i = _index_at_or_before(history, step)
        if i is None:
            return CompareSide(index, name, None, None)
        eval_step = history.evaluated_at(i)
        evaluation = history[history.index_of_step(eval_step)].report if eval_step is not None else None
        return CompareSide(index, name, history[i], evaluation)

    def sparklines(self, which: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Run ``which``'s per-head curves up to the compared step, at each evaluation: (steps (n,), task scores
        (n, layers, heads), focus on the probe (n, layers, heads): the mean row maximum over the answer queries)."""
        index = self.a if which == "a" else self.b
        step = self.step
        if step is None or index >= len(self._session.sessions):
            return np.zeros(0), np.zeros((0, 0, 0)), np.zeros((0, 0, 0))
        snaps = [s for s in self._session.sessions[index].history
                 if s.step <= step and s.report.evaluated and s.report.head_task_scores is not None]
        if not snaps:
            return np.zeros(0), np.zeros((0, 0, 0)), np.zeros((0, 0, 0))
        return (np.asarray([s.step for s in snaps], dtype=float),
                np.stack([np.asarray(s.report.head_task_scores, dtype=float) for s in snaps]),
                np.stack([s.focus for s in snaps]))

    def entropy_difference(self) -> np.ndarray | None:
        """Per head, B's entropy minus A's (nats), when both have one and the models have the same shape."""
        ea, eb = self.side("a").entropy, self.side("b").entropy
        if ea is None or eb is None or ea.shape != eb.shape:
            return None
        return eb - ea

    def mean_change(self) -> tuple[float, float, float] | None:
        """(A's mean head entropy, B's, relative change from A to B)."""
        a, b = self.side("a").evaluation, self.side("b").evaluation
        ma, mb = mean_entropy(a), mean_entropy(b)
        if not (np.isfinite(ma) and np.isfinite(mb)) or ma == 0:
            return None
        return ma, mb, (mb - ma) / ma

    def caption(self) -> str:
        """What the comparison shows, at which steps, and where its entropy comes from."""
        step = self.step
        if step is None:
            return "Run an experiment: the heads of the two runs chosen appear here, side by side at one step."
        a, b = self.side("a"), self.side("b")
        evals = " and ".join(f"{s.name} at step {s.evaluation.step}" for s in (a, b) if s.evaluation is not None)
        return (f"Step {step}: attention maps on each run's probe sequence. Entropy: {ENTROPY_SOURCE} "
                f"({evals or 'none yet'}).")


def _index_at_or_before(history: Any, step: int) -> int | None:
    try:
        return int(history.index_of_step(step))
    except ValueError:
        best = None
        for i, snap in enumerate(history):
            if snap.step > step:
                break
            best = i
        return best
