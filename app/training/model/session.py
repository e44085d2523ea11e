"""``TrainingSession``: the Training tab's evented model, without Qt. The public automation surface (``w.training``).

It holds the run (state, config, trainer), the recorded history with each step's parameters, the playback
cursor (the step shown), the probe, the heads switched off, the Try it result and the status line. Every mutator
changes the state, recomputes what derives from it (status, ablation and try-it at the shown step, progress) and
then emits one event per changed thing on ``session.events`` (psygnal). Try it and Ablate always act on a model
rebuilt from the *shown* step's parameters, never on the model that is training, and say which step they used.

Training runs through an injected ``Runner`` (``runner``): ``drive`` loops the core's
``ReversalTrainer.reports(TrainingControl)`` on another thread and the runner delivers each step back on the
session's thread. Constructing a session is cheap and does not import torch.

The run's commands live here; the timeline, probe, Try it and ablation in ``recorded``; the state, what derives from it
and how changes are announced in ``session_base`` (``TrainingSessionBase``), the status and ETA texts in ``status``,
and the trainer factories in ``tools`` / ``files``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from app.common.runner import ThreadRunner
from app.training.model.driver import DeviceFallback, Factory, Ready, Stepped, drive
from app.training.model.recorded import TRY_INTERVAL_S, RecordedSteps
from app.training.model.results import ablation_at
from app.training.model.session_base import TrainingEvents
from app.training.model.tools import SPEEDS, extend_run, fresh_factory

if TYPE_CHECKING:
    from attention_core.tiny.config import TrainConfig

__all__ = ["GOAL", "RUN_STATES", "TRY_INTERVAL_S", "TrainingEvents", "TrainingSession"]

GOAL = 0.99
RUN_STATES = ("empty", "building", "running", "paused", "finished", "stopped", "loaded", "error")


class TrainingSession(RecordedSteps):
    """Set up, run, replay, probe, try and ablate the tiny transformer of any task (``config.task``: reversal,
    copy, sort, induction; see the module docstring).

    ``TrainingSession(config=None, runner=None)``: the state and what derives from it are ``TrainingSessionBase``'s
    (``session_base``), the commands on recorded steps (timeline, probe, Try it, ablation) ``RecordedSteps``'
    (``recorded``); running, files and the run's callbacks are here."""

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
        if self._control is not None:
            self._control.set_speed(steps_per_second)
        self._changed("speed")

    # ================================================================== run control
    def start_needs_choice(self) -> bool:
        """Whether Start would have to continue a finished run or discard recorded steps (a run stopped or paused
        after the settings changed): ask first (``start(new_run=False)`` continues, ``start(new_run=True)``
        starts a new model)."""
        if self.is_running or self.trainer is None or len(self.history) < 2:
            return False
        if self.is_paused:  # resuming is safe unless the settings now describe another run
            return self._config is not None and not self._same_config()
        return self.trainer.finished or not self._same_config()

    def start(self, new_run: bool | None = None) -> bool:
        """Train: resume a paused run, continue an unfinished one with unchanged settings, else build a new model.

        When that would continue a finished run or discard recorded steps (``start_needs_choice()``), say which:
        ``new_run=True`` (a fresh model from the settings) or ``False`` (= ``continue_training()``: the current
        model, with its own settings); without it nothing happens (the question is noted, False)."""
        if self.is_running:
            return False
        if self.is_paused and not new_run and (self._config is None or self._same_config()):
            self.resume()
            return True
        if self.start_needs_choice() and new_run is None:
            trainer = self.trainer
            self._note("The run is finished: continue training this model, or start a new run?"
                       if trainer is not None and trainer.finished else
                       "The settings changed: continue training this model as it was set up, or start a new run "
                       "with the new settings (its recorded steps are discarded)?")
            return False
        if new_run is False:
            return self.continue_training()
        if self._config is None:
            self._note(f"Cannot start: {self.config_error}", error=True)
            return False
        self._start_time = time.perf_counter()
        self.goal_step, self.time_to_goal = None, None
        trainer = self.trainer
        if not new_run and trainer is not None and not trainer.finished and self._same_config():
            self._launch(lambda: (trainer, []), paused=False, keep_history=True)
        else:
            self._launch_fresh(paused=False)
        return True

    def continue_training(self) -> bool:
        """Train the current model further: a finished run gets one more length of its run (same unit)."""
        trainer = self.trainer
        if trainer is None or self.is_running:
            return False
        if self.is_paused:
            self.resume()
            return True
        if trainer.finished:
            trainer.config = extend_run(trainer.config, self._config if self._same_config(shape_only=True)
                                        else None)
            self._config = trainer.config
            self._changed("config")
        self._start_time = time.perf_counter()
        self._launch(lambda: (trainer, []), paused=False, keep_history=True)
        return True

    def pause(self) -> None:
        """No new step starts until ``resume()`` or ``step()`` (a step in flight still arrives)."""
        if self._control is not None and self.is_running:
            self._control.pause()
            self._steps_due = 0
            self._derive_at_shown()  # not kept up while training: the shown step's ablation and Try it
            self._set_run_state("paused", "ablation", "try_it")

    def resume(self) -> None:
        if self._control is None or not self.is_paused:
            return
        self.cursor.go_live()
        self._clear_ablation()
        if self._start_time is None:
            self._start_time = time.perf_counter()
        self._control.resume()
        self._steps_due = 0
        self._set_run_state("running", "shown")

    def toggle_pause(self) -> None:
        if self.is_paused:
            self.resume()
        elif self.is_running:
            self.pause()

    def step(self) -> bool:
        """Train exactly one batch, then stay paused (starting a paused run first when none is alive)."""
        if self.is_alive and self._control is not None:
            self.cursor.go_live()
            self._clear_ablation()  # at the step now shown (the live one), not the one shown before
            self._control.request_step()
            self._steps_due += 1
            self._set_run_state("paused", "shown")
            return True
        trainer = self.trainer
        if trainer is not None and not trainer.finished and (self._config is None or self._same_config()):
            self._launch(lambda: (trainer, []), paused=True, keep_history=True)
        elif trainer is not None and trainer.finished and len(self.history) > 1:
            self._note("The run is finished: Start continues it or starts a new run.")
            return False
        elif trainer is not None and len(self.history) > 1:  # the settings changed: never discard steps silently
            self._note("The settings changed: Start asks whether to continue this model or start a new run.")
            return False
        elif self._config is None:
            self._note(f"Cannot step: {self.config_error}", error=True)
            return False
        else:
            self._launch_fresh(paused=True)
        assert self._control is not None
        self._control.request_step()
        self._steps_due += 1
        return True

    def stop(self, timeout_s: float = 10.0) -> None:
        """End training after the step in flight and wait for the thread; recorded steps stay."""
        if self._control is None or self._handle is None:
            return
        self._control.stop()
        handle = self._handle
        handle.wait(timeout_s)  # delivers what the run yielded meanwhile (and its end)
        if self._handle is handle:
            self._end_run("stopped")

    def reset(self) -> bool:
        """A fresh model from the settings (same seed = same initialisation), shown at step 0, paused."""
        if self._config is None:
            self._note(f"Cannot reset: {self.config_error}", error=True)
            return False
        self._launch_fresh(paused=True)
        self._start_time = None
        return True

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop any run and wait for its thread (call before the window closes)."""
        if self._control is not None:
            self._control.stop()
        if self._handle is not None:
            self._handle.wait(timeout_s)
            self._end_run("stopped")
        if self._ended is not None:  # a run whose end was delivered may still be unwinding its thread
            self._ended.wait(timeout_s)
            self._ended = None

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """ThreadRunner only: deliver items until no run is training (building, running, or paused with a step
        requested by ``step()`` still to arrive) or ``timeout_s`` passed; whether it got there (tests, scripts)."""
        runner = self.runner
        deadline = time.perf_counter() + timeout_s
        while self.is_running or self.run_state == "building" or (self._steps_due and self.is_alive):
            if not isinstance(runner, ThreadRunner) or time.perf_counter() > deadline:
                return False
            runner.pump(0.05)
        if isinstance(runner, ThreadRunner):
            runner.pump()
        return True

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
        self._launch(factory, paused=True, loading=True)

    # ================================================================== the run's callbacks
    def _launch_fresh(self, *, paused: bool) -> None:
        """A new model from the settings; on a GPU, with the CPU as the fallback should building it there fail."""
        cfg = self._config
        assert cfg is not None
        cpu = fresh_factory(replace(cfg, device="cpu"), self.probe) if cfg.device != "cpu" else None
        self._launch(fresh_factory(cfg, self.probe), paused=paused, cpu_factory=cpu, device=cfg.device)

    def _launch(self, factory: Factory, *, paused: bool, keep_history: bool = False, loading: bool = False,
                cpu_factory: Factory | None = None, device: str = "cpu") -> None:
        from attention_core.tiny.control import TrainingControl

        if self._handle is not None:
            self.stop()
        self._run_id += 1
        run_id = self._run_id
        self._control = control = TrainingControl(paused=paused, steps_per_second=self.speed)
        self._durations.clear()
        self._steps_due = 0
        self.last_error = self.device_note = ""
        if not loading:
            self.loaded_from, self.history_note = "", ""
        if not keep_history:
            self.goal_step, self.time_to_goal = None, None  # a figure of the run before must not stay on screen
            self.history.clear()
            self._clear_ablation()  # after clearing: no Ablation of a discarded step may stay on screen
            self.try_it = None
            self.cursor.go_live()
        self._handle = self.runner.start(lambda: drive(factory, control, cpu_factory=cpu_factory, device=device,
                                                       keep_params=self.keep_params),
                                         lambda item: self._on_item(run_id, item),
                                         lambda reason: self._on_done(run_id, reason))
        state = ("paused" if paused else "running") if keep_history and self.trainer is not None else "building"
        self._building_paused = paused
        self._set_run_state(state, "history", "shown", "try_it", "ablation", "progress")

    def _on_item(self, run_id: int, item: object) -> None:
        if run_id != self._run_id:
            return  # a superseded run
        if isinstance(item, Ready):
            self._on_ready(item)
        elif isinstance(item, Stepped):
            self._on_step(item)
        elif isinstance(item, DeviceFallback):  # the GPU failed: the run goes on on the CPU
            self.device_note = item.text
            if self._config is not None and self._config.device != "cpu":
                self._config = replace(self._config, device="cpu")
            self._changed("config")

    def _on_ready(self, item: Ready) -> None:
        new_model = item.trainer is not self.trainer
        self.trainer = item.trainer
        if new_model:
            self.history.clear(complete=not (self.loaded_from and self.history_note))
            self.ablated, self.ablation, self.try_it = (), None, None
        for s in item.snapshots:
            self.history.add(s)
        if new_model:  # a loaded full history knows when it reached the goal (not how long that took); two
            # points of a history that was not saved do not
            goal = self.history.first_step_reaching(GOAL) if self.history.complete else None
            self.goal_step, self.time_to_goal = goal, None
        self.probe = tuple(int(t) for t in item.trainer.probe[: item.trainer.config.seq_len].tolist())
        if self._config != item.trainer.config:
            self._config = item.trainer.config
        self.cursor.set_length(len(self.history))
        state = ("loaded" if self.loaded_from else "paused") if self._building_paused else "running"
        if self.run_state == "building":
            self.run_state = state
        if self.loaded_from and self._control is not None:
            self._control.stop()  # a loaded model waits for Start without holding a thread
        self._derive_at_shown()
        self._changed("run_state", "config", "probe", "history", "shown", "ablation", "try_it", "progress")

    def _on_step(self, item: Stepped) -> None:
        snap = item.snapshot
        if not self.history.add(snap):
            return
        self._durations.append(item.seconds)
        self._steps_due = max(0, self._steps_due - 1)
        r = snap.report
        if self.goal_step is None and r.evaluated and r.sequence_accuracy >= GOAL:
            self.goal_step = snap.step
            if self._start_time is not None:
                self.time_to_goal = time.perf_counter() - self._start_time
        was = self.cursor.index
        self.cursor.set_length(len(self.history))
        names = ["history", "progress", "snapshot"]
        if self.cursor.index != was or self.cursor.follow_live:
            names.append("shown")
            if not self.is_running:
                self._derive_at_shown()
                names += ["ablation", "try_it"]
            elif not self.ablated:
                self.ablation = ablation_at(self.history, self.shown_index, snap_config(self), ())
                names.append("ablation")
        self._changed(*names, snapshot=snap)

    def _on_done(self, run_id: int, reason: str) -> None:
        if run_id != self._run_id:
            return
        if reason.startswith("error"):
            self.last_error = reason[len("error: "):]
            self._end_run("error")
        else:
            stopped = self._control is not None and self._control.stopped
            finished = self.trainer is not None and self.trainer.finished
            self._end_run("finished" if finished and not stopped else "stopped")

    def _end_run(self, state: str) -> None:
        if self._handle is None:
            return
        self._ended, self._handle, self._control, self._steps_due = self._handle, None, None, 0
        if self.run_state == "loaded" and state == "stopped":
            state = "loaded"
        self._derive_at_shown()
        self._set_run_state(state, "ablation", "try_it", "progress")
        self.events.finished.emit(state)


def snap_config(session: TrainingSession) -> TrainConfig:
    cfg = session.model_config
    assert cfg is not None
    return cfg
