"""The Training tab's record of a run, without Qt (torch only where a snapshot's ideal pattern is first asked for):
snapshots and the history's series (which of them is shown is ``cursor``'s).

Conventions (the same as ``attention_core.tiny.analysis``): a probe is one full example of the run's task
(``attention_core.tiny.tasks``), e.g. reversal's ``[x_0 .. x_{L-1}, SEP, x_{L-1} .. x_0]`` of length 2L+1 (2L for
induction); the model reads all but its last token, so every attention map is (T-1, T-1) with queries as rows and
keys as columns. The queries from ``prompt_length - 1`` on predict the answer; where a head that solves the task
looks from each of them is the task's *ideal pattern* (``Snapshot.ideal``; for reversal the anti-diagonal,
``mirrored_cells``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from attention_core.metrics import attention_entropy, focus_score
from attention_core.tiny.tasks import prompt_length, sequence_length
from attention_core.tiny.vocab import token_labels

if TYPE_CHECKING:
    from attention_core.tiny.model import TinyTransformer
    from attention_core.tiny.report import TrainingReport

TASK_SCORE_NAMES = {"reversal": "rev", "copy": "copy", "sort": "sort", "induction": "ind"}
"""The short name of each task's head score, under each map and in the tables (``rev`` = reversal score)."""

Params = dict[str, np.ndarray]
"""A model's parameters at one step: ``state_dict`` names -> numpy copies (about 110 kB for the default model)."""


def params_of(model: TinyTransformer) -> Params:
    """numpy copies of a model's parameters and buffers (call it where the model is not changing): what a
    snapshot records of the model at its step."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def mirrored_cells(seq_len: int) -> list[tuple[int, int]]:
    """The ideal anti-diagonal: (query L+p, key L-1-p) for p = 0..L-1 (query predicts reversed token p)."""
    return [(seq_len + p, seq_len - 1 - p) for p in range(seq_len)]


def mirrored_key(seq_len: int, query: int) -> int | None:
    """The key a copying head should look at from ``query`` (the mirrored input), None for an encoder query."""
    return dict(mirrored_cells(seq_len)).get(query)


def head_metrics(weights: Sequence[np.ndarray], seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-head (entropy, focus), each (layers, heads), averaged over the L decoder queries only.

    The decoder queries are positions L..2L-1, the ones that predict the reversed tokens; the encoder rows
    are not part of the task and would blur the picture. Entropy is in nats (0 = looks at one key);
    focus is the mean row maximum (1 = one key per query).
    """
    entropy = np.stack([attention_entropy(w[:, seq_len:2 * seq_len, :]).mean(axis=-1) for w in weights])
    focus = np.stack([np.asarray(focus_score(w[:, seq_len:2 * seq_len, :])).reshape(-1) for w in weights])
    return entropy, focus


@dataclass(frozen=True)
class Snapshot:
    """One recorded step: the trainer's report plus the probe it was taken on (the report stores only maps).

    ``probe_weights`` is normally ``report.probe_weights``; it differs only when the learner changed the
    probe after training stopped and the latest maps were recomputed for the new probe.
    """

    report: TrainingReport
    probe: tuple[int, ...]
    probe_weights: list[np.ndarray] = field(repr=False)
    seq_len: int
    causal: bool = True
    entropy: np.ndarray = field(default=None, repr=False)  # type: ignore[arg-type]
    focus: np.ndarray = field(default=None, repr=False)  # type: ignore[arg-type]
    params: Params | None = field(default=None, repr=False, compare=False)
    """The model's parameters at this step (numpy copies taken in the training thread), or None when not kept."""
    task: str = "reversal"
    """The task the run trains (``attention_core.tiny.tasks.TASK_NAMES``): what the probe, the ideal pattern and the
    head score are."""
    positional: str = "learned"
    attention_dropout: float = 0.0
    """The run's position encoding and dropout on the weights: an exported picture names them (``ExportContext``)."""

    def __post_init__(self) -> None:
        if self.entropy is None or self.focus is None:
            ent, foc = head_metrics(self.probe_weights, self.seq_len)
            object.__setattr__(self, "entropy", ent)
            object.__setattr__(self, "focus", foc)

    @classmethod
    def from_report(cls, report: TrainingReport, probe: Sequence[int], seq_len: int, causal: bool = True,
                    params: Params | None = None, task: str = "reversal", positional: str = "learned",
                    attention_dropout: float = 0.0) -> Snapshot:
        return cls(report, tuple(int(t) for t in probe), list(report.probe_weights), seq_len, causal,
                   params=params, task=task, positional=positional, attention_dropout=float(attention_dropout))

    @property
    def step(self) -> int:
        return int(self.report.step)

    @property
    def labels(self) -> list[str]:
        """Labels of the positions the model reads (all but the last token of the probe)."""
        return token_labels(self.probe[:-1])

    @property
    def reversal_scores(self) -> np.ndarray:
        return np.asarray(self.report.head_reversal_scores, dtype=float)

    @property
    def task_scores(self) -> np.ndarray:
        """(layers, heads): the run's task's head score (``report.head_task_scores``); a history recorded before
        task scores existed (a reversal run) has only the reversal score, which is that task's."""
        scores = getattr(self.report, "head_task_scores", None)
        return self.reversal_scores if scores is None else np.asarray(scores, dtype=float)

    @property
    def score_name(self) -> str:
        """The head score's short name ("rev", "copy", "sort", "ind")."""
        return TASK_SCORE_NAMES.get(self.task, self.task)

    @property
    def prompt_length(self) -> int:
        """Tokens of the probe given before its answer."""
        return prompt_length(self.task, self.seq_len)

    @property
    def answer(self) -> tuple[int, ...]:
        """The probe's answer: what a model that solves the task generates after the prompt."""
        return self.probe[self.prompt_length:]

    @property
    def ideal(self) -> np.ndarray | None:
        """(T-1, T-1) bool: True where a head solving the task puts its highest weight for this probe
        (``attention_core.tiny.tasks.ideal_pattern``); None when the probe does not fit the task. Computed once."""
        cached = self.__dict__.get("_ideal", False)
        if cached is not False:
            return cached
        out: np.ndarray | None = None
        if len(self.probe) == sequence_length(self.task, self.seq_len):
            import torch

            from attention_core.tiny.tasks import ideal_pattern

            out = ideal_pattern(self.task, torch.tensor(self.probe, dtype=torch.long), self.seq_len).numpy()
        self.__dict__["_ideal"] = out  # frozen: a cache beside the fields, not one of them
        return out

    def ideal_keys(self, query: int) -> list[int]:
        """The keys the ideal pattern names for ``query`` (empty for a query that predicts no answer token)."""
        ideal = self.ideal
        if ideal is None or not 0 <= query < ideal.shape[0]:
            return []
        return [int(k) for k in np.flatnonzero(ideal[query])]

    def with_probe(self, probe: Sequence[int], weights: Sequence[np.ndarray]) -> Snapshot:
        """The same step seen through another probe (recomputed maps)."""
        return Snapshot(self.report, tuple(int(t) for t in probe), list(weights), self.seq_len, self.causal,
                        params=self.params, task=self.task, positional=self.positional,
                        attention_dropout=self.attention_dropout)


@dataclass(frozen=True)
class HeadComparison:
    """One head at two steps: the task's head score (``reversal_*``: its historical name), entropy and focus,
    before and after."""

    layer: int
    head: int
    reversal_before: float
    reversal_after: float
    entropy_before: float
    entropy_after: float
    focus_before: float
    focus_after: float

    @property
    def entropy_change(self) -> float:
        return self.entropy_after - self.entropy_before

    @property
    def focus_change(self) -> float:
        return self.focus_after - self.focus_before

    @property
    def reversal_change(self) -> float:
        return self.reversal_after - self.reversal_before


def snapshot_options(config: Any) -> dict[str, Any]:
    """What a ``Snapshot`` records of a run's config (``TrainConfig`` or ``ModelConfig``) beyond shape and mask."""
    return {"task": config.task, "positional": config.positional, "attention_dropout": config.attention_dropout}


class TrainingHistory:
    """Every snapshot of the current run, in step order, with the metric series the plots need.

    Series are kept incrementally, so asking for them at 30 fps costs a list-to-array conversion, not a
    walk over every report.
    """

    def __init__(self) -> None:
        self.clear()

    def clear(self, complete: bool = True) -> None:
        """Forget every snapshot. ``complete=False``: what follows is only some recorded points of a run (a model
        loaded from a file without its history), so plots must not join them with lines."""
        self.complete = complete
        self._snaps: list[Snapshot] = []
        self._steps: list[int] = []
        self._loss: list[float] = []
        self._train_acc: list[float] = []
        self._eval: dict[str, list[float]] = {k: [] for k in (
            "step", "test_loss", "reversal_accuracy", "sequence_accuracy", "train_sequence_accuracy")}
        # bumps on every change, a clear too (never back: a new run as long as the last one ends on another version,
        # else views that redraw only when it moved kept the last run's curves)
        self.version = getattr(self, "version", -1) + 1

    # --- recording -----------------------------------------------------------------------------------------
    def add(self, snap: Snapshot) -> bool:
        """Append a snapshot; a step already recorded (or older) is ignored. Returns whether it was added."""
        if self._snaps and snap.step <= self._snaps[-1].step:
            return False
        r = snap.report
        self._snaps.append(snap)
        self._steps.append(snap.step)
        self._loss.append(float(r.loss))
        self._train_acc.append(float(r.train_accuracy))
        if r.evaluated:
            self._eval["step"].append(snap.step)
            for key in ("test_loss", "reversal_accuracy", "sequence_accuracy", "train_sequence_accuracy"):
                self._eval[key].append(float(getattr(r, key)))
        self.version += 1
        return True

    def replace_latest(self, snap: Snapshot) -> None:
        """Swap the latest snapshot for the same step seen through another probe."""
        if not self._snaps or snap.step != self._snaps[-1].step:
            raise ValueError("replace_latest: the step must be the latest recorded one")
        self._snaps[-1] = snap
        self.version += 1

    # --- reading -------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._snaps)

    def __getitem__(self, index: int) -> Snapshot:
        return self._snaps[index]

    def __iter__(self) -> Iterator[Snapshot]:
        return iter(self._snaps)

    @property
    def latest(self) -> Snapshot | None:
        return self._snaps[-1] if self._snaps else None

    def index_of_step(self, step: int) -> int:
        """Index of the snapshot recorded at ``step`` (ValueError if that step was not recorded)."""
        i = bisect.bisect_left(self._steps, step)
        if i < len(self._steps) and self._steps[i] == step:
            return i
        raise ValueError(f"step {step} was not recorded")

    def evaluated_at(self, index: int) -> int | None:
        """The step of the latest evaluation at or before snapshot ``index`` (None if none)."""
        step = self._snaps[index].step
        i = bisect.bisect_right(self._eval["step"], step)
        return int(self._eval["step"][i - 1]) if i else None

    def reports(self) -> list[TrainingReport]:
        return [s.report for s in self._snaps]

    def series(self) -> dict[str, np.ndarray]:
        """Arrays for the plots: per step (step, loss, train_accuracy) and per evaluation (eval_step, ...)."""
        out = {"step": np.asarray(self._steps, dtype=float), "loss": np.asarray(self._loss, dtype=float),
               "train_accuracy": np.asarray(self._train_acc, dtype=float)}
        for key, values in self._eval.items():
            out["eval_step" if key == "step" else key] = np.asarray(values, dtype=float)
        return out

    def head_series(self, kind: str, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(steps (n,), values (n, layers, heads)) of "task" (the run's task score), "reversal", "entropy" or
        "focus" up to index ``upto``."""
        snaps = self._snaps if upto is None else self._snaps[: upto + 1]
        if not snaps:
            return np.zeros(0), np.zeros((0, 0, 0))
        if kind == "reversal":
            vals = [s.reversal_scores for s in snaps]
        elif kind == "task":
            vals = [s.task_scores for s in snaps]
        elif kind in ("entropy", "focus"):
            vals = [getattr(s, kind) for s in snaps]
        else:
            raise ValueError(f"kind must be 'task', 'reversal', 'entropy' or 'focus', got {kind!r}")
        return np.asarray([s.step for s in snaps], dtype=float), np.stack(vals)

    def first_step_reaching(self, threshold: float, metric: str = "sequence_accuracy") -> int | None:
        """The first evaluated step whose ``metric`` is >= threshold (None if never)."""
        for step, value in zip(self._eval["step"], self._eval[metric]):
            if value >= threshold:
                return int(step)
        return None

    def compare(self, before: int, after: int) -> list[HeadComparison]:
        """Per head, snapshot index ``before`` against index ``after`` (e.g. 0 = untrained vs the cursor)."""
        a, b = self._snaps[before], self._snaps[after]
        rows = []
        layers, heads = b.entropy.shape
        for li in range(layers):
            for h in range(heads):
                rows.append(HeadComparison(
                    li, h, float(a.task_scores[li, h]), float(b.task_scores[li, h]),
                    float(a.entropy[li, h]), float(b.entropy[li, h]), float(a.focus[li, h]),
                    float(b.focus[li, h])))
        return rows
