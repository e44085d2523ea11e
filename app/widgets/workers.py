"""The one way the app runs work off the GUI thread: superqt's workers, wrapped so every caller uses them alike.

- ``run_in_background(fn, on_done=..., on_error=...)``: a plain function (device detection, the torch warm-up,
  a long export). ``on_done(result)`` / ``on_error(exc)`` run on the GUI thread (queued signals).
- ``run_generator(gen_fn, on_yield=..., on_done=..., on_error=...)``: a generator (training drives
  ``ReversalTrainer.reports(control)`` this way); each yielded value reaches ``on_yield`` on the GUI thread.
- ``QtRunner``: how a ``TrainingSession`` runs training in the window (a generator worker, see the class).
- ``wait_for_workers(timeout_s)``: closing the window waits here, so no thread is left importing torch or
  stepping a model while the interpreter shuts down (that crashed PySide's exit hook before).

While any worker runs, Python's cyclic garbage collector is switched to the GUI thread (``GuiThreadGC``): when
it ran in a worker thread it destroyed Qt objects that belong to the GUI thread ("QObject::killTimer: Timers
cannot be stopped from another thread", and worse). pyqtgraph's ``GarbageCollector`` does the same thing.
"""

from __future__ import annotations

import gc
import queue
import threading
import traceback
from collections.abc import Callable, Generator, Iterator
from functools import partial
from typing import Any

from PySide6.QtCore import QThreadPool, QTimer
from superqt.utils import FunctionWorker, GeneratorWorker, WorkerBase, create_worker

__all__ = ["GuiThreadGC", "QtRunner", "run_generator", "run_in_background", "wait_for_workers"]


class GuiThreadGC:
    """While workers run, collect cyclic garbage on the GUI thread only (a GUI timer does what the automatic
    collector would have done)."""

    _users = 0
    _was_enabled = True
    _timer: QTimer | None = None

    @classmethod
    def acquire(cls) -> None:
        if cls._users == 0:
            cls._was_enabled = gc.isenabled()
            gc.disable()
            if cls._timer is None:
                cls._timer = QTimer()
                cls._timer.setInterval(100)
                cls._timer.timeout.connect(cls.collect_if_due)
            cls._timer.start()
        cls._users += 1

    @classmethod
    def release(cls) -> None:
        if cls._users == 0:
            return
        cls._users -= 1
        if cls._users == 0:
            if cls._timer is not None:
                cls._timer.stop()
            if cls._was_enabled:
                gc.enable()

    @staticmethod
    def collect_if_due() -> None:
        """What the automatic collector would do now, on the calling (GUI) thread."""
        t0, t1, t2 = gc.get_threshold()
        c0, c1, c2 = gc.get_count()
        if c0 > t0:
            gc.collect(2 if (c1 > t1 and c2 > t2) else 1 if c1 > t1 else 0)


def _wire(worker: WorkerBase, on_done: Callable[[Any], Any] | None,
          on_error: Callable[[Exception], Any] | None) -> None:
    """Connect the callbacks and hold the GUI-thread garbage collection until the worker has finished.

    Without ``on_error`` superqt re-raises the worker's exception on the GUI thread: never silent."""
    GuiThreadGC.acquire()
    released = [False]

    def release() -> None:
        if not released[0]:
            released[0] = True
            GuiThreadGC.release()

    worker.finished.connect(release)  # type: ignore[arg-type]  # superqt types it Signal(None): it sends nothing
    if on_done is not None:
        worker.returned.connect(on_done)
    if on_error is not None:
        worker.errored.connect(on_error)


def run_in_background(fn: Callable[..., Any], *args: Any, on_done: Callable[[Any], Any] | None = None,
                      on_error: Callable[[Exception], Any] | None = None, start: bool = True,
                      **kwargs: Any) -> FunctionWorker:
    """Run ``fn(*args, **kwargs)`` on a pool thread; callbacks arrive on the GUI thread."""
    # superqt re-raises a worker's error on the GUI thread unless told not to: with an ``on_error`` the caller
    # handles it (before, a failing device detection raised in the event loop although on_error was given)
    worker = create_worker(fn, *args, _start_thread=False, _ignore_errors=on_error is not None, **kwargs)
    assert isinstance(worker, FunctionWorker)
    _wire(worker, on_done, on_error)
    if start:
        worker.start()
    return worker


def run_generator(gen_fn: Callable[..., Generator[Any, Any, Any]], *args: Any,
                  on_yield: Callable[[Any], Any] | None = None, on_done: Callable[[Any], Any] | None = None,
                  on_error: Callable[[Exception], Any] | None = None, start: bool = True,
                  **kwargs: Any) -> GeneratorWorker:
    """Run a generator on a pool thread; every yielded value reaches ``on_yield`` on the GUI thread.

    The worker's ``quit()`` stops it between two yields; ``pause()``/``resume()`` likewise.
    """
    worker = create_worker(gen_fn, *args, _start_thread=False, _ignore_errors=on_error is not None, **kwargs)
    assert isinstance(worker, GeneratorWorker)
    if on_yield is not None:
        worker.yielded.connect(on_yield)
    _wire(worker, on_done, on_error)
    if start:
        worker.start()
    return worker


def wait_for_workers(timeout_s: float = 30.0) -> bool:
    """Ask every running worker to quit and wait for the pool to drain. Returns whether it did in time."""
    for worker in list(WorkerBase._worker_set):
        worker.quit()
    return bool(QThreadPool.globalInstance().waitForDone(int(timeout_s * 1000)))


class _QtRunHandle:
    """A training run on a superqt worker: what it yields waits in a queue until the GUI thread pumps it."""

    def __init__(self, runner: QtRunner, done: threading.Event) -> None:
        self._runner, self._done = runner, done

    def wait(self, timeout_s: float = 10.0) -> bool:
        ended = self._done.wait(timeout_s)
        self._runner.pump()
        return ended

    def is_alive(self) -> bool:
        return not self._done.is_set()


class QtRunner:
    """The ``Runner`` of ``app.common.runner`` for the window: the run's generator runs on a superqt
    worker (``run_generator``); each item it yields is queued and a queued signal makes the GUI thread deliver it
    (``pump``), so the session only ever changes on the GUI thread. ``wait`` (Stop, closing) joins the run and
    delivers what is left without spinning the event loop."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()

    def start(self, gen_fn: Callable[[], Iterator[object]], on_item: Callable[[object], None],
              on_done: Callable[[str], None]) -> _QtRunHandle:
        done = threading.Event()

        def work() -> Generator[None, None, None]:
            reason = "finished"
            try:
                for item in gen_fn():
                    self._queue.put(partial(on_item, item))
                    yield None  # -> worker.yielded -> pump() on the GUI thread
            except Exception:
                reason = "error: " + traceback.format_exc()
            finally:
                self._queue.put(lambda: on_done(reason))
                done.set()

        worker = run_generator(work, on_yield=lambda _x: self.pump(), start=False)
        worker.finished.connect(self.pump)  # type: ignore[arg-type]  # as above: finished sends nothing
        handle = _QtRunHandle(self, done)
        worker.start()
        return handle

    def pump(self) -> int:
        """Deliver every queued item on this (the GUI) thread; how many."""
        n = 0
        while True:
            try:
                fn = self._queue.get_nowait()
            except queue.Empty:
                return n
            fn()
            n += 1
