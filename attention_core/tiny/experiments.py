"""Experiments: 2-6 training runs that differ in one or more options, trained one after another and compared.

An experiment is a list of ``ExperimentRun`` (a name and a ``TrainConfig``). ``EXPERIMENT_PRESETS`` holds the seed
questions (positions, causal vs bidirectional, one head vs four, attention dropout, the four tasks); a JSON file
can define others (``load_runs_file``). ``Experiment`` trains the runs in turn (``reports`` yields one
``(run index, TrainingReport)`` per step, so one worker drives it, with one ``TrainingControl`` to pause or stop),
and ``summary_rows`` / ``write_summary_csv`` give the final table: steps to 99 %, final accuracies, mean head
entropy, best task score.

Importing this module does not import torch (a settings form builds runs on every keystroke); training does.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import TrainConfig
from .tasks import TASK_NAMES

if TYPE_CHECKING:
    from .control import TrainingControl
    from .report import TrainingReport
    from .training import ReversalTrainer

MIN_RUNS, MAX_RUNS = 2, 6

TASK_RECIPES: dict[str, dict[str, Any]] = {
    "reversal": {},
    "copy": {"steps": 200},
    "sort": {"num_layers": 1, "num_heads": 1, "lr": 5e-3, "steps": 600},
    "induction": {"lr": 1e-2, "steps": 300},
}
"""Per task, the ``TrainConfig`` overrides of its default recipe (each reaches >= 99 % greedy exact-sequence
accuracy on held-out data on 2 CPU cores; measured times in docs/benchmarks.md and ``benchmarks/bench_tasks.py``)."""


def task_recipe(task: str, **overrides: Any) -> TrainConfig:
    """The default recipe of ``task`` as a ``TrainConfig`` (plus ``overrides``)."""
    if task not in TASK_NAMES:
        raise ValueError(f"unknown task {task!r}: choose one of {', '.join(TASK_NAMES)}")
    return TrainConfig(**{**TASK_RECIPES[task], "task": task, **overrides})


@dataclass(frozen=True)
class ExperimentRun:
    """One run of an experiment: a short name (for legends and folders) and its full config."""

    name: str
    config: TrainConfig


@dataclass(frozen=True)
class ExperimentPreset:
    """A seed question as runs: ``base`` overrides shared by all, one dict of overrides per run."""

    id: str
    title: str
    question: str
    runs: tuple[dict[str, Any], ...]
    base: dict[str, Any] = field(default_factory=dict)

    def build(self) -> list[ExperimentRun]:
        return build_runs(self.runs, self.base)


EXPERIMENT_PRESETS: dict[str, ExperimentPreset] = {p.id: p for p in (
    ExperimentPreset(
        "positions", "Positions: learned vs sinusoidal vs rotary vs none",
        "Reversal needs to know where each token sits. Which position encodings let the model learn it, and what "
        "happens with none?",
        tuple({"positional": k} for k in ("learned", "sinusoidal", "rotary", "none")), {"steps": 300}),
    ExperimentPreset(
        "causal-vs-bidirectional", "Causal vs bidirectional attention",
        "Does the causal mask change the heads (the report says causal masking cuts a head's entropy by 37.9 %), "
        "and what does a model trained without it do when it has to generate?",
        ({"causal": True}, {"causal": False}), {"steps": 200}),
    ExperimentPreset(
        "heads-1-vs-4", "One head vs four (same d_model)",
        "Same width, same parameter count: does splitting d_model = 32 into four heads of 8 learn faster than one "
        "head of 32?", ({"num_heads": 1}, {"num_heads": 4}), {"steps": 200}),
    ExperimentPreset(
        "dropout", "Attention dropout 0 vs 0.1 vs 0.3",
        "Dropping attention weights while training (as the report does): does it slow learning or blur the heads?",
        tuple({"attention_dropout": p} for p in (0.0, 0.1, 0.3)), {"steps": 300}),
    ExperimentPreset(
        "tasks", "Tasks: reversal vs copy vs sort vs induction",
        "Four tasks, each with its default recipe: which is hardest, and does each grow the head its ideal "
        "pattern describes?", tuple({"name": t, "task": t, **TASK_RECIPES[t]} for t in TASK_NAMES)),
)}
EXPERIMENT_NAMES: tuple[str, ...] = tuple(EXPERIMENT_PRESETS)

_FIELDS = {f.name for f in fields(TrainConfig)}
_NAME_ORDER = ("task", "positional", "causal", "num_heads", "num_layers", "d_model", "attention_dropout", "lr",
               "steps", "seed")


def build_runs(runs: Sequence[dict[str, Any]], base: dict[str, Any] | None = None) -> list[ExperimentRun]:
    """Runs from per-run overrides (plus shared ``base``); each config validated; names from the options that
    differ between runs. Raises ValueError with the run and the reason."""
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise ValueError(f"an experiment has {MIN_RUNS}-{MAX_RUNS} runs, got {len(runs)}")
    base = dict(base or {})
    configs = []
    for i, overrides in enumerate(runs, 1):
        if not isinstance(overrides, dict):
            raise ValueError(f"run {i}: expected an object of options, got {type(overrides).__name__}")
        merged = {**base, **overrides}
        name = merged.pop("name", None)
        unknown = sorted(set(merged) - _FIELDS)
        if unknown:
            raise ValueError(f"run {i}: unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})")
        task = merged.get("task", "reversal")
        recipe = TASK_RECIPES.get(task, {}) if isinstance(task, str) else {}
        try:
            config = TrainConfig(**{**recipe, **merged}).validate()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"run {i}: {exc}") from None
        configs.append((name, config))
    diff = differing_options([c for _, c in configs])
    names = [str(n) if n else run_label(c, diff) for n, c in configs]
    if len(set(names)) != len(names):
        names = [f"{i}: {n}" for i, n in enumerate(names, 1)]
    return [ExperimentRun(n, c) for n, (_, c) in zip(names, configs, strict=True)]


def differing_options(configs: Sequence[TrainConfig]) -> list[str]:
    """The config fields whose values are not the same in every run (the legend shows these)."""
    if not configs:
        return []
    first = configs[0].to_dict()
    names = [k for k in first if any(c.to_dict()[k] != first[k] for c in configs[1:])]
    return sorted(names, key=lambda k: (_NAME_ORDER.index(k) if k in _NAME_ORDER else len(_NAME_ORDER), k))


def format_option(value: Any) -> str:
    """An option's value as a legend, a table cell and a run name show it: yes/no, 0.1, 4, rotary."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def run_label(config: TrainConfig, options: Sequence[str]) -> str:
    """``causal=no · num_heads=4``: the options that tell a run apart ("run" when none differs)."""
    label = " · ".join(f"{k}={format_option(getattr(config, k))}" for k in options)
    return label or "run"


def load_runs_file(path: str | Path) -> list[ExperimentRun]:
    """Runs from a JSON file: ``{"base": {...}, "runs": [{...}, ...]}`` or just the list of runs. Each run is an
    object of ``TrainConfig`` options (and an optional ``name``). Raises ValueError naming the file and reason."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{p}: cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not JSON ({exc})") from None
    if isinstance(data, list):
        data = {"runs": data}
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise ValueError(f'{p}: expected {{"runs": [{{option: value, ...}}, ...]}} (and optionally "base")')
    base = data.get("base", {})
    if not isinstance(base, dict):
        raise ValueError(f"{p}: \"base\" must be an object of options")
    try:
        return build_runs(data["runs"], base)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None


def first_step_reaching(history: Sequence[TrainingReport], target: float | None = None) -> int | None:
    """The first evaluated step whose held-out greedy exact-sequence accuracy is >= ``target`` (default
    ``evaluation.TARGET_ACCURACY``, 99 %; None if none)."""
    if target is None:
        from .evaluation import TARGET_ACCURACY

        target = TARGET_ACCURACY
    return next((r.step for r in history if r.evaluated and r.sequence_accuracy >= target), None)


def _last_evaluated(history: Sequence[TrainingReport]) -> TrainingReport:
    return next(r for r in reversed(history) if r.evaluated)


def summary_row(run: ExperimentRun, history: Sequence[TrainingReport], exact: bool = False) -> dict[str, Any]:
    """The final table's row of one run (JSON-ready), its figures rounded as files show them (``rounded``).
    ``exact=True`` keeps them unrounded: a view that shows fewer decimals must round the exact value once (0.565003
    rounded to 0.565 first would then show as 0.56)."""
    last = _last_evaluated(history)
    cfg = run.config
    entropy = last.head_entropy
    scores = last.head_task_scores
    row = {
        "run": run.name, "task": cfg.task, "positional": cfg.positional, "causal": cfg.causal,
        "num_heads": cfg.num_heads, "num_layers": cfg.num_layers, "attention_dropout": cfg.attention_dropout,
        "steps": last.step, "steps_to_99": first_step_reaching(history),
        "sequence_accuracy": float(last.sequence_accuracy), "token_accuracy": float(last.reversal_accuracy),
        "test_loss": float(last.test_loss),
        "mean_head_entropy": None if entropy is None else float(np.mean(entropy)),
        "best_task_score": None if scores is None else float(np.max(scores)),
        "seconds": float(last.seconds), "wall_seconds": float(last.wall_seconds),
    }
    return row if exact else {k: rounded(k, v) for k, v in row.items()}


def rounded(column: str, value: Any) -> Any:
    """A summary figure as the CSV and the CLI's JSON give it: 4 decimals, seconds 3; anything else as it is."""
    if isinstance(value, float):
        return round(value, 3 if column.endswith("seconds") else 4)
    return value


SUMMARY_COLUMNS = ("run", "task", "positional", "causal", "num_heads", "num_layers", "attention_dropout", "steps",
                   "steps_to_99", "sequence_accuracy", "token_accuracy", "test_loss", "mean_head_entropy",
                   "best_task_score", "seconds", "wall_seconds")


def write_summary_csv(path: str | Path, rows: Sequence[dict[str, Any]], comments: Sequence[str] | None = None
                      ) -> None:
    """The final table as CSV, atomically written: ``#`` lines (``comments``, default: what the table is), the
    column names, then one row per run (figures to 4 decimals, seconds to 3); ``numpy.genfromtxt(path,
    comments='#', delimiter=',')`` reads the numbers (the names' row and the text columns as nan)."""
    from ..fileio import atomic_write

    if comments is None:
        comments = ["# Attention Playground: experiment summary, one row per run"]

    def write(fh: Any) -> None:
        fh.writelines(f"{line}\n" for line in comments)
        w = csv.writer(fh)
        w.writerow(SUMMARY_COLUMNS)
        for row in rows:
            w.writerow(["" if row.get(c) is None else rounded(c, row.get(c)) for c in SUMMARY_COLUMNS])

    atomic_write(path, write, text=True)


def entropy_change(before: TrainingReport, after: TrainingReport) -> float:
    """Relative change of the mean head entropy from ``before`` to ``after`` (-0.379 = cut by 37.9 %)."""
    a = float(np.mean(before.head_entropy)) if before.head_entropy is not None else math.nan
    b = float(np.mean(after.head_entropy)) if after.head_entropy is not None else math.nan
    return (b - a) / a if a else math.nan


class Experiment:
    """Trains its runs one after another (each seeded and independent), keeping every run's history."""

    def __init__(self, runs: Sequence[ExperimentRun], device: str | None = None) -> None:
        if not MIN_RUNS <= len(runs) <= MAX_RUNS:
            raise ValueError(f"an experiment has {MIN_RUNS}-{MAX_RUNS} runs, got {len(runs)}")
        self.runs = [ExperimentRun(r.name, replace(r.config, device=device)) if device else r for r in runs]
        self.trainers: list[ReversalTrainer | None] = [None] * len(self.runs)
        self.current = 0

    @property
    def total_steps(self) -> int:
        return sum(r.config.total_steps for r in self.runs)

    @property
    def steps_done(self) -> int:
        return sum(t.step_count for t in self.trainers if t is not None)

    def trainer(self, index: int) -> ReversalTrainer:
        """The run's trainer (built on first use: building draws its data)."""
        from .training import ReversalTrainer

        t = self.trainers[index]
        if t is None:
            t = self.trainers[index] = ReversalTrainer(self.runs[index].config)
        return t

    def reports(self, control: TrainingControl | None = None) -> Iterator[tuple[int, TrainingReport]]:
        """``(run index, report)`` per step (each run's step-0 report first), run after run, until all are done
        or ``control`` stops it."""
        for i in range(self.current, len(self.runs)):
            self.current = i
            trainer = self.trainer(i)
            if trainer.step_count == 0:
                yield i, trainer.history[0]
            for report in trainer.reports(control):
                yield i, report
            if not trainer.finished:
                return  # stopped
        self.current = len(self.runs)

    @property
    def finished(self) -> bool:
        return all(t is not None and t.finished for t in self.trainers)

    def summary_rows(self) -> list[dict[str, Any]]:
        """One row per run trained so far (see ``summary_row``)."""
        return [summary_row(r, t.history) for r, t in zip(self.runs, self.trainers, strict=True) if t is not None]
