"""``TrainingRun``: the part of a ``TrainingSession`` that runs training: one run at a time on the injected runner.

It starts, steers (pause, resume, single steps, speed) and ends runs, and turns what a run's thread delivers (the
trainer once built, each step, a GPU that failed) into the session's recorded state, then has the session
announce it. It holds what belongs to the run in flight and nothing the views show: the runner, the run's
``TrainingControl``, its handle and id (an item of a superseded run is dropped here), the single steps requested
and not yet arrived, and the run's clock (when it started, the last steps' durations). The training generator
itself is ``driver.drive``. No Qt; constructing it does not import torch.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from app.common.runner import RunHandle, Runner, ThreadRunner
from app.training.model.driver import DeviceFallback, Factory, Ready, Stepped, drive
from app.training.model.tools import extend_run, fresh_factory

if TYPE_CHECKING:
    from app.training.model.cursor import PlaybackCursor
    from app.training.model.history import TrainingHistory
    from app.training.model.recorded import RecordedTools
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.control import TrainingControl
    from attention_core.tiny.training import ReversalTrainer

GOAL = 0.99
"""The exact-sequence accuracy a run aims for (its time to goal is measured at the first step reaching it)."""


class RunOwner(Protocol):
    """What a run reads and records in its session (``TrainingSession``), and how it has a change announced."""

    history: TrainingHistory
    cursor: PlaybackCursor
    tools: RecordedTools
    trainer: ReversalTrainer | None
    _config: TrainConfig | None
    config_error: str
    run_state: str
    last_error: str
    device_note: str
    loaded_from: str
    history_note: str
    goal_step: int | None
    time_to_goal: float | None

    @property
    def speed(self) -> float | None: ...

    @property
    def is_alive(self) -> bool: ...

    @property
    def is_running(self) -> bool: ...

    @property
    def is_paused(self) -> bool: ...

    def _note(self, text: str, error: bool = False) -> None: ...

    def _changed(self, *names: str, **payloads: Any) -> None: ...

    def _set_run_state(self, state: str, *names: str) -> None: ...


class TrainingRun:
    """Start, steer and end one training run at a time for ``owner`` (see the module docstring); the session's
    run-control methods are these."""

    def __init__(self, owner: RunOwner, runner: Runner | None) -> None:
        self._s = owner
        self.runner: Runner = runner or ThreadRunner()
        self.keep_params = True
        """Record each step's parameters (Try it and Ablate at a past step rebuild the model from them); an
        experiment's runs do not (``driver.drive``)."""
        self.control: TrainingControl | None = None
        self.handle: RunHandle | None = None
        self.ended: RunHandle | None = None  # the last run's handle once its end was delivered (``shutdown``)
        self.run_id = 0
        self.start_time: float | None = None
        self.durations: deque[float] = deque(maxlen=12)
        self.steps_due = 0  # single steps requested and not yet arrived (``wait_idle`` waits for them)
        self.building_paused = False

    # ================================================================== commands
    def start_needs_choice(self) -> bool:
        s = self._s
        if s.is_running or s.trainer is None or len(s.history) < 2:
            return False
        if s.is_paused:  # resuming is safe unless the settings now describe another run
            return s._config is not None and not self._same_config()
        return s.trainer.finished or not self._same_config()

    def start(self, new_run: bool | None = None) -> bool:
        s = self._s
        if s.is_running:
            return False
        if s.is_paused and not new_run and (s._config is None or self._same_config()):
            self.resume()
            return True
        if self.start_needs_choice() and new_run is None:
            trainer = s.trainer
            s._note("The run is finished: continue training this model, or start a new run?"
                    if trainer is not None and trainer.finished else
                    "The settings changed: continue training this model as it was set up, or start a new run "
                    "with the new settings (its recorded steps are discarded)?")
            return False
        if new_run is False:
            return self.continue_training()
        if s._config is None:
            s._note(f"Cannot start: {s.config_error}", error=True)
            return False
        self.start_time = time.perf_counter()
        s.goal_step, s.time_to_goal = None, None
        trainer = s.trainer
        if not new_run and trainer is not None and not trainer.finished and self._same_config():
            self.launch(lambda: (trainer, []), paused=False, keep_history=True)
        else:
            self.launch_fresh(paused=False)
        return True

    def continue_training(self) -> bool:
        s, trainer = self._s, self._s.trainer
        if trainer is None or s.is_running:
            return False
        if s.is_paused:
            self.resume()
            return True
        if trainer.finished:
            trainer.config = extend_run(trainer.config, s._config if self._same_config(shape_only=True) else None)
            s._config = trainer.config
            s._changed("config")
        self.start_time = time.perf_counter()
        self.launch(lambda: (trainer, []), paused=False, keep_history=True)
        return True

    def pause(self) -> None:
        if self.control is not None and self._s.is_running:
            self.control.pause()
            self.steps_due = 0
            self._s.tools.follow_shown()  # not kept up while training: the shown step's ablation and Try it
            self._s._set_run_state("paused", "ablation", "try_it")

    def resume(self) -> None:
        s = self._s
        if self.control is None or not s.is_paused:
            return
        s.cursor.go_live()
        s.tools.clear_ablation()
        if self.start_time is None:
            self.start_time = time.perf_counter()
        self.control.resume()
        self.steps_due = 0
        s._set_run_state("running", "shown")

    def step(self) -> bool:
        s = self._s
        if s.is_alive and self.control is not None:
            s.cursor.go_live()
            s.tools.clear_ablation()  # at the step now shown (the live one), not the one shown before
            self._request_step()
            s._set_run_state("paused", "shown")
            return True
        trainer = s.trainer
        if trainer is not None and not trainer.finished and (s._config is None or self._same_config()):
            self.launch(lambda: (trainer, []), paused=True, keep_history=True)
        elif trainer is not None and trainer.finished and len(s.history) > 1:
            s._note("The run is finished: Start continues it or starts a new run.")
            return False
        elif trainer is not None and len(s.history) > 1:  # the settings changed: never discard steps silently
            s._note("The settings changed: Start asks whether to continue this model or start a new run.")
            return False
        elif s._config is None:
            s._note(f"Cannot step: {s.config_error}", error=True)
            return False
        else:
            self.launch_fresh(paused=True)
        self._request_step()
        return True

    def reset(self) -> bool:
        s = self._s
        if s._config is None:
            s._note(f"Cannot reset: {s.config_error}", error=True)
            return False
        self.launch_fresh(paused=True)
        self.start_time = None
        return True

    def _same_config(self, shape_only: bool = False) -> bool:
        """Whether the settings are the trainer's (``shape_only``: up to the run's length)."""
        t, cfg = self._s.trainer, self._s._config
        if t is None or cfg is None:
            return False
        if shape_only:
            return replace(cfg, steps=None, epochs=1) == replace(t.config, steps=None, epochs=1)
        return cfg == t.config

    def _request_step(self) -> None:
        assert self.control is not None
        self.control.request_step()
        self.steps_due += 1

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.control is None or self.handle is None:
            return
        self.control.stop()
        handle = self.handle
        handle.wait(timeout_s)  # delivers what the run yielded meanwhile (and its end)
        if self.handle is handle:
            self._end_run("stopped")

    def shutdown(self, timeout_s: float = 30.0) -> None:
        if self.control is not None:
            self.control.stop()
        if self.handle is not None:
            self.handle.wait(timeout_s)
            self._end_run("stopped")
        if self.ended is not None:  # a run whose end was delivered may still be unwinding its thread
            self.ended.wait(timeout_s)
            self.ended = None

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        s, runner = self._s, self.runner
        deadline = time.perf_counter() + timeout_s
        while s.is_running or s.run_state == "building" or (self.steps_due and s.is_alive):
            if not isinstance(runner, ThreadRunner) or time.perf_counter() > deadline:
                return False
            runner.pump(0.05)
        if isinstance(runner, ThreadRunner):
            runner.pump()
        return True

    # ================================================================== starting a run
    def launch_fresh(self, *, paused: bool) -> None:
        """A new model from the settings; on a GPU, with the CPU as the fallback should building it there fail."""
        cfg, probe = self._s._config, self._s.tools.probe
        assert cfg is not None
        cpu = fresh_factory(replace(cfg, device="cpu"), probe) if cfg.device != "cpu" else None
        self.launch(fresh_factory(cfg, probe), paused=paused, cpu_factory=cpu, device=cfg.device)

    def launch(self, factory: Factory, *, paused: bool, keep_history: bool = False, loading: bool = False,
               cpu_factory: Factory | None = None, device: str = "cpu") -> None:
        """Start a run of ``factory``'s trainer (stopping the one in flight first)."""
        from attention_core.tiny.control import TrainingControl

        s = self._s
        if self.handle is not None:
            self.stop()
        self.run_id += 1
        run_id = self.run_id
        self.control = control = TrainingControl(paused=paused, steps_per_second=s.speed)
        self.durations.clear()
        self.steps_due = 0
        s.last_error = s.device_note = ""
        if not loading:
            s.loaded_from, s.history_note = "", ""
        if not keep_history:
            s.goal_step, s.time_to_goal = None, None  # a figure of the run before must not stay on screen
            s.history.clear()
            s.tools.clear_ablation()  # after clearing: no Ablation of a discarded step may stay on screen
            s.tools.try_it = None
            s.cursor.go_live()
        self.handle = self.runner.start(lambda: drive(factory, control, cpu_factory=cpu_factory, device=device,
                                                      keep_params=self.keep_params),
                                        lambda item: self._on_item(run_id, item),
                                        lambda reason: self._on_done(run_id, reason))
        state = ("paused" if paused else "running") if keep_history and s.trainer is not None else "building"
        self.building_paused = paused
        s._set_run_state(state, "history", "shown", "try_it", "ablation", "progress")

    # ================================================================== what the run's thread delivers
    def _on_item(self, run_id: int, item: object) -> None:
        if run_id != self.run_id:
            return  # a superseded run
        s = self._s
        if isinstance(item, Ready):
            self._on_ready(item)
        elif isinstance(item, Stepped):
            self._on_step(item)
        elif isinstance(item, DeviceFallback):  # the GPU failed: the run goes on on the CPU
            s.device_note = item.text
            if s._config is not None and s._config.device != "cpu":
                s._config = replace(s._config, device="cpu")
            s._changed("config")

    def _on_ready(self, item: Ready) -> None:
        s = self._s
        new_model = item.trainer is not s.trainer
        s.trainer = item.trainer
        if new_model:
            s.history.clear(complete=not (s.loaded_from and s.history_note))
            s.tools.reset()
        for snap in item.snapshots:
            s.history.add(snap)
        if new_model:  # a loaded full history knows when it reached the goal (not how long that took); two
            # points of a history that was not saved do not
            s.goal_step = s.history.first_step_reaching(GOAL) if s.history.complete else None
            s.time_to_goal = None
        s.tools.probe = tuple(int(t) for t in item.trainer.probe[: item.trainer.config.seq_len].tolist())
        if s._config != item.trainer.config:
            s._config = item.trainer.config
        s.cursor.set_length(len(s.history))
        state = ("loaded" if s.loaded_from else "paused") if self.building_paused else "running"
        if s.run_state == "building":
            s.run_state = state
        if s.loaded_from and self.control is not None:
            self.control.stop()  # a loaded model waits for Start without holding a thread
        s.tools.follow_shown()
        s._changed("run_state", "config", "probe", "history", "shown", "ablation", "try_it", "progress")

    def _on_step(self, item: Stepped) -> None:
        s, snap = self._s, item.snapshot
        if not s.history.add(snap):
            return
        self.durations.append(item.seconds)
        self.steps_due = max(0, self.steps_due - 1)
        r = snap.report
        if s.goal_step is None and r.evaluated and r.sequence_accuracy >= GOAL:
            s.goal_step = snap.step
            if self.start_time is not None:
                s.time_to_goal = time.perf_counter() - self.start_time
        was = s.cursor.index
        s.cursor.set_length(len(s.history))
        names = ["history", "progress"]
        if s.cursor.index != was or s.cursor.follow_live:
            names.append("shown")
            if not s.is_running:
                s.tools.follow_shown()
                names += ["ablation", "try_it"]
            elif not s.tools.ablated:
                s.tools.ablation_live()
                names.append("ablation")
        s._changed(*names, snapshot=snap)

    def _on_done(self, run_id: int, reason: str) -> None:
        if run_id != self.run_id:
            return
        if reason.startswith("error"):
            self._s.last_error = reason[len("error: "):]
            self._end_run("error")
        else:
            stopped = self.control is not None and self.control.stopped
            finished = self._s.trainer is not None and self._s.trainer.finished
            self._end_run("finished" if finished and not stopped else "stopped")

    def _end_run(self, state: str) -> None:
        s = self._s
        if self.handle is None:
            return
        self.ended, self.handle, self.control, self.steps_due = self.handle, None, None, 0
        if s.run_state == "loaded" and state == "stopped":
            state = "loaded"
        s.tools.follow_shown()
        s._set_run_state(state, "ablation", "try_it", "progress")
        s._changed(finished=state)
