"""The read side of ``TrainingSession``: the state it holds, what derives from that state, and how a change is
announced on ``events``.

``TrainingSession`` (``session``) adds the commands (run control, timeline, probe, try it, ablation,
files) and the run's callbacks. The split keeps each half readable on its own: here, what a session *is* and the
one path by which every change reaches the views (``_changed``: emit one signal per changed thing, then the
status line); there, what a session *does*. No Qt; constructing a session does not import torch.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from psygnal import Signal, SignalGroup

from app.common.runner import RunHandle, Runner, ThreadRunner
from app.training.model.history import PlaybackCursor, Snapshot, TrainingHistory
from app.training.model.results import Ablation, Head, TryIt, ablation_at, run_try_it
from app.training.model.status import derive_status, eta_line
from app.training.model.tools import DEFAULT_SPEED_INDEX, SPEEDS

if TYPE_CHECKING:
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.control import TrainingControl
    from attention_core.tiny.training import ReversalTrainer


class TrainingEvents(SignalGroup):
    """One signal per thing that changes; each is emitted after the change is complete."""

    run_state = Signal(str)  # RUN_STATES
    config = Signal(object)  # TrainConfig | None (the settings the next run uses)
    history = Signal()  # snapshots recorded, cleared or replaced
    snapshot = Signal(object)  # each new step's Snapshot, as it arrives
    shown = Signal(int)  # the snapshot index the views show (cursor moved, live / scrubbed / replay)
    probe = Signal(object)  # the probe's L input tokens (tuple) or its error
    ablation = Signal(object)  # Ablation at the shown step
    try_it = Signal(object)  # TryIt | None
    progress = Signal()  # progress bar / ETA text changed
    speed = Signal(object)  # steps per second or None
    status = Signal(str)  # the status line
    finished = Signal(str)  # a run ended: "finished", "stopped", "error" (or "loaded": a loaded model waits)


class TrainingSessionBase:
    """State, derived values and change announcements of a training session (see the module docstring)."""

    def __init__(self, config: TrainConfig | None = None, runner: Runner | None = None) -> None:
        self.events = TrainingEvents()
        self.runner: Runner = runner or ThreadRunner()
        self.keep_params = True
        """Record each step's parameters (Try it and Ablate at a past step rebuild the model from them); an
        experiment's runs do not (``runner.drive``)."""
        self.history = TrainingHistory()
        self.cursor = PlaybackCursor()
        self.cursor.speed = SPEEDS[DEFAULT_SPEED_INDEX][1]
        self.trainer: ReversalTrainer | None = None
        self._config = config
        self.config_error = ""
        self.run_state = "empty"
        self.last_error = ""
        self.device_note = ""
        """The GPU failed during this run and training went on on the CPU ("" when it did not)."""
        self.loaded_from = ""
        self.history_note = ""
        self.probe: tuple[int, ...] | None = None
        self.probe_error = ""
        self.ablated: tuple[Head, ...] = ()
        self.ablation: Ablation | None = None
        self.try_it: TryIt | None = None
        self.goal_step: int | None = None
        self.time_to_goal: float | None = None
        self._control: TrainingControl | None = None
        self._handle: RunHandle | None = None
        self._ended: RunHandle | None = None  # the last run's handle once its end was delivered (``shutdown``)
        self._run_id = 0
        self._start_time: float | None = None
        self._durations: deque[float] = deque(maxlen=12)
        self._notice: tuple[str, bool] | None = None
        self._try_at = 0.0
        self._building_paused = False
        self._steps_due = 0  # single steps requested and not yet arrived (``wait_idle`` waits for them)
        self._status: tuple[str, bool] = self._derive_status()

    # ================================================================== reading
    @property
    def config(self) -> TrainConfig | None:
        """The validated settings the next run uses (None while the form holds an impossible combination)."""
        return self._config

    @property
    def speed(self) -> float | None:
        """Training and replay speed in steps per second (None = as fast as possible)."""
        return self.cursor.speed

    @property
    def status(self) -> str:
        """The status line, derived from the current state on every change."""
        return self._status[0]

    @property
    def status_is_error(self) -> bool:
        return self._status[1]

    @property
    def is_alive(self) -> bool:
        """A run's thread exists (running or paused)."""
        return self._handle is not None and self.run_state in ("building", "running", "paused")

    @property
    def is_running(self) -> bool:
        return self.is_alive and self.run_state in ("building", "running")

    @property
    def is_paused(self) -> bool:
        return self.is_alive and self.run_state == "paused"

    @property
    def shown_index(self) -> int:
        return min(self.cursor.index, max(0, len(self.history) - 1))

    @property
    def shown_snapshot(self) -> Snapshot | None:
        """The recorded step the grid shows (what Try it, Ablate and Compare act on)."""
        return self.history[self.shown_index] if len(self.history) else None

    @property
    def shown_step(self) -> int | None:
        snap = self.shown_snapshot
        return snap.step if snap is not None else None

    @property
    def model_config(self) -> TrainConfig | None:
        """The config of the model on screen (the trainer's), else the settings'."""
        return self.trainer.config if self.trainer is not None else self._config

    @property
    def total_steps(self) -> int:
        cfg = self.model_config
        latest = self.history.latest
        return max(cfg.total_steps if cfg is not None else 0, latest.step if latest is not None else 0)

    @property
    def progress(self) -> tuple[int, int, str]:
        """(value, maximum, format) for the progress bar."""
        latest = self.history.latest
        if latest is None:
            return 0, 1, "not started"
        return latest.step, max(1, self.total_steps), "step %v / %m"

    @property
    def eta_text(self) -> str:
        latest = self.history.latest
        return eta_line(latest.step if latest is not None else None, self.total_steps, self._durations, self.speed,
                        running=self.is_running, goal_step=self.goal_step, time_to_goal=self.time_to_goal)

    # ================================================================== derived state
    def _same_config(self, shape_only: bool = False) -> bool:
        """Whether the settings are the trainer's (``shape_only``: up to the run's length)."""
        t = self.trainer
        if t is None or self._config is None:
            return False
        if shape_only:
            from dataclasses import replace

            return replace(self._config, steps=None, epochs=1) == replace(t.config, steps=None, epochs=1)
        return self._config == t.config

    def _derive_at_shown(self) -> None:
        """Ablation and Try it follow the shown step."""
        self._recompute_ablation()
        self._refresh_try_it()

    def _recompute_ablation(self) -> None:
        cfg = self.model_config
        if cfg is None or not len(self.history):
            self.ablation = None
            return
        self.ablation = ablation_at(self.history, self.shown_index, cfg, self.ablated)

    def _refresh_try_it(self) -> None:
        t, cfg, snap = self.try_it, self.model_config, self.shown_snapshot
        if t is None or t.error or cfg is None or snap is None:
            return
        tokens = list(t.result.inputs) if t.result is not None else []
        self.try_it = run_try_it(t.text, tokens, cfg, snap, self.ablated) if tokens else t

    def _clear_ablation(self) -> None:
        self.ablated = ()
        self._recompute_ablation()

    # ================================================================== announcing changes
    def _set_run_state(self, state: str, *names: str) -> None:
        self.run_state = state
        self._changed("run_state", *names)

    def _shown_changed(self) -> None:
        if not self.is_running:
            self._derive_at_shown()
        self._changed("shown", "ablation", "try_it")

    def report_device_problem(self, text: str) -> None:
        """A device could not be used (the warm-up failed, say) and work goes on on the CPU: the status line says
        so until the next run starts."""
        self.device_note = text
        self._emit_status()

    def _note(self, text: str, error: bool = False) -> None:
        """A one-off message (an action's outcome or refusal) until the next change."""
        self._notice = (text, error)
        self._emit_status()

    def _changed(self, *names: str, snapshot: Snapshot | None = None) -> None:
        """Emit one event per changed thing (in order, once each), then the status line if it changed."""
        self._notice = None
        for name in dict.fromkeys(names):
            if name == "snapshot":
                if snapshot is not None:
                    self.events.snapshot.emit(snapshot)
            elif name == "shown":
                self.events.shown.emit(self.shown_index)
            elif name in ("history", "progress"):
                getattr(self.events, name).emit()
            else:
                getattr(self.events, name).emit(self._payload(name))
        self._emit_status()

    def _payload(self, name: str) -> object:
        return {"run_state": self.run_state, "config": self._config, "probe": self.probe,
                "ablation": self.ablation, "try_it": self.try_it, "speed": self.speed}[name]

    def _emit_status(self) -> None:
        status = self._derive_status()
        if status != self._status:
            self._status = status
            self.events.status.emit(status[0])

    def _derive_status(self) -> tuple[str, bool]:
        return derive_status(self.run_state, self.history.latest, notice=self._notice,
                             ablation=self.ablation if self.ablated else None, last_error=self.last_error,
                             loaded_from=self.loaded_from, history_note=self.history_note, speed=self.speed,
                             started=self._start_time is not None, device_note=self.device_note,
                             config=self.model_config)
