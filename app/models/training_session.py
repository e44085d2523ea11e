"""``TrainingSession``: the Training tab's evented model, without Qt. The public automation surface (``w.training``).

It holds the run (state, config, trainer), the recorded history with each step's parameters, the playback
cursor (the step shown), the probe, the heads switched off, the Try it result and the status line. Every mutator
changes the state, recomputes what derives from it (status, ablation and try-it at the shown step, progress) and
then emits one event per changed thing on ``session.events`` (psygnal). Try it and Ablate always act on a model
rebuilt from the *shown* step's parameters, never on the model that is training, and say which step they used.

Training runs through an injected ``Runner`` (``training_runner``): ``drive`` loops the core's
``ReversalTrainer.reports(TrainingControl)`` on another thread and the runner delivers each step back on the
session's thread. Constructing a session is cheap and does not import torch.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from psygnal import Signal, SignalGroup

from .training_history import PlaybackCursor, Snapshot, TrainingHistory
from .training_results import Ablation, Head, TryIt, ablation_at, ablation_status, pace_text, run_try_it
from .training_runner import Ready, RunHandle, Runner, Stepped, ThreadRunner, drive
from .training_tools import DEFAULT_SPEED_INDEX, SPEEDS, eta_seconds, format_eta, parse_tokens

if TYPE_CHECKING:
    from attention_core.train_config import TrainConfig
    from attention_core.training import ReversalTrainer, TrainingControl

GOAL = 0.99
TRY_INTERVAL_S = 0.5
RUN_STATES = ("empty", "building", "running", "paused", "finished", "stopped", "loaded", "error")


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
    finished = Signal(str)  # a run ended: "finished", "stopped" or "error"


class TrainingSession:
    """Set up, run, replay, probe, try and ablate the tiny reversal transformer (see the module docstring)."""

    def __init__(self, config: TrainConfig | None = None, runner: Runner | None = None) -> None:
        self.events = TrainingEvents()
        self.runner: Runner = runner or ThreadRunner()
        self.history = TrainingHistory()
        self.cursor = PlaybackCursor()
        self.cursor.speed = SPEEDS[DEFAULT_SPEED_INDEX][1]
        self.trainer: ReversalTrainer | None = None
        self._config = config
        self.config_error = ""
        self.run_state = "empty"
        self.last_error = ""
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
        self._run_id = 0
        self._start_time: float | None = None
        self._durations: deque[float] = deque(maxlen=12)
        self._notice: tuple[str, bool] | None = None
        self._status: tuple[str, bool] = ("", False)
        self._try_at = 0.0
        self._building_paused = False
        self._status = self._derive_status()

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
        text = "ETA –"
        if self.is_running and latest is not None and self._durations:
            per_step = sum(self._durations) / len(self._durations)
            if self.speed:
                per_step = max(per_step, 1.0 / self.speed)
            text = format_eta(eta_seconds(latest.step, self.total_steps, per_step))
        if self.goal_step is not None:
            took = f" ({self.time_to_goal:.1f} s after Start)" if self.time_to_goal is not None else ""
            text += f" · ≥ 99 % exact-sequence at step {self.goal_step}{took}"
        return text

    def start_needs_choice(self) -> bool:
        """Whether Start would have to continue a finished run or discard recorded steps: ask first
        (``continue_training()`` or ``start(new_run=True)``)."""
        if self.is_alive or self.trainer is None or len(self.history) < 2:
            return False
        return self.trainer.finished or not self._same_config()

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
    def start(self, new_run: bool | None = None) -> bool:
        """Train: resume a paused run, continue an unfinished one with unchanged settings, else build a new model.

        When that would continue a finished run or discard recorded steps, say which: ``new_run=True`` (a fresh
        model from the settings) or ``False`` (= ``continue_training()``); without it nothing happens (False)."""
        if self.is_running:
            return False
        if self.is_paused and not new_run and (self._config is None or self._same_config()):
            self.resume()
            return True
        if self.start_needs_choice() and new_run is None:
            self._note("The run is finished: continue training this model, or start a new run?")
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
            self._launch(self._fresh_factory(self._config), paused=False)
        return True

    def continue_training(self) -> bool:
        """Train the current model further: a finished run gets one more length of its run (same unit)."""
        from .training_tools import extend_run

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
            self._set_run_state("paused")

    def resume(self) -> None:
        if self._control is None or not self.is_paused:
            return
        self._clear_ablation()
        self.cursor.go_live()
        if self._start_time is None:
            self._start_time = time.perf_counter()
        self._control.resume()
        self._set_run_state("running", "shown")

    def toggle_pause(self) -> None:
        if self.is_paused:
            self.resume()
        elif self.is_running:
            self.pause()

    def step(self) -> bool:
        """Train exactly one batch, then stay paused (starting a paused run first when none is alive)."""
        if self.is_alive and self._control is not None:
            self._clear_ablation()
            self.cursor.go_live()
            self._control.request_step()
            self._set_run_state("paused", "shown")
            return True
        trainer = self.trainer
        if trainer is not None and not trainer.finished and (self._config is None or self._same_config()):
            self._launch(lambda: (trainer, []), paused=True, keep_history=True)
        elif trainer is not None and trainer.finished and len(self.history) > 1:
            self._note("The run is finished: Start continues it or starts a new run.")
            return False
        elif self._config is None:
            self._note(f"Cannot step: {self.config_error}", error=True)
            return False
        else:
            self._launch(self._fresh_factory(self._config), paused=True)
        assert self._control is not None
        self._control.request_step()
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
        self._launch(self._fresh_factory(self._config), paused=True)
        self._start_time = None
        return True

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop any run and wait for its thread (call before the window closes)."""
        if self._control is not None:
            self._control.stop()
        if self._handle is not None:
            self._handle.wait(timeout_s)
            self._end_run("stopped")

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """ThreadRunner only: deliver items until no run is alive or ``timeout_s`` passed (tests, scripts)."""
        runner = self.runner
        deadline = time.perf_counter() + timeout_s
        while self.is_running or self.run_state == "building":
            if not isinstance(runner, ThreadRunner) or time.perf_counter() > deadline:
                return False
            runner.pump(0.05)
        if isinstance(runner, ThreadRunner):
            runner.pump()
        return True

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
        self._clear_ablation()
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
        t = self.try_it
        if (self.is_running and t is not None and t.result is not None and t.step != self.shown_step
                and now - self._try_at >= TRY_INTERVAL_S):
            self._try_at = now
            self._refresh_try_it()
            self._changed("try_it")

    # ================================================================== probe, try it, ablation
    def set_probe(self, text: str) -> bool:
        """Use these L tokens as the probe (the grid's maps); a refused text sets ``probe_error``."""
        cfg = self.model_config
        if cfg is None:
            return False
        try:
            tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size)
        except ValueError as exc:
            self.probe_error = str(exc)
            self._changed("probe")
            return False
        self.probe, self.probe_error = tuple(tokens), ""
        trainer = self.trainer
        if trainer is not None:
            if self._control is not None and self.is_alive:
                self._control.submit(lambda t: t.set_probe(tokens))
            else:
                trainer.set_probe(tokens)
            latest = self.history.latest
            if latest is not None and latest.params is not None and not self.is_running:
                self._reprobe_latest(trainer.config, tokens, latest)
        self._changed("probe", "history", "shown")
        return True

    def try_sequence(self, text: str) -> TryIt:
        """Greedy-reverse the typed tokens with the model at the shown step; a refused text is an error result."""
        cfg, snap = self.model_config, self.shown_snapshot
        if cfg is None or snap is None or self.trainer is None:
            self.try_it = TryIt(text, error="No model yet: press Start (or Step, or Load a model) first.")
        else:
            try:
                tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size)
            except ValueError as exc:
                self.try_it = TryIt(text, error=str(exc))
            else:
                self.try_it = run_try_it(text, tokens, cfg, snap)
        self._changed("try_it")
        return self.try_it

    def toggle_head(self, layer: int, head: int) -> bool:
        """Switch one head off (or back on) in the shown step's model and measure the effect."""
        if self.is_running:
            self._note("To switch heads off, pause or stop training first.", error=True)
            return False
        if self.shown_snapshot is None or self.model_config is None:
            self._note("No model yet: Start, Step or Load first.", error=True)
            return False
        off = set(self.ablated) ^ {(layer, head)}
        self.ablated = tuple(sorted(off))
        self._recompute_ablation()
        self._refresh_try_it()
        self._changed("ablation", "try_it")
        return True

    def restore_heads(self) -> None:
        """Switch every head back on."""
        self._clear_ablation()
        self._refresh_try_it()
        self._changed("ablation", "try_it")

    # ================================================================== files
    def save(self, path: str | Path) -> Path:
        """Save the latest step's model (``NAME.safetensors`` + ``NAME.json``) with its recorded history and
        snapshots (``NAME.history.safetensors``, ``NAME.history.csv``)."""
        from .training_files import save_session_files

        cfg, latest = self.model_config, self.history.latest
        if cfg is None or latest is None or latest.params is None:
            raise RuntimeError("no model yet: Start, Step or Load first")
        path = save_session_files(path, cfg, self.history)
        self._note(f"Saved {path}")
        return path

    def load(self, path: str | Path) -> None:
        """Load a model saved by this app; raises ``CheckpointError`` (nothing changes) for a bad file."""
        from .training_files import load_session_files

        factory, note = load_session_files(path)  # validates now; builds the trainer on the run's thread
        self.loaded_from, self.history_note = Path(path).name, note
        self._launch(factory, paused=True, loading=True)

    # ================================================================== internals
    def _same_config(self, shape_only: bool = False) -> bool:
        t = self.trainer
        if t is None or self._config is None:
            return False
        if shape_only:
            from dataclasses import replace

            return replace(self._config, steps=None, epochs=1) == replace(t.config, steps=None, epochs=1)
        return self._config == t.config

    def _fresh_factory(self, cfg: TrainConfig):  # type: ignore[no-untyped-def]
        probe = list(self.probe) if self.probe is not None and len(self.probe) == cfg.seq_len else None

        def make() -> tuple[ReversalTrainer, list[Snapshot]]:
            from attention_core.training import ReversalTrainer

            from .training_tools import params_of

            try:
                trainer = ReversalTrainer(cfg, probe)
            except ValueError:
                trainer = ReversalTrainer(cfg)
            p = [int(t) for t in trainer.probe.tolist()]
            return trainer, [Snapshot.from_report(trainer.history[0], p, cfg.seq_len, cfg.causal,
                                                  params_of(trainer.model))]

        return make

    def _launch(self, factory, *, paused: bool, keep_history: bool = False,  # type: ignore[no-untyped-def]
                loading: bool = False) -> None:
        from attention_core.training import TrainingControl

        if self._handle is not None:
            self.stop()
        self._run_id += 1
        run_id = self._run_id
        self._control = control = TrainingControl(paused=paused, steps_per_second=self.speed)
        self._durations.clear()
        self.last_error = ""
        if not loading:
            self.loaded_from, self.history_note = "", ""
        if not keep_history:
            self._clear_ablation()
            self.history.clear()
            self.try_it = None
            self.cursor.go_live()
        self._handle = self.runner.start(lambda: drive(factory, control),
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

    def _on_ready(self, item: Ready) -> None:
        new_model = item.trainer is not self.trainer
        self.trainer = item.trainer
        if new_model:
            self.history.clear(complete=not (self.loaded_from and self.history_note))
            self.ablated, self.ablation, self.try_it = (), None, None
        for s in item.snapshots:
            self.history.add(s)
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
        self._handle, self._control = None, None
        if self.run_state == "loaded" and state == "stopped":
            state = "loaded"
        self._derive_at_shown()
        self._set_run_state(state, "ablation", "try_it", "progress")
        self.events.finished.emit(state)

    def _set_run_state(self, state: str, *names: str) -> None:
        self.run_state = state
        self._changed("run_state", *names)

    def _shown_changed(self) -> None:
        if not self.is_running:
            self._derive_at_shown()
        self._changed("shown", "ablation", "try_it")

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
        self.try_it = run_try_it(t.text, tokens, cfg, snap) if tokens else t

    def _clear_ablation(self) -> None:
        self.ablated = ()
        self._recompute_ablation()

    def _reprobe_latest(self, cfg: TrainConfig, tokens: list[int], latest: Snapshot) -> None:
        import torch

        from attention_core.analysis import probe_attention
        from attention_core.tasks import make_reversal_example

        from .training_tools import model_from_params

        assert latest.params is not None
        full = make_reversal_example(torch.tensor(tokens))
        weights = probe_attention(model_from_params(cfg, latest.params), full, cfg.causal)
        self.history.replace_latest(latest.with_probe(full.tolist(), weights))

    def _note(self, text: str, error: bool = False) -> None:
        """A one-off message (an action's outcome or refusal) until the next change."""
        self._notice = (text, error)
        self._emit_status()

    def _changed(self, *names: str, snapshot: Snapshot | None = None) -> None:
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
        if self._notice is not None:
            return self._notice
        if self.ablated and self.ablation is not None and self.ablation.off:
            return ablation_status(self.ablation), False
        latest = self.history.latest
        step = latest.step if latest is not None else 0
        state = self.run_state
        if state == "error":
            lines = self.last_error.strip().splitlines()
            return f"Training failed: {lines[-1] if lines else 'unknown error'}", True
        if state == "empty":
            return "Ready. Start trains the model at a watchable speed.", False
        if state == "building":
            return ("Loading the model…" if self.loaded_from else "Building the model and data…"), False
        if state == "running":
            return f"Training {pace_text(self.speed)}… Pause, Step or Stop any time; every step is recorded.", False
        if state == "loaded":
            note = self.history_note or "Its recorded history came with it."
            return f"Loaded {self.loaded_from} (step {step}). {note} Start continues training.", False
        if state == "paused":
            if step == 0 and self._start_time is None:
                return ("This is the untrained model (step 0): its heads look almost anywhere. Press Start to train "
                        "it at a watchable speed, or Step to go one batch at a time."), False
            return f"Paused at step {step}. Step trains one batch; Resume continues.", False
        if state == "finished":
            acc = f"{latest.report.sequence_accuracy:.1%}" if latest is not None else "?"
            return (f"Finished: {step} steps, exact-sequence test accuracy {acc}. Scrub the timeline, try "
                    "sequences, or click heads to ablate."), False
        return (f"Stopped at step {step}. Scrub the timeline, try sequences, click heads to ablate, or Start to "
                "continue."), False


def snap_config(session: TrainingSession) -> TrainConfig:
    cfg = session.model_config
    assert cfg is not None
    return cfg
