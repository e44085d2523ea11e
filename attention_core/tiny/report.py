"""What one training step reports (``TrainingReport``) and the metrics history written from those reports."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TrainingReport:
    """The state after one training step. Metrics are fractions in [0, 1].

    ``reversal_accuracy``/``sequence_accuracy``/``test_loss``/``train_sequence_accuracy``/
    ``head_reversal_scores`` come from the latest evaluation (``evaluated`` says whether it ran at this
    step; step 0 is the untrained model). ``probe_weights``: per layer (H, 2L, 2L) attention of the probe.
    ``seconds`` counts training compute only (evaluation excluded); ``wall_seconds`` counts everything.
    ``head_task_scores`` (the run's task's ideal pattern, ``tasks.ideal_pattern``) and ``head_entropy`` (mean
    attention entropy per head, nats), both (layers, heads), come from the latest evaluation too (None in a history
    recorded before they existed).
    """

    step: int
    total_steps: int
    epoch: float
    loss: float
    train_accuracy: float
    evaluated: bool
    test_loss: float
    reversal_accuracy: float
    sequence_accuracy: float
    train_sequence_accuracy: float
    head_reversal_scores: np.ndarray
    probe_weights: list[np.ndarray] = field(repr=False)
    seconds: float
    wall_seconds: float
    head_task_scores: np.ndarray | None = field(default=None, repr=False)
    head_entropy: np.ndarray | None = field(default=None, repr=False)

    HISTORY_COLUMNS = ("step", "epoch", "loss", "train_accuracy", "test_loss", "reversal_accuracy",
                       "sequence_accuracy", "train_sequence_accuracy", "seconds", "wall_seconds")

    def history_row(self) -> list[Any]:
        return [getattr(self, c) for c in self.HISTORY_COLUMNS]


def write_history_csv(path: str | Path, reports: Sequence[TrainingReport], comments: Sequence[str] | None = None
                      ) -> None:
    """Metrics history, atomically written: ``#`` lines (``comments``, default: the last step and its accuracy),
    the column names, then one row per report; ``numpy.genfromtxt(path, comments='#', delimiter=',')`` reads it
    (the names' row as nan)."""
    from ..fileio import atomic_write

    last = reports[-1] if reports else None
    if comments is None:
        comments = ["# Attention Playground: training metrics history, one row per recorded step"] + (
            [] if last is None else [f"# step: {last.step} of {last.total_steps}",
                                     f"# test sequence accuracy: {float(last.sequence_accuracy)!r}"])
    rows = [list(TrainingReport.HISTORY_COLUMNS)] + [r.history_row() for r in reports]

    def write(fh: Any) -> None:
        fh.writelines(f"{line}\n" for line in comments)
        csv.writer(fh).writerows(rows)

    atomic_write(path, write, text=True)
