"""The training generator: what a ``TrainingSession``'s runner runs off the caller's thread, without knowing about Qt
(the runners themselves, which run any background work, are ``app.common.runner``'s).

The session hands a runner a generator function (``drive``: build or take a trainer, then loop
``ReversalTrainer.reports(control)``); the runner runs it on another thread and delivers every yielded item, then
the end of the run, back on the thread that owns the session. The window's runner (``app.widgets.workers.QtRunner``)
uses ``app.widgets.workers.run_generator`` (superqt, queued signals to the GUI thread); ``ThreadRunner`` uses a
plain thread and a queue that the owner drains with ``pump()`` (tests, scripts, notebooks).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.training.model.history import Snapshot, snapshot_options

if TYPE_CHECKING:
    from attention_core.tiny.control import TrainingControl
    from attention_core.tiny.training import ReversalTrainer

Factory = Callable[[], "tuple[ReversalTrainer, list[Snapshot]]"]
"""Builds (or takes) a run's trainer in the training thread; returns it with the snapshots the run starts with."""


@dataclass(frozen=True)
class Ready:
    """First item of a run: the trainer (built in the training thread) and the snapshots it starts with."""

    trainer: ReversalTrainer
    snapshots: list[Snapshot] = field(default_factory=list)


@dataclass(frozen=True)
class Stepped:
    """One training step: its snapshot (with the parameters) and how long the step took (seconds)."""

    snapshot: Snapshot
    seconds: float


@dataclass(frozen=True)
class DeviceFallback:
    """The GPU failed (out of memory, a driver error …) and the run goes on on the CPU; nothing recorded is lost."""

    device: str
    reason: str

    @property
    def text(self) -> str:
        return f"{self.device} failed ({self.reason}); training continues on the CPU."


def device_failure(exc: BaseException, device: str) -> DeviceFallback | None:
    """A ``DeviceFallback`` when ``exc``, raised while working on ``device``, is worth retrying on the CPU: any
    runtime error of a GPU (torch raises RuntimeError or a subclass: OutOfMemoryError, AcceleratorError). None on
    the CPU, or for an error the CPU would raise as well (a ValueError of the settings, say)."""
    if device == "cpu" or not isinstance(exc, RuntimeError):
        return None
    lines = str(exc).strip().splitlines()
    reason = lines[0][:160] if lines else type(exc).__name__
    return DeviceFallback(device, reason)


def drive(factory: Factory, control: TrainingControl, torch_threads: int | None = 1,
          cpu_factory: Factory | None = None, device: str = "cpu", keep_params: bool = True) -> Iterator[object]:
    """The training loop every runner runs: ``Ready`` once, then a ``Stepped`` per step until the run ends or
    ``control`` stops it. Parameters are copied here, in the training thread, right after each step (unless
    ``keep_params`` is False: a run whose past steps are only looked at, never tried or ablated, as in an
    experiment, keeps ~110 kB less per step).

    A GPU that fails is not the end of the run: building the model there fails → ``cpu_factory`` builds it on the
    CPU; a step fails → the trainer moves to the CPU and the same step runs again. Either way a
    ``DeviceFallback`` item tells the session first."""
    from app.training.model.history import params_of

    if torch_threads:
        import torch

        # one thread is faster for this tiny model, and OpenMP threads spinning against the GUI thread on a
        # 2-core machine slow training down by an order of magnitude
        torch.set_num_threads(torch_threads)
    try:
        trainer, initial = factory()
    except RuntimeError as exc:
        fallback = device_failure(exc, device) if cpu_factory is not None else None
        if fallback is None or cpu_factory is None:
            raise
        yield fallback
        trainer, initial = cpu_factory()
    yield Ready(trainer, initial)
    cfg = trainer.config
    while True:
        t0 = time.perf_counter()
        try:
            for report in trainer.reports(control):
                took = time.perf_counter() - t0
                probe = [int(t) for t in trainer.probe.tolist()]
                params = params_of(trainer.model) if keep_params else None
                snap = Snapshot.from_report(report, probe, cfg.seq_len, cfg.causal, params=params,
                                            **snapshot_options(cfg))
                yield Stepped(snap, took)
                t0 = time.perf_counter()
            return
        except RuntimeError as exc:
            fallback = device_failure(exc, trainer.config.device)
            if fallback is None:
                raise
            trainer.move_to("cpu")
            cfg = trainer.config
            yield fallback


def warm_up() -> None:
    """Import torch and run one tiny training step off the GUI thread: torch's first model build, optimiser step
    and evaluation cost ~0.9 s more than later ones (lazy kernel and allocator set-up)."""
    import torch

    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.training import ReversalTrainer

    torch.set_num_threads(1)  # one thread is faster for this tiny model (see drive)
    ReversalTrainer(TrainConfig(train_size=64, test_size=16, train_eval_size=8, steps=1)).step()
