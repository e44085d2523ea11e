"""Training off the GUI thread: a QObject worker, moved to a QThread, that owns the trainer while it runs.

The worker builds its ``ReversalTrainer`` in its own thread (from a factory: a fresh run, a run to continue, a
loaded checkpoint), then loops ``trainer.step()`` and emits one ``Snapshot`` per step through a queued signal.
The GUI thread only stores and draws.

Thread safety: every ``trainer.step()`` runs while holding ``self._cond``'s lock, and pause/step/stop take the
same lock. So ``pause()`` returns only after an in-flight step has finished, and after it returns no further step
starts until ``resume()``/``request_step()``. While paused, the GUI may touch the model inside ``access()``
(it takes the same lock). Controls are plain thread-safe methods, called directly from the GUI thread: the
worker's own event loop is busy running ``run()``, so queued slots would never be delivered.
"""

from __future__ import annotations

import gc
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from .qt_compat import protect_singletons  # noqa: F401  (re-exported for the panel and its tests)
from .training_state import Snapshot, eta_seconds


class TrainingWorker(QObject):
    """Drives ``trainer.step()`` in a loop; signals carry immutable snapshots.

    Signals:
      ``ready(trainer, snapshots)``: the trainer exists; ``snapshots`` = its history so far (step 0, ...).
      ``snapshot(Snapshot)``: one per step.
      ``progress(step, total, eta_seconds)``: eta is -1 when unknown.
      ``pausedChanged(bool)``; ``error(str)`` (a traceback); ``finished(str)``: "finished", "stopped" or
      "error" — the thread may be quit after it.
    """

    ready = Signal(object, object)
    snapshot = Signal(object)
    progress = Signal(int, int, float)
    pausedChanged = Signal(bool)
    error = Signal(str)
    finished = Signal(str)

    def __init__(self, factory: Callable[[], Any], *, start_paused: bool = False,
                 steps_per_second: float | None = None, torch_threads: int | None = 1) -> None:
        super().__init__()
        self._factory = factory
        self._cond = threading.Condition(threading.Lock())
        self._paused = start_paused
        self._stopped = False
        self._step_requests = 0
        self._speed = steps_per_second
        self._torch_threads = torch_threads
        self._durations: deque[float] = deque(maxlen=12)
        self._last_step_end = 0.0
        self.trainer: Any = None
        self.steps_done = 0
        self.running = False  # inside run()

    # --- controls (GUI thread) -------------------------------------------------------------------------------
    def pause(self) -> None:
        """Pause after the step in flight (blocks until it is done, at most one step + evaluation)."""
        with self._cond:
            changed = not self._paused
            self._paused = True
            self._step_requests = 0
        if changed:
            self.pausedChanged.emit(True)

    def resume(self) -> None:
        with self._cond:
            changed = self._paused
            self._paused = False
            self._cond.notify_all()
        if changed:
            self.pausedChanged.emit(False)

    def request_step(self) -> None:
        """Train exactly one more batch, then stay paused (requests add up: three clicks, three steps)."""
        with self._cond:
            changed = not self._paused
            self._paused = True
            self._step_requests += 1
            self._cond.notify_all()
        if changed:
            self.pausedChanged.emit(True)

    def stop(self) -> None:
        """End the loop after the step in flight; ``finished("stopped")`` follows."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def set_speed(self, steps_per_second: float | None) -> None:
        """Throttle training to this many steps per second (None = as fast as possible)."""
        with self._cond:
            self._speed = steps_per_second
            self._cond.notify_all()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def stopped(self) -> bool:
        return self._stopped

    @contextmanager
    def access(self) -> Iterator[Any]:
        """Hold the step lock and yield the trainer: no step can run inside this block."""
        with self._cond:
            yield self.trainer

    @contextmanager
    def try_access(self) -> Iterator[Any]:
        """Like ``access()`` but never waits: yields None while a step is in flight (the GUI skips that frame)."""
        got = self._cond.acquire(blocking=False)
        try:
            yield self.trainer if got else None
        finally:
            if got:
                self._cond.release()

    # --- the loop (worker thread) ------------------------------------------------------------------------------
    @Slot()
    def run(self) -> None:
        self.running = True
        reason = "finished"
        try:
            if self._torch_threads:
                import torch

                # The tiny model is faster on one thread, and two OpenMP threads spinning against the GUI thread
                # (or another process) on a 2-core machine slow training down by an order of magnitude.
                torch.set_num_threads(self._torch_threads)
            trainer = self._factory()
            with self._cond:
                self.trainer = trainer
            causal, seq_len = trainer.config.causal, trainer.config.seq_len
            probe = tuple(int(t) for t in trainer.probe.tolist())
            initial = [Snapshot.from_report(r, probe, seq_len, causal) for r in trainer.history]
            self.ready.emit(trainer, initial)
            self._emit_progress(trainer)
            while True:
                with self._cond:
                    while not self._stopped and self._paused and self._step_requests == 0:
                        self._cond.wait()
                    if self._stopped:
                        reason = "stopped"
                        break
                    if trainer.finished:
                        break
                    single = self._step_requests > 0
                    if not single and self._speed:
                        due = self._last_step_end + 1.0 / self._speed
                        wait = due - time.perf_counter()
                        if wait > 0:
                            self._cond.wait(min(wait, 0.25))
                            continue  # re-check pause/stop/speed after waiting
                    if single:
                        self._step_requests -= 1
                    t0 = time.perf_counter()
                    report = trainer.step()
                    probe = tuple(int(t) for t in trainer.probe.tolist())
                    self._last_step_end = time.perf_counter()
                    self._durations.append(self._last_step_end - t0)
                    self.steps_done += 1
                self.snapshot.emit(Snapshot.from_report(report, probe, seq_len, causal))
                self._emit_progress(trainer)
        except Exception:
            reason = "error"
            self.error.emit(traceback.format_exc())
        finally:
            self.running = False
            self.finished.emit(reason)

    def _emit_progress(self, trainer: Any) -> None:
        per_step = sum(self._durations) / len(self._durations) if self._durations else None
        if self._speed and per_step is not None:
            per_step = max(per_step, 1.0 / self._speed)
        eta = eta_seconds(trainer.step_count, trainer.total_steps, per_step)
        self.progress.emit(int(trainer.step_count), int(trainer.total_steps), -1.0 if eta is None else eta)


class GuiThreadGC:
    """While training threads run, collect cyclic garbage on the GUI thread only.

    Python's cyclic collector runs in whichever thread happens to allocate past the threshold. When that is the
    training thread, it may destroy Qt objects that belong to the GUI thread ("QObject::killTimer: Timers cannot
    be stopped from another thread", and worse). pyqtgraph's ``GarbageCollector`` solves this by disabling
    automatic collection and collecting on a GUI timer; this does the same, but only while a run is alive.
    """

    _users = 0
    _was_enabled = True

    @classmethod
    def acquire(cls) -> None:
        if cls._users == 0:
            cls._was_enabled = gc.isenabled()
            gc.disable()
        cls._users += 1

    @classmethod
    def release(cls) -> None:
        if cls._users == 0:
            return
        cls._users -= 1
        if cls._users == 0 and cls._was_enabled:
            gc.enable()

    @staticmethod
    def collect_if_due() -> None:
        """What the automatic collector would do now, on the calling (GUI) thread."""
        t0, t1, t2 = gc.get_threshold()
        c0, c1, c2 = gc.get_count()
        if c0 > t0:
            gc.collect(2 if (c1 > t1 and c2 > t2) else 1 if c1 > t1 else 0)


class TrainingRun(QObject):
    """A worker and its QThread, started together and torn down together (create and use on the GUI thread)."""

    def __init__(self, worker: TrainingWorker, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self.thread = QThread()
        self.thread.setObjectName("training-worker")
        worker.moveToThread(self.thread)
        self.thread.started.connect(worker.run)
        # direct: quit from the worker thread itself, so the thread ends even if the GUI loop is busy
        worker.finished.connect(self.thread.quit, Qt.ConnectionType.DirectConnection)
        self.thread.finished.connect(self._release_gc)
        self._gc_timer = QTimer(self)
        self._gc_timer.setInterval(100)
        self._gc_timer.timeout.connect(GuiThreadGC.collect_if_due)
        self._gc_held = False

    def start(self) -> None:
        GuiThreadGC.acquire()
        self._gc_held = True
        self._gc_timer.start()
        self.thread.start()

    def is_alive(self) -> bool:
        return self.thread.isRunning()

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop the worker and wait for its thread to end. Returns whether it ended in time."""
        self.worker.stop()
        ended = True
        if self.thread.isRunning():
            self.thread.quit()
            ended = bool(self.thread.wait(timeout_ms))
        if ended:
            self._release_gc()
        return ended

    def _release_gc(self) -> None:
        if self._gc_held:
            self._gc_held = False
            self._gc_timer.stop()
            GuiThreadGC.release()
