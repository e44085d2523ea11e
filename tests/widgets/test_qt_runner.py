"""``app.widgets.workers.QtRunner``: how the window runs a training session's generator on a superqt worker and delivers
what it yields on the GUI thread; and the thread hygiene around it (pool drained, GC on the GUI thread)."""

from __future__ import annotations

import gc
import threading
import time

from hang_guard import HANG_GUARD_S
from PySide6.QtCore import QThreadPool, QTimer
from PySide6.QtWidgets import QApplication

from app.training.model.driver import Ready, Stepped, drive
from app.widgets.qt_compat import protect_singletons
from app.widgets.workers import QtRunner, wait_for_workers
from attention_core.tiny.config import TrainConfig

SMALL = TrainConfig(steps=500, seq_len=4, vocab_size=8, d_model=16, num_heads=2, num_layers=1, train_size=256,
                    test_size=64, eval_every=4, train_eval_size=16)


class Recorder:
    """on_item / on_done callbacks that note what arrived, in which order, on which thread."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.threads: set[int] = set()

    def on_item(self, item: object) -> None:
        self.threads.add(threading.get_ident())
        self.events.append(("item", item))

    def on_done(self, reason: str) -> None:
        self.threads.add(threading.get_ident())
        self.events.append(("done", reason))

    @property
    def items(self) -> list[object]:
        return [v for kind, v in self.events if kind == "item"]

    @property
    def done(self) -> list[str]:
        return [v for kind, v in self.events if kind == "done"]  # type: ignore[misc]


def drained(qtbot) -> None:
    assert wait_for_workers(10.0)
    assert QThreadPool.globalInstance().activeThreadCount() == 0


def test_items_arrive_in_order_on_the_gui_thread_then_done_once(qtbot):
    runner, rec = QtRunner(), Recorder()
    gen_threads: list[int] = []

    def gen():
        gen_threads.append(threading.get_ident())
        yield from range(200)

    handle = runner.start(gen, rec.on_item, rec.on_done)
    qtbot.waitUntil(lambda: bool(rec.done), timeout=10_000)
    qtbot.wait(100)  # a wait for nothing to happen: anything late would arrive now
    assert rec.items == list(range(200))
    assert rec.events[-1] == ("done", "finished") and rec.done == ["finished"], "done once, after every item"
    assert rec.threads == {threading.get_ident()}, "every callback on the GUI thread"
    assert gen_threads and gen_threads[0] != threading.get_ident(), "the generator runs on another thread"
    assert not handle.is_alive()
    drained(qtbot)


def test_an_exception_in_the_generator_ends_the_run_with_its_traceback(qtbot):
    runner, rec = QtRunner(), Recorder()

    def broken():
        yield 1
        yield 2
        raise RuntimeError("no such device")

    handle = runner.start(broken, rec.on_item, rec.on_done)
    qtbot.waitUntil(lambda: bool(rec.done), timeout=10_000)
    qtbot.wait(100)  # a wait for nothing to happen: no item and no second "done" after the first
    assert rec.items == [1, 2]
    assert len(rec.done) == 1
    reason = rec.done[0]
    assert reason.startswith("error: ") and "Traceback" in reason and "RuntimeError: no such device" in reason
    assert "in broken" in reason, "the traceback names where it failed"
    assert not handle.is_alive()

    rec2 = Recorder()

    def fails_at_once():
        raise ValueError("bad config")
        yield  # pragma: no cover

    runner.start(fails_at_once, rec2.on_item, rec2.on_done)
    qtbot.waitUntil(lambda: bool(rec2.done), timeout=10_000)
    qtbot.wait(100)  # a wait for nothing to happen: no second "done"
    assert rec2.items == [] and len(rec2.done) == 1 and "ValueError: bad config" in rec2.done[0]
    drained(qtbot)


def test_wait_joins_and_delivers_pending_items_without_the_event_loop(qtbot):
    runner, rec = QtRunner(), Recorder()

    def slow():
        for i in range(20):
            time.sleep(0.005)
            yield i

    handle = runner.start(slow, rec.on_item, rec.on_done)
    event_loop_ran: list[int] = []
    QTimer.singleShot(0, lambda: event_loop_ran.append(1))
    assert handle.wait(10.0) is True
    assert event_loop_ran == [], "wait did not spin the event loop"
    assert rec.items == list(range(20)) and rec.done == ["finished"], "wait delivered what the run had left"
    assert rec.threads == {threading.get_ident()}
    assert not handle.is_alive()
    # the event loop turns: the timer queued before wait() fires, and the yielded signals still queued arrive with
    # it (posted before it; processEvents delivers every posted event): nothing is delivered twice
    qtbot.waitUntil(lambda: event_loop_ran == [1], timeout=10_000)
    QApplication.processEvents()
    assert event_loop_ran == [1]
    assert rec.items == list(range(20)) and rec.done == ["finished"]
    drained(qtbot)


def test_wait_times_out_on_a_run_that_goes_on_and_gc_stays_on_the_gui_thread(qtbot):
    runner, rec = QtRunner(), Recorder()
    release = threading.Event()
    assert gc.isenabled()

    def blocked():
        yield "started"
        release.wait(HANG_GUARD_S)  # held until the test releases it: a wait that ignored its timeout would hang
        yield "released"

    handle = runner.start(blocked, rec.on_item, rec.on_done)
    qtbot.waitUntil(lambda: rec.items == ["started"], timeout=10_000)
    assert not gc.isenabled(), "while a worker runs, cyclic garbage is collected on the GUI thread only"
    # the timeout is honoured: wait returns, saying the run goes on, while the run is still held
    # (how far past 0.2 s it returns on this machine: benchmarks/bench_responsiveness.py)
    assert handle.wait(0.2) is False and handle.is_alive() and not release.is_set()
    assert rec.done == []
    release.set()
    assert handle.wait(10.0) is True
    assert rec.items == ["started", "released"] and rec.done == ["finished"]
    qtbot.waitUntil(gc.isenabled, timeout=5000)
    drained(qtbot)


def test_a_paused_training_run_steps_exactly_once_per_request(qtbot):
    """The session's loop (``drive``) on the window's runner: the trainer is built in the worker thread, a paused
    run trains one batch per ``request_step``, ``stop`` ends it."""
    from attention_core.tiny.control import TrainingControl
    from attention_core.tiny.training import ReversalTrainer

    runner, rec = QtRunner(), Recorder()
    built_on: list[int] = []

    def factory():
        built_on.append(threading.get_ident())
        return ReversalTrainer(SMALL), []

    control = TrainingControl(paused=True)
    handle = runner.start(lambda: drive(factory, control), rec.on_item, rec.on_done)
    qtbot.waitUntil(lambda: bool(rec.items), timeout=30_000)
    ready = rec.items[0]
    assert isinstance(ready, Ready) and built_on[0] != threading.get_ident()
    qtbot.wait(200)  # a wait for nothing to happen (paused: no step)
    assert ready.trainer.step_count == 0 and len(rec.items) == 1, "paused: no step"
    control.request_step()
    qtbot.waitUntil(lambda: len(rec.items) == 2, timeout=30_000)
    control.request_step()
    control.request_step()
    qtbot.waitUntil(lambda: len(rec.items) == 4, timeout=30_000)
    qtbot.wait(200)  # a wait for nothing to happen: one step per request, no fifth item
    steps = rec.items[1:]
    assert all(isinstance(s, Stepped) for s in steps)
    assert [s.snapshot.step for s in steps] == [1, 2, 3] and ready.trainer.step_count == 3
    assert rec.threads == {threading.get_ident()}
    control.stop()
    assert handle.wait(10.0) and rec.done == ["finished"]
    assert ready.trainer.step_count == 3
    drained(qtbot)


def test_singleton_guard_is_idempotent():
    import sys

    protect_singletons(force=True)  # applied on CPython < 3.12 whatever the installed shiboken
    before = sys.getrefcount(None)
    assert protect_singletons(force=True) is False
    assert protect_singletons() is False
    assert abs(sys.getrefcount(None) - before) < 1000, "a second call adds nothing"
    if sys.version_info < (3, 12):
        assert before > 1 << 39
