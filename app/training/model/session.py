"""``TrainingSession``: the Training tab's evented model, without Qt. The public automation surface (``w.training``).

A session is composed of parts with one job each, and holds the state the views show:
- ``history`` (``TrainingHistory``, in ``history``: every recorded step with its parameters) and ``cursor``
  (``PlaybackCursor``, in ``cursor``: the step shown, live, scrubbed or replayed);
- ``run`` (``TrainingRun``, in ``run``): one training run at a time on the injected ``Runner``, started, steered
  and ended by the run-control methods, which are its; what the run's thread delivers becomes recorded state
  there. The generator it runs (``drive``: the core's ``ReversalTrainer.reports(TrainingControl)``) is in
  ``driver``;
- ``tools`` (``RecordedTools``, in ``recorded``): the probe, Try it and the heads switched off, each acting on the
  *shown* step's recorded parameters, never on the model that is training, and saying which step it used;
- the status and ETA texts are pure functions in ``status``; the trainer factories in ``tools`` / ``files``.
The session itself holds the state the views read (``run_state``, the settings, the trainer, its notes), the
commands on the timeline, the tools and the files, and announces every change: state changed, what derives from it
recomputed, then one event per changed thing on ``events`` and the status line if it changed
(``app.common.evented``, the one way a model announces). Constructing a session is cheap and does not import torch.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.common.evented import Evented, ModelEvents, event
from app.training.model.cursor import PlaybackCursor
from app.training.model.history import Snapshot, TrainingHistory
from app.training.model.recorded import RecordedTools
from app.training.model.run import TrainingRun
from app.training.model.status import derive_status, eta_line
from app.training.model.tools import DEFAULT_SPEED_INDEX, SPEEDS

if TYPE_CHECKING:
    from app.common.runner import Runner
    from app.training.model.results import Ablation, Head, TryIt
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.training import ReversalTrainer

__all__ = ["RUN_STATES", "TrainingEvents", "TrainingSession"]

RUN_STATES = ("empty", "building", "running", "paused", "finished", "stopped", "loaded", "error")


class TrainingEvents(ModelEvents):
    """One event per thing that changes, each emitted after the change is complete (then ``changed`` with their
    names; ``status`` carries the status line)."""

    run_state = event(str)  # RUN_STATES
    config = event(object)  # TrainConfig | None (the settings the next run uses)
    history = event()  # snapshots recorded, cleared or replaced
    snapshot = event(object)  # each new step's Snapshot, as it arrives
    shown = event(int)  # the snapshot index the views show (cursor moved, live / scrubbed / replay)
    probe = event(object)  # the probe's L input tokens (tuple) or its error
    ablation = event(object)  # Ablation at the shown step
    try_it = event(object)  # TryIt | None
    progress = event()  # progress bar / ETA text changed
    speed = event(object)  # steps per second or None
    finished = event(str)  # a run ended: "finished", "stopped", "error" (or "loaded": a loaded model waits)


class TrainingSession(Evented):
    """Set up, run, replay, probe, try and ablate the tiny transformer of any task (``config.task``: reversal,
    copy, sort, induction; see the module docstring). ``TrainingSession(config=None, runner=None)``."""

    Events = TrainingEvents
    events: TrainingEvents

    def __init__(self, config: TrainConfig | None = None, runner: Runner | None = None) -> None:
        super().__init__()
        self.history = TrainingHistory()
        self.cursor = PlaybackCursor()
        self.cursor.speed = SPEEDS[DEFAULT_SPEED_INDEX][1]
        self.run = TrainingRun(self, runner)
        self.tools = RecordedTools(self)
        self.trainer: ReversalTrainer | None = None
        self._config = config
        self.config_error = ""
        self.run_state = "empty"
        self.last_error = ""
        self.device_note = ""
        """The GPU failed during this run and training went on on the CPU ("" when it did not)."""
        self.loaded_from = ""
        self.history_note = ""
        self.goal_step: int | None = None
        self.time_to_goal: float | None = None
        self._notice: tuple[str, bool] | None = None
        self.status, self.status_is_error = self._derive_status()

    # ================================================================== the parts' state, read here
    @property
    def runner(self) -> Runner:
        return self.run.runner

    @property
    def keep_params(self) -> bool:
        """Record each step's parameters (Try it and Ablate at a past step need them); an experiment's runs do not."""
        return self.run.keep_params

    @keep_params.setter
    def keep_params(self, keep: bool) -> None:
        self.run.keep_params = keep

    @property
    def probe(self) -> tuple[int, ...] | None:
        return self.tools.probe

    @property
    def probe_error(self) -> str:
        return self.tools.probe_error

    @property
    def ablated(self) -> tuple[Head, ...]:
        return self.tools.ablated

    @property
    def ablation(self) -> Ablation | None:
        return self.tools.ablation

    @property
    def try_it(self) -> TryIt | None:
        return self.tools.try_it

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
    def is_alive(self) -> bool:
        """A run's thread exists (running or paused)."""
        return self.run.handle is not None and self.run_state in ("building", "running", "paused")

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
        cfg, latest = self.model_config, self.history.latest
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
        return eta_line(latest.step if latest is not None else None, self.total_steps, self.run.durations,
                        self.speed, running=self.is_running, goal_step=self.goal_step, time_to_goal=self.time_to_goal)

    # ================================================================== settings
    def set_config(self, config: TrainConfig | None, error: str = "") -> None:
        """The settings for the next run (None + ``error`` while they are impossible)."""
        if config == self._config and error == self.config_error:
            return
        self._config, self.config_error = config, error
        self._changed("config")

    def set_speed(self, steps_per_second: float | None) -> None:
        """One of ``SPEEDS``' values (None = as fast as possible); applies to the run and to replay."""
        if steps_per_second not in [s for _, s in SPEEDS]:
            raise ValueError(f"speed must be one of {[s for _, s in SPEEDS]}")
        self.cursor.set_speed(steps_per_second, time.perf_counter(), self.history)
        if self.run.control is not None:
            self.run.control.set_speed(steps_per_second)
        self._changed("speed")

    # ================================================================== run control (the run's)
    def start_needs_choice(self) -> bool:
        """Whether Start would have to continue a finished run or discard recorded steps (a run stopped or paused
        after the settings changed): ask first (``start(new_run=False)`` continues, ``start(new_run=True)``
        starts a new model)."""
        return self.run.start_needs_choice()

    def start(self, new_run: bool | None = None) -> bool:
        """Train: resume a paused run, continue an unfinished one with unchanged settings, else build a new model.

        When that would continue a finished run or discard recorded steps (``start_needs_choice()``), say which:
        ``new_run=True`` (a fresh model from the settings) or ``False`` (= ``continue_training()``: the current
        model, with its own settings); without it nothing happens (the question is noted, False)."""
        return self.run.start(new_run)

    def continue_training(self) -> bool:
        """Train the current model further: a finished run gets one more length of its run (same unit)."""
        return self.run.continue_training()

    def pause(self) -> None:
        """No new step starts until ``resume()`` or ``step()`` (a step in flight still arrives)."""
        self.run.pause()

    def resume(self) -> None:
        self.run.resume()

    def toggle_pause(self) -> None:
        if self.is_paused:
            self.resume()
        elif self.is_running:
            self.pause()

    def step(self) -> bool:
        """Train exactly one batch, then stay paused (starting a paused run first when none is alive)."""
        return self.run.step()

    def stop(self, timeout_s: float = 10.0) -> None:
        """End training after the step in flight and wait for the thread; recorded steps stay."""
        self.run.stop(timeout_s)

    def reset(self) -> bool:
        """A fresh model from the settings (same seed = same initialisation), shown at step 0, paused."""
        return self.run.reset()

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop any run and wait for its thread (call before the window closes)."""
        self.run.shutdown(timeout_s)

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """ThreadRunner only: deliver items until no run is training (building, running, or paused with a step
        requested by ``step()`` still to arrive) or ``timeout_s`` passed; whether it got there (tests, scripts)."""
        return self.run.wait_idle(timeout_s)

    # ================================================================== timeline
    def seek(self, index: int) -> None:
        """Show recorded snapshot ``index`` (0 = the untrained model); stops following the live run."""
        self.cursor.set_length(len(self.history))
        self.cursor.seek(index)
        self._shown_changed()

    def go_live(self) -> None:
        """Follow the newest step."""
        self.cursor.go_live()
        self.cursor.set_length(len(self.history))
        self._shown_changed()

    def replay(self) -> None:
        """Play the recorded steps from the shown one at the chosen speed (``tick`` advances it); every head is
        switched back on first (a replay shows the run as it was)."""
        self.tools.clear_ablation()
        self.cursor.set_length(len(self.history))
        self.cursor.play(time.perf_counter(), self.history)
        self._shown_changed()

    def tick(self, now: float | None = None) -> None:
        """Advance a replay to ``now``; refresh Try it for the live step at most twice a second while training."""
        now = time.perf_counter() if now is None else now
        before = (self.cursor.index, self.cursor.playing)
        self.cursor.set_length(len(self.history))
        self.cursor.tick(now, self.history)
        if (self.cursor.index, self.cursor.playing) != before:
            self._shown_changed()
        if self.tools.live_try_due(now, self.is_running, self.shown_step):
            self._changed("try_it")

    def _shown_changed(self) -> None:
        if not self.is_running:
            self.tools.follow_shown()
        self._changed("shown", "ablation", "try_it")

    # ================================================================== probe, try it, ablation
    def set_probe(self, text: str) -> bool:
        """Use these L tokens as the probe (the grid's maps); a refused text sets ``probe_error``."""
        if self.model_config is None:
            return False
        tokens = self.tools.parse_probe(text, building=self.run_state == "building")
        if tokens is None:
            self._changed("probe")
            return False
        trainer, control = self.trainer, self.run.control
        if trainer is not None:
            if control is not None and self.is_alive:
                control.submit(lambda t: t.set_probe(tokens))
            else:
                trainer.set_probe(tokens)
            latest = self.history.latest
            if latest is not None and latest.params is not None and not self.is_running:
                from app.training.model.tools import reprobed

                self.history.replace_latest(reprobed(trainer.config, tokens, latest))
        self._changed("probe", "history", "shown")
        return True

    def try_sequence(self, text: str) -> TryIt:
        """The model's greedy answer (its task's) to the typed tokens at the shown step; a refused text is an error
        result."""
        result = self.tools.try_sequence(text, has_model=self.trainer is not None)
        self._changed("try_it")
        return result

    def toggle_head(self, layer: int, head: int) -> bool:
        """Switch one head off (or back on) in the shown step's model and measure the effect."""
        refused = ("To switch heads off, pause or stop training first." if self.is_running
                   else self.tools.toggle_head(layer, head))
        if refused:
            self._note(refused, error=True)
            return False
        self._changed("ablation", "try_it")
        return True

    def restore_heads(self) -> None:
        """Switch every head back on."""
        self.tools.restore_heads()
        self._changed("ablation", "try_it")

    # ================================================================== files
    def save(self, path: str | Path) -> Path:
        """Save the latest step's model (``NAME.safetensors`` + ``NAME.json``) with its recorded history and
        snapshots (``NAME.history.safetensors``, ``NAME.history.csv``)."""
        from app.training.model.files import save_session_files

        cfg, latest = self.model_config, self.history.latest
        if cfg is None or latest is None or latest.params is None:
            raise RuntimeError("no model yet: Start, Step or Load first")
        path = save_session_files(path, cfg, self.history)
        self._note(f"Saved {path}")
        return path

    def load(self, path: str | Path) -> None:
        """Load a model saved by this app; raises ``CheckpointError`` (nothing changes) for a bad file."""
        from app.training.model.files import load_session_files

        factory, note = load_session_files(path)  # validates now; builds the trainer on the run's thread
        self.loaded_from, self.history_note = Path(path).name, note
        self.run.launch(factory, paused=True, loading=True)

    # ================================================================== announcing changes
    def _set_run_state(self, state: str, *names: str) -> None:
        self.run_state = state
        self._changed("run_state", *names)

    def report_device_problem(self, text: str) -> None:
        """A device could not be used (the warm-up failed, say) and work goes on on the CPU: the status line says
        so until the next run starts."""
        self.device_note = text
        self._emit_status()

    def _note(self, text: str, error: bool = False) -> None:
        """A one-off message (an action's outcome or refusal) until the next change."""
        self._notice = (text, error)
        self._emit_status()

    def _changed(self, *names: str, **payloads: Any) -> None:
        """Announce each changed thing (in order, once each; ``shown`` carries the shown index), then the status
        line if it changed; a one-off note ends here."""
        self._notice = None
        if "shown" in names:
            payloads["shown"] = self.shown_index
        self._announce(*names, **payloads)
        self._emit_status()

    def _emit_status(self) -> None:
        status = self._derive_status()
        if status != (self.status, self.status_is_error):
            self.status, self.status_is_error = status
            self._announce("status")

    def _derive_status(self) -> tuple[str, bool]:
        return derive_status(self.run_state, self.history.latest, notice=self._notice,
                             ablation=self.ablation if self.ablated else None, last_error=self.last_error,
                             loaded_from=self.loaded_from, history_note=self.history_note, speed=self.speed,
                             started=self.run.start_time is not None, device_note=self.device_note,
                             config=self.model_config)
