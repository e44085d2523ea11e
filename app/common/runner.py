"""How a model runs work off its caller's thread without knowing about Qt: the ``Runner`` protocol and
``ThreadRunner``.

A model (the training session, an experiment, the Lab, the Model tab) hands a runner a generator function; the
runner runs it on another thread and delivers every yielded item, then the end of the run, back on the thread that
owns the model. The window's runner (``app.widgets.workers.QtRunner``) delivers through queued Qt signals;
``ThreadRunner`` here uses a plain thread and a queue that the owner drains with ``pump()`` (tests, scripts,
notebooks).
"""

from __future__ import annotations

import queue
import threading
import traceback
from collections.abc import Callable, Iterator
from functools import partial
from typing import Protocol

ItemCallback = Callable[[object], None]
DoneCallback = Callable[[str], None]
"""Called once per run with "finished", "stopped" or "error: <traceback>"."""


class RunHandle(Protocol):
    def wait(self, timeout_s: float = 10.0) -> bool:
        """Wait until the run's thread has ended and deliver what it yielded meanwhile; whether it ended."""
        ...

    def is_alive(self) -> bool: ...


class Runner(Protocol):
    """Runs ``gen_fn()`` on another thread; ``on_item`` / ``on_done`` are called on the session's thread."""

    def start(self, gen_fn: Callable[[], Iterator[object]], on_item: ItemCallback,
              on_done: DoneCallback) -> RunHandle: ...


class _ThreadHandle:
    def __init__(self, runner: ThreadRunner, thread: threading.Thread) -> None:
        self._runner, self._thread = runner, thread

    def wait(self, timeout_s: float = 10.0) -> bool:
        self._thread.join(timeout_s)
        self._runner.pump()
        return not self._thread.is_alive()

    def is_alive(self) -> bool:
        return self._thread.is_alive()


class ThreadRunner:
    """A plain (non-daemon) thread per run; items wait in a queue until the owner calls ``pump()``."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()
        self._threads: list[threading.Thread] = []

    def start(self, gen_fn: Callable[[], Iterator[object]], on_item: ItemCallback,
              on_done: DoneCallback) -> RunHandle:
        def work() -> None:
            reason = "finished"
            try:
                for item in gen_fn():
                    self._queue.put(partial(on_item, item))
            except Exception:
                reason = "error: " + traceback.format_exc()
            self._queue.put(lambda: on_done(reason))

        thread = threading.Thread(target=work, name="training-run")
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return _ThreadHandle(self, thread)

    def pump(self, timeout_s: float = 0.0) -> int:
        """Deliver queued items on this thread (waiting up to ``timeout_s`` for the first); how many."""
        n = 0
        try:
            fn = self._queue.get(timeout=timeout_s) if timeout_s > 0 else self._queue.get_nowait()
            while True:
                fn()
                n += 1
                fn = self._queue.get_nowait()
        except queue.Empty:
            return n

    def busy(self) -> bool:
        return any(t.is_alive() for t in self._threads) or not self._queue.empty()
