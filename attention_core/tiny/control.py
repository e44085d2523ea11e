"""Steering a training loop from another thread: pause, single step, resume, stop, speed, queued calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class TrainingControl:
    """Thread-safe pause / single step / resume / stop / speed for a training loop running elsewhere.

    The loop (``ReversalTrainer.reports``) calls ``wait_for_turn()`` before every step: it blocks while paused
    (unless a single step was requested), waits out the throttle (``steps_per_second``), and returns False once
    stopped. ``submit(fn)`` queues a call that the training thread makes with the trainer between two steps (e.g.
    a new probe), so nothing else ever touches the trainer while it trains.
    """

    def __init__(self, *, paused: bool = False, steps_per_second: float | None = None) -> None:
        self._cond = threading.Condition()
        self._paused = paused
        self._stop = False
        self._step_requests = 0
        self._speed = steps_per_second
        self._last_turn = 0.0
        self._pending: list[Callable[[Any], Any]] = []

    def pause(self) -> None:
        """No step starts after the one in flight (if any) until ``resume()`` or ``request_step()``."""
        with self._cond:
            self._paused = True
            self._step_requests = 0

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def request_step(self) -> None:
        """Train exactly one more step, then stay paused (requests add up: three calls, three steps)."""
        with self._cond:
            self._paused = True
            self._step_requests += 1
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()

    def set_speed(self, steps_per_second: float | None) -> None:
        """Throttle to this many steps per second (None = as fast as possible)."""
        with self._cond:
            self._speed = steps_per_second
            self._cond.notify_all()

    def submit(self, fn: Callable[[Any], Any]) -> None:
        """Run ``fn(trainer)`` in the training thread before the next step (or when the loop next waits)."""
        with self._cond:
            self._pending.append(fn)
            self._cond.notify_all()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def stopped(self) -> bool:
        return self._stop

    @property
    def steps_per_second(self) -> float | None:
        return self._speed

    def run_pending(self, trainer: Any) -> None:
        """Make the calls queued by ``submit`` (the training thread calls this)."""
        with self._cond:
            pending, self._pending = self._pending, []
        for fn in pending:
            fn(trainer)

    def wait_while_paused(self, timeout: float | None = None) -> bool:
        """Block while paused (no single step requested); return False once stopped."""
        with self._cond:
            self._cond.wait_for(lambda: self._stop or not self._paused or self._step_requests > 0, timeout)
            return not self._stop

    def wait_for_turn(self, trainer: Any = None) -> bool:
        """Block until the next step may run (not paused or a step requested, throttle elapsed); False once
        stopped. Calls queued by ``submit`` run here, in the training thread, with ``trainer``."""
        while True:
            with self._cond:
                while not (self._stop or self._pending or not self._paused or self._step_requests > 0):
                    self._cond.wait()
                if self._stop:
                    return False
                has_pending = bool(self._pending)
                if not has_pending:
                    single = self._step_requests > 0
                    if not single and self._speed:
                        wait = self._last_turn + 1.0 / self._speed - time.perf_counter()
                        if wait > 0:
                            self._cond.wait(min(wait, 0.25))
                            continue  # re-check pause / stop / speed after waiting
                    if single:
                        self._step_requests -= 1
                    self._last_turn = time.perf_counter()
                    return True
            self.run_pending(trainer)
