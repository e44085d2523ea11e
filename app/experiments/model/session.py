"""``ExperimentSession``: the Experiments tab's evented model, without Qt.

An experiment is 2-6 runs (``attention_core.tiny.experiments``) that differ in one or more options, each trained by its
own ``TrainingSession`` (the Training tab's model, with the same injected ``Runner``: the window's ``QtRunner``, or a
``ThreadRunner`` in tests and scripts), one after another: when one finishes the next starts; ``cancel`` stops the
current one and starts none of the rest. The views subscribe to the sessions' own events (curves) and to this
model's (``events``): the preset, the runs table (one row a run, one column an option, each edit validated by
``build_runs`` and refused with its reason, the old value kept), one progress line over all runs, the final table
(``summary_row`` of each finished run's recorded history), the "What to see" lines (``findings``, from
measured results only), and two runs' heads compared at one step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from app.common.evented import Evented, ModelEvents, event
from app.common.runner import Runner, ThreadRunner
from app.experiments.model.compare import CompareState
from app.experiments.model.findings import causal_claim, findings
from app.training.model.session import TrainingSession
from app.training.model.tools import format_eta
from attention_core.tiny.experiments import (
    EXPERIMENT_PRESETS,
    MAX_RUNS,
    MIN_RUNS,
    ExperimentRun,
    build_runs,
    format_option,
    summary_row,
)

COLUMNS = ("task", "positional", "causal", "num_heads", "num_layers", "attention_dropout", "lr", "steps", "seed")
"""The options the runs table shows, one column each (every other option is the ``TrainConfig`` default)."""
INT_COLUMNS = ("num_heads", "num_layers", "steps", "seed")
FLOAT_COLUMNS = ("attention_dropout", "lr")
EXPERIMENT_STATES = ("idle", "running", "finished", "cancelled", "error")
STATUS_EVERY_S = 0.1
"""How often a run's progress rewrites the status line (each step would repaint the status bar hundreds of times a
second); the start and end of each run always do."""
DEFAULT_PRESET = "causal-vs-bidirectional"
_TRUE, _FALSE = ("yes", "true", "1", "on", "causal"), ("no", "false", "0", "off", "bidirectional")


class ExperimentEvents(ModelEvents):
    """One signal per thing that changes, each emitted after the change."""

    preset = event(object)  # preset id, or None once the runs were edited into a custom experiment
    runs = event()  # the runs table (rows, names) changed
    table_error = event(str)  # why the last edit was refused ("" once an edit is accepted)
    sessions = event()  # a new experiment started: one new TrainingSession per run (views re-subscribe)
    run_state = event(str)  # EXPERIMENT_STATES
    progress = event()  # steps done / total / the progress text
    summary = event()  # the final table's rows
    findings = event(object)  # list[str]: the "What to see" lines
    compare = event()  # the two runs compared or the step they are compared at


def parse_cell(column: str, value: Any) -> Any:
    """A typed cell value (``"4"`` -> 4, ``"yes"`` -> True); ValueError with a readable reason."""
    text = str(value).strip()
    if column == "causal":
        if isinstance(value, bool):
            return value
        if text.lower() in _TRUE or text.lower() in _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"causal must be yes or no (got {text!r})")
    if column in INT_COLUMNS:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{column} must be a whole number (got {text!r})") from None
    if column in FLOAT_COLUMNS:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{column} must be a number (got {text!r})") from None
    if column in COLUMNS:
        return text
    raise ValueError(f"unknown option {column!r}")


def format_cell(value: Any) -> str:
    """A runs-table cell: the core's way of writing an option (``experiments.format_option``)."""
    return format_option(value)


class ExperimentSession(Evented):
    """State and commands of the Experiments tab (see the module docstring)."""

    events: ExperimentEvents

    def __init__(self, runner: Runner | None = None, preset: str = DEFAULT_PRESET) -> None:
        super().__init__()
        self.runner: Runner = runner or ThreadRunner()
        self.preset_id: str | None = None
        self.rows: list[dict[str, Any]] = []
        self.names: list[str | None] = []  # a preset's own run names (the tasks preset names its runs by task)
        self.runs: list[ExperimentRun] = []
        self.table_error = ""
        self.sessions: list[TrainingSession] = []
        self.trained_runs: list[ExperimentRun] = []  # the runs of the experiment the sessions belong to
        self.trained_title = ""
        self.current = -1
        self.run_state = "idle"
        self.last_error = ""
        self.summary: list[dict[str, Any]] = []  # exact figures (``summary_row(exact=True)``): views round once
        self.findings: list[str] = []
        self.compare = CompareState(self)
        self._started: float | None = None
        self._status_at = 0.0
        self._cancelled = False
        self.set_preset(preset)

    # ================================================================== the runs
    @property
    def preset(self) -> Any:
        return EXPERIMENT_PRESETS.get(self.preset_id) if self.preset_id else None

    @property
    def question(self) -> str:
        p = self.preset
        return p.question if p is not None else "Your own runs: what differs between them, and what does it change?"

    def set_preset(self, preset_id: str, steps: int | None = None) -> None:
        """The runs of a seed question (``steps`` overrides every run's length: short runs for a quick look)."""
        if self.is_running:
            raise RuntimeError("an experiment is running: Cancel it first")
        preset = EXPERIMENT_PRESETS.get(preset_id)
        if preset is None:
            raise ValueError(f"unknown preset {preset_id!r}: choose one of {', '.join(EXPERIMENT_PRESETS)}")
        overrides = [{**r, "steps": steps} for r in preset.runs] if steps is not None else list(preset.runs)
        runs = build_runs(overrides, preset.base)
        self.preset_id = preset_id
        self.names = [r.get("name") for r in preset.runs]
        self._set_runs([{c: _column_value(r, c) for c in COLUMNS} for r in runs], runs)
        self._announce(preset=preset_id)

    def set_runs(self, rows: Sequence[dict[str, Any]]) -> None:
        """Custom runs: one dict of ``COLUMNS`` options per run (others take the defaults). ValueError when refused."""
        if self.is_running:
            raise RuntimeError("an experiment is running: Cancel it first")
        rows = [dict(r) for r in rows]
        runs = build_runs(rows)
        self.preset_id, self.names = None, [None] * len(rows)
        self._set_runs([{c: _column_value(r, c) for c in COLUMNS} for r in runs], runs)
        self._announce(preset=None)

    def set_cell(self, row: int, column: str, value: Any) -> bool:
        """Edit one option of one run. Refused (False, ``table_error`` says why, the old value kept) when the value
        does not parse or the run it would make is impossible (``build_runs``' reason)."""
        if self.is_running:
            return self._refuse("an experiment is running: Cancel it first")
        if not 0 <= row < len(self.rows) or column not in COLUMNS:
            return self._refuse(f"no cell ({row + 1}, {column})")
        try:
            parsed = parse_cell(column, value)
        except ValueError as exc:
            return self._refuse(f"run {row + 1}: {exc}")
        if parsed == self.rows[row][column]:
            return self._accept()
        rows = [dict(r) for r in self.rows]
        rows[row][column] = parsed
        try:
            runs = self._build(rows, self.names)
        except ValueError as exc:
            return self._refuse(str(exc))
        self._set_runs(rows, runs)
        return self._accept()

    def add_run(self) -> bool:
        """One more run: a copy of the last with the next seed."""
        if self.is_running or len(self.rows) >= MAX_RUNS:
            return self._refuse(f"an experiment has at most {MAX_RUNS} runs" if not self.is_running else
                                "an experiment is running: Cancel it first")
        row = dict(self.rows[-1])
        row["seed"] = max(int(r["seed"]) for r in self.rows) + 1
        rows, names = [*self.rows, row], [*self.names, None]
        self.names = names
        self._set_runs(rows, self._build(rows, names))
        return self._accept()

    def remove_run(self, index: int) -> bool:
        if self.is_running or len(self.rows) <= MIN_RUNS or not 0 <= index < len(self.rows):
            return self._refuse(f"an experiment has at least {MIN_RUNS} runs" if not self.is_running else
                                "an experiment is running: Cancel it first")
        rows = self.rows[:index] + self.rows[index + 1:]
        self.names = self.names[:index] + self.names[index + 1:]
        self._set_runs(rows, self._build(rows, self.names))
        return self._accept()

    def _build(self, rows: list[dict[str, Any]], names: Sequence[str | None]) -> list[ExperimentRun]:
        return build_runs([{**({"name": n} if n else {}), **r} for r, n in zip(rows, names, strict=True)])

    def _set_runs(self, rows: list[dict[str, Any]], runs: list[ExperimentRun]) -> None:
        self.rows, self.runs = rows, runs
        self._accept()  # valid runs now: an earlier refusal no longer describes the table
        self._announce("runs")
        self._set_status(self._idle_status())

    def _refuse(self, text: str) -> bool:
        self.table_error = text
        self._announce("table_error")
        return False

    def _accept(self) -> bool:
        if self.table_error:
            self.table_error = ""
            self._announce("table_error")
        return True

    # ================================================================== running
    @property
    def is_running(self) -> bool:
        return self.run_state == "running"

    def start(self) -> bool:
        """Train every run, one after another, each in a new ``TrainingSession`` (False while one runs)."""
        if self.is_running:
            return False
        self.trained_runs = list(self.runs)
        self.trained_title = self.preset.title if self.preset is not None else "custom runs"
        self.sessions = []
        for run in self.trained_runs:
            s = TrainingSession(config=run.config, runner=self.runner)
            s.set_speed(None)  # as fast as the machine allows
            s.keep_params = False  # no Try it / Ablate here: ~110 kB a step saved (the tasks preset: ~180 MB)
            s.events.finished.connect(lambda state, s=s: self._on_run_end(s, state))
            s.events.progress.connect(self._on_progress)
            self.sessions.append(s)
        self.summary, self.findings, self.last_error = [], [], ""
        self._accept()  # the runs trained are valid: a refusal from before no longer applies
        self._cancelled, self._started, self.current = False, time.perf_counter(), -1
        self._status_at = self._started
        self.compare.reset()
        self._announce("sessions", "summary", "findings")
        self._set_state("running")
        self._start_next()
        return True

    def cancel(self, timeout_s: float = 10.0) -> None:
        """Stop the run in flight (its recorded steps stay) and start none of the rest."""
        if not self.is_running:
            return
        self._cancelled = True
        if 0 <= self.current < len(self.sessions):
            self.sessions[self.current].stop(timeout_s)  # delivers its end: _on_run_end
        if self.is_running:  # it had not started its thread yet
            self._finish("cancelled")

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Cancel, and wait for every run's thread (the window's close)."""
        self._cancelled = True
        for s in self.sessions:
            s.shutdown(timeout_s)
        if self.is_running:
            self._finish("cancelled")

    def wait_idle(self, timeout_s: float = 120.0) -> bool:
        """ThreadRunner only: deliver items until the experiment is no longer running (tests, scripts)."""
        deadline = time.perf_counter() + timeout_s
        runner = self.runner
        while self.is_running:
            if not isinstance(runner, ThreadRunner) or time.perf_counter() > deadline:
                return False
            runner.pump(0.05)
        return True

    def _start_next(self) -> None:
        self.current += 1
        if self.current >= len(self.sessions):
            self._finish("finished")
            return
        self.sessions[self.current].start()
        self._announce("progress")
        self._set_status(self.progress_text)

    def _on_run_end(self, session: TrainingSession, state: str) -> None:
        if not self.is_running or self.current < 0 or session is not self.sessions[self.current]:
            return
        if state == "finished":
            self.summary.append(summary_row(self.trained_runs[self.current], session.history.reports(), exact=True))
            self._announce("summary")
            self.compare.follow()
            self._update_findings()
            if not self._cancelled:
                self._start_next()
                return
        if state == "error":
            self.last_error = session.last_error.strip().splitlines()[-1] if session.last_error else "error"
            self._finish("error")
        else:
            self._finish("cancelled" if state != "finished" or self._cancelled else "finished")

    def _finish(self, state: str) -> None:
        self._update_findings()
        self.compare.follow()
        self._set_state(state)
        self._announce("progress")
        self._set_status(self._idle_status())

    def _on_progress(self) -> None:
        self.compare.follow()
        now = time.perf_counter()
        if now - self._status_at >= STATUS_EVERY_S:  # the status line follows the progress bar
            self._status_at = now
            self._set_status(self.progress_text)
        self._announce("progress")

    def _set_state(self, state: str) -> None:
        self.run_state = state
        self._announce("run_state")

    def _update_findings(self) -> None:
        self.findings = findings(self.trained_runs, self.histories())
        self._announce(findings=list(self.findings))

    # ================================================================== reading
    def histories(self) -> list[list[Any]]:
        """Each trained run's recorded reports (empty for a run not started)."""
        return [s.history.reports() for s in self.sessions]

    @property
    def steps_done(self) -> int:
        return sum(s.history.latest.step for s in self.sessions if s.history.latest is not None)

    @property
    def total_steps(self) -> int:
        return sum(r.config.total_steps for r in (self.trained_runs if self.sessions else self.runs))

    @property
    def fraction(self) -> float:
        total = self.total_steps
        return min(1.0, self.steps_done / total) if total else 0.0

    @property
    def eta_seconds(self) -> float | None:
        done = self.steps_done
        if not self.is_running or self._started is None or done == 0:
            return None
        return (time.perf_counter() - self._started) / done * (self.total_steps - done)

    @property
    def progress_text(self) -> str:
        """What the progress bar says: the run in flight, steps done over all runs, and the time left."""
        done, total = self.steps_done, self.total_steps
        if self.is_running and 0 <= self.current < len(self.trained_runs):
            run = self.trained_runs[self.current]
            return (f"run {self.current + 1} of {len(self.trained_runs)} ({run.name}) · {done} / {total} steps · "
                    f"{format_eta(self.eta_seconds)}")
        if not self.sessions:
            return f"{len(self.runs)} runs, {total} steps in all"
        word = {"finished": "done", "cancelled": "cancelled", "error": "failed"}.get(self.run_state, self.run_state)
        return f"{word}: {done} / {total} steps"

    @property
    def results_are_stale(self) -> bool:
        """The runs set up now are not the ones the results (curves, table, findings) were measured on."""
        return bool(self.sessions) and [r.config for r in self.trained_runs] != [r.config for r in self.runs]

    @property
    def causal_line(self) -> str | None:
        return causal_claim(self.trained_runs, self.histories()) if self.sessions else None

    def _idle_status(self) -> str:
        if self.run_state == "error":
            return f"Experiments: a run failed ({self.last_error})"
        if self.run_state in ("finished", "cancelled"):
            return f"Experiments: {self.progress_text}"
        return f"Experiments: {len(self.runs)} runs ready; Run trains them one after another"

    def _set_status(self, text: str) -> None:
        """Announced only when it changes: the progress rewrites it often, mostly with the same text."""
        if text != self.status:
            super()._set_status(text)


def _column_value(run: ExperimentRun, column: str) -> Any:
    cfg = run.config
    return cfg.total_steps if column == "steps" else getattr(cfg, column)
