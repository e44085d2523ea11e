"""The training worker on its own QThread: pause/step/stop semantics and thread hygiene, without the panel."""

from __future__ import annotations

import gc
import threading

import pytest

from app.training_worker import TrainingRun, TrainingWorker, protect_singletons
from attention_core.training import ReversalTrainer, TrainConfig

SMALL = TrainConfig(steps=500, seq_len=4, vocab_size=8, d_model=16, num_heads=2, num_layers=1, train_size=256,
                    test_size=64, eval_every=4)


@pytest.fixture
def run(qtbot):
    runs: list[TrainingRun] = []

    def make(**kw) -> tuple[TrainingRun, list]:
        got: list = []
        threads: list = []

        def factory():
            threads.append(threading.current_thread())
            return ReversalTrainer(SMALL)

        worker = TrainingWorker(factory, **kw)
        worker.snapshot.connect(got.append)
        r = TrainingRun(worker)
        r.factory_threads = threads  # type: ignore[attr-defined]
        runs.append(r)
        return r, got

    yield make
    for r in runs:
        r.shutdown()


def test_step_on_a_paused_worker_trains_exactly_one_batch(run, qtbot):
    r, got = run(start_paused=True)
    with qtbot.waitSignal(r.worker.ready, timeout=30_000) as ready:
        r.start()
    trainer, initial = ready.args
    assert [s.step for s in initial] == [0]
    assert r.factory_threads[0] is not threading.main_thread(), "the trainer is built in the worker thread"
    qtbot.wait(200)
    assert trainer.step_count == 0 and got == []
    r.worker.request_step()
    qtbot.waitUntil(lambda: len(got) == 1, timeout=30_000)
    r.worker.request_step()
    r.worker.request_step()
    qtbot.waitUntil(lambda: len(got) == 3, timeout=30_000)
    qtbot.wait(200)
    assert [s.step for s in got] == [1, 2, 3] and trainer.step_count == 3
    assert got[-1].probe == tuple(trainer.probe.tolist())


def test_pause_blocks_until_the_step_in_flight_is_done_and_access_is_exclusive(run, qtbot):
    r, got = run(steps_per_second=None)
    r.start()
    qtbot.waitUntil(lambda: len(got) >= 3, timeout=30_000)
    r.worker.pause()
    with r.worker.access() as trainer:
        frozen = trainer.step_count
    qtbot.wait(300)
    assert r.worker.trainer.step_count == frozen
    assert r.worker.paused and r.thread.isRunning()
    assert not gc.isenabled(), "while a run is alive, cyclic garbage is collected on the GUI thread only"
    with qtbot.waitSignal(r.worker.finished, timeout=30_000) as fin:
        r.worker.stop()
    assert fin.args == ["stopped"]
    assert r.thread.wait(5000) and r.thread.isFinished()
    qtbot.waitUntil(gc.isenabled, timeout=5000)


def test_a_finished_run_ends_its_thread_and_errors_are_reported(qtbot):
    worker = TrainingWorker(lambda: ReversalTrainer(TrainConfig(**{**SMALL.to_dict(), "steps": 3})))
    r = TrainingRun(worker)
    with qtbot.waitSignal(worker.finished, timeout=30_000) as fin:
        r.start()
    assert fin.args == ["finished"] and r.thread.wait(5000)

    def broken():
        raise RuntimeError("no such device")

    bad = TrainingWorker(broken)
    errors: list[str] = []
    bad.error.connect(errors.append)
    r2 = TrainingRun(bad)
    with qtbot.waitSignal(bad.finished, timeout=30_000) as fin2:
        r2.start()
    assert fin2.args == ["error"]
    assert len(errors) == 1 and "RuntimeError: no such device" in errors[0]
    assert r2.thread.wait(5000)


def test_singleton_guard_is_idempotent():
    import sys

    protect_singletons(force=True)  # applied on CPython < 3.12 whatever the installed shiboken
    before = sys.getrefcount(None)
    assert protect_singletons(force=True) is False
    assert abs(sys.getrefcount(None) - before) < 1000, "a second call adds nothing"
    if sys.version_info < (3, 12):
        assert before > 1 << 39


def test_try_access_never_waits_for_a_step_in_flight():
    worker = TrainingWorker(lambda: None)
    seen: list = []

    def other_thread() -> None:
        with worker.try_access() as trainer:
            seen.append(("busy", trainer))

    worker.trainer = "the trainer"
    with worker.access():
        t = threading.Thread(target=other_thread)
        t.start()
        t.join(2)
    assert seen == [("busy", None)], "the lock was held: try_access yields None at once"
    with worker.try_access() as trainer:
        assert trainer == "the trainer"
