"""A GPU that fails never ends a run or loses work (issue "Reliability campaign", item 6).

This machine has no GPU, so CUDA is made to fail on purpose: ``attention_core.devices`` is told one GPU exists (so a
``cuda:0`` config validates) and the trainer built for it is a CPU trainer whose config says ``cuda:0`` and that raises
torch's own ``OutOfMemoryError`` (or a driver error) at a chosen moment. Everything after that is the real code:
``drive`` catches the failure, the trainer moves to the CPU (``ReversalTrainer.move_to``) and the same step runs
again. The proof that nothing was lost: the session's recorded losses and parameters equal those of a run that
never failed, step for step.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

import app.training.model.run as run_module
from app.training.model.driver import DeviceFallback, device_failure
from app.training.model.session import TrainingSession
from app.training.model.tools import fresh_factory
from attention_core import devices
from attention_core.tiny.config import TrainConfig
from attention_core.tiny.training import ReversalTrainer
from tests.tolerance import assert_close

STEPS = 9
CPU_CFG = TrainConfig(steps=STEPS, train_size=128, test_size=32, train_eval_size=16, batch_size=16, eval_every=3,
                      seed=3)
GPU_CFG = replace(CPU_CFG, device="cuda:0")
OOM = "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total capacity)"


@pytest.fixture
def one_fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "_cuda_count", lambda: 1)


@pytest.fixture(scope="module")
def reference() -> list[tuple[float, dict[str, np.ndarray]]]:
    """The same run on the CPU, never failing: (loss, parameters) after every step."""
    trainer = ReversalTrainer(CPU_CFG)
    out = []
    for _ in range(STEPS):
        report = trainer.step()
        out.append((report.loss, {k: v.detach().numpy().copy() for k, v in trainer.model.state_dict().items()}))
    return out


def failing_gpu_factory(monkeypatch: pytest.MonkeyPatch, *, fail_at_call: int, where: str,
                        error: type[RuntimeError] = torch.cuda.OutOfMemoryError, message: str = OOM) -> list[int]:
    """Make the session's ``cuda:0`` trainers fail once, at the ``fail_at_call``-th call of ``where`` ("forward":
    in a training step, "evaluate": in the report after a step, "build": creating the trainer). Returns the list of
    failures raised (so a test can see the fault really happened)."""
    raised: list[int] = []

    def patched(config: TrainConfig, probe=None):  # noqa: ANN001, ANN202 (the signature of fresh_factory)
        real = fresh_factory(replace(config, device="cpu"), probe)
        if config.device == "cpu":
            return real

        def make():  # noqa: ANN202
            if where == "build":
                raised.append(1)
                raise error(message)
            trainer, snaps = real()
            trainer.config = replace(trainer.config, device="cuda:0")  # pretend: the real move_to brings it back
            target = trainer.model if where == "forward" else trainer
            name = "forward" if where == "forward" else "evaluate"
            original = getattr(target, name)
            calls = [0]

            def maybe_fail(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
                if trainer.config.device != "cpu":
                    calls[0] += 1
                    if calls[0] == fail_at_call:
                        raised.append(calls[0])
                        raise error(message)
                return original(*args, **kwargs)

            setattr(target, name, maybe_fail)
            return trainer, snaps

        return make

    monkeypatch.setattr(run_module, "fresh_factory", patched)
    return raised


def run_to_end(session: TrainingSession) -> None:
    session.set_speed(None)
    assert session.start()
    assert session.wait_idle(60.0)


def assert_nothing_lost(session: TrainingSession, reference: list[tuple[float, dict[str, np.ndarray]]]) -> None:
    steps = [s.step for s in session.history]
    assert steps == list(range(STEPS + 1)), steps  # every step recorded once, none skipped or trained twice
    for snap, (loss, params) in zip(list(session.history)[1:], reference):
        assert snap.report.loss == pytest.approx(loss, rel=1e-6, abs=1e-7)
        for name, value in params.items():
            assert_close(snap.params[name], value, err_msg=name)


@pytest.mark.parametrize("where, fail_at", [("forward", 4), ("evaluate", 2)])
def test_gpu_failing_mid_run_continues_on_the_cpu_and_loses_nothing(
        one_fake_gpu: None, monkeypatch: pytest.MonkeyPatch, reference: list, where: str, fail_at: int) -> None:
    raised = failing_gpu_factory(monkeypatch, fail_at_call=fail_at, where=where)
    session = TrainingSession(GPU_CFG)
    statuses: list[str] = []
    session.events.status.connect(statuses.append)
    run_to_end(session)
    assert raised, "the fault was never injected"
    assert session.run_state == "finished", session.status
    assert session.trainer is not None and session.trainer.device.type == "cpu"
    assert session.config is not None and session.config.device == "cpu"  # the form shows where it runs now
    assert "cuda:0 failed" in session.status and "CUDA out of memory" in session.status
    assert "continues on the CPU" in session.status and not session.status_is_error
    assert any("cuda:0 failed" in s and "Training" in s for s in statuses)  # said while it ran, too
    assert_nothing_lost(session, reference)


def test_building_on_a_failing_gpu_builds_on_the_cpu(one_fake_gpu: None, monkeypatch: pytest.MonkeyPatch,
                                                    reference: list) -> None:
    raised = failing_gpu_factory(monkeypatch, fail_at_call=1, where="build", error=RuntimeError,
                                 message="CUDA error: no kernel image is available for execution on the device")
    session = TrainingSession(GPU_CFG)
    run_to_end(session)
    assert raised == [1]
    assert session.run_state == "finished"
    assert "cuda:0 failed (CUDA error: no kernel image" in session.status
    assert_nothing_lost(session, reference)


def test_a_new_run_after_a_fallback_forgets_the_old_failure(one_fake_gpu: None, monkeypatch: pytest.MonkeyPatch,
                                                            reference: list) -> None:
    failing_gpu_factory(monkeypatch, fail_at_call=2, where="forward")
    session = TrainingSession(GPU_CFG)
    run_to_end(session)
    assert "failed" in session.status
    assert session.start(new_run=True) and session.wait_idle(60.0)  # the config is on the CPU now
    assert "failed" not in session.status and session.device_note == ""
    assert_nothing_lost(session, reference)


def test_errors_of_the_cpu_or_of_the_settings_are_not_retried() -> None:
    assert device_failure(RuntimeError("boom"), "cpu") is None
    assert device_failure(ValueError("seq_len must be ≥ 2"), "cuda:0") is None
    fb = device_failure(torch.cuda.OutOfMemoryError(OOM + "\nmore lines"), "cuda:1")
    assert isinstance(fb, DeviceFallback) and fb.device == "cuda:1" and fb.reason == OOM
    assert fb.text.startswith("cuda:1 failed (CUDA out of memory")


def test_a_cpu_run_that_fails_still_ends_in_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(config: TrainConfig, probe=None):  # noqa: ANN001, ANN202
        def make():  # noqa: ANN202
            trainer, snaps = fresh_factory(config, probe)()
            trainer.model.forward = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("a real bug"))
            return trainer, snaps
        return make

    monkeypatch.setattr(run_module, "fresh_factory", broken)
    session = TrainingSession(CPU_CFG)
    run_to_end(session)
    assert session.run_state == "error" and session.status_is_error
    assert "a real bug" in session.status


def test_move_to_keeps_the_optimiser_state_and_the_run_reproducible(reference: list) -> None:
    trainer = ReversalTrainer(CPU_CFG)
    for _ in range(3):
        trainer.step()
    state_before = {id(p): {k: v.clone() for k, v in st.items()} for p, st in trainer.optimizer.state.items()}
    trainer.move_to("cpu")
    for p, st in trainer.optimizer.state.items():
        for k, v in st.items():
            assert torch.equal(v, state_before[id(p)][k])
    for i in range(3, STEPS):
        assert trainer.step().loss == pytest.approx(reference[i][0], rel=1e-6, abs=1e-7)
    assert trainer.config.device == "cpu"
