"""The Lab tab's model: which devices and implementations to measure, the points measured so far, the run's state,
progress, status line and readouts. Qt-free and evented (psygnal); the views follow ``events``.

A run is ``attention_core.scaling.measure.iter_scaling`` driven by a ``Runner`` (``app.common.runner``): the
window's ``app.widgets.workers.QtRunner`` (a superqt generator worker) or a ``ThreadRunner`` (tests, scripts; call
``wait_idle``). Each measured point arrives on the owner's thread; ``cancel()`` is seen between two calls of the
point in flight, so a run ends well within a second. Constructing the model does not import torch.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from app.common.evented import Evented, ModelEvents, event
from app.common.runner import RunHandle, Runner, ThreadRunner
from app.common.validation import check_bench
from app.training.model.tools import format_eta
from attention_core.scaling.measure import iter_scaling
from attention_core.scaling.results import MatmulLimit, PointResult, ScalingConfig, ScalingRun, dtype_refusal

RUN_STATES = ("idle", "running", "cancelling", "finished", "cancelled", "error")
METHOD_TEXT = {"cuda": "torch.cuda.max_memory_allocated", "rss": "resident-set high-water mark",
               "tracemalloc": "tracemalloc"}
METHOD_SHORT = {"cuda": "cuda max alloc", "rss": "RSS peak", "tracemalloc": "tracemalloc"}
"""How a peak was measured, as the memory legend says it (``METHOD_TEXT`` in full)."""
Key = tuple[str, str]


class LabEvents(ModelEvents):
    """One event per thing that changes, emitted after the change (``status``, ``changed``: ``ModelEvents``)."""

    config = event(object)  # ScalingConfig
    devices = event(object)  # the devices the machine offers (list[str])
    results = event()  # points cleared (a new run) or added
    point = event(object)  # each new PointResult / MatmulLimit as it arrives
    run_state = event(str)
    progress = event()  # done / total / ETA changed
    readouts = event(object)  # list[str]


class ScalingLab(Evented):
    """State and commands of the Lab (see the module docstring)."""

    events: LabEvents

    def __init__(self, runner: Runner | None = None, devices: Sequence[str] = ("cpu",),
                 config: ScalingConfig | None = None) -> None:
        super().__init__()
        self.runner: Runner = runner or ThreadRunner()
        self.devices: list[str] = ["cpu", *[d for d in devices if d != "cpu"]]
        self.config = config or ScalingConfig(max_n=2048, repeat=5, threads=1)
        self.run = ScalingRun(self.config)
        self.run_state = "idle"
        self.status = "Choose devices and implementations, then Run: time and memory against n, on log-log axes."
        self.last_error = ""
        self.readouts: list[str] = []
        self.done = 0
        self.total = 0
        self.current = ""
        self._weight_done = 0.0
        self._weight_total = 0.0
        self._started: float | None = None
        self._cancel = threading.Event()
        self._handle: RunHandle | None = None
        self._run_id = 0

    # ================================================================== choices
    def set_available_devices(self, devices: Sequence[str]) -> None:
        """What the machine offers; chosen devices that went away are dropped (cpu stays)."""
        self.devices = ["cpu", *[d for d in devices if d != "cpu"]]
        self._announce(devices=list(self.devices))
        kept = tuple(d for d in self.config.devices if d in self.devices) or ("cpu",)
        if kept != self.config.devices:
            self._set_config(replace(self.config, devices=kept))

    def set_choice(self, **changes: Any) -> None:
        """Change settings of the next run (``devices``, ``impls``, ``dtype``, ``heads``, ``d``, ``batch``,
        ``max_n``, ``repeat``, ``threads``, ``memory_limit_mib``); ``ValueError`` with the reason and nothing
        changes when one is wrong (an unknown device, an empty choice, n out of range …)."""
        if self.is_running:
            raise ValueError("a run is in progress: cancel it first")
        for name in ("devices", "impls"):
            if name in changes:
                changes[name] = tuple(changes[name])
        new = replace(self.config, **changes).validate()
        for dev in new.devices:
            if dev not in self.devices:
                raise ValueError(f"devices: {dev} is not available here ({', '.join(self.devices)})")
        self._set_config(new)

    def _set_config(self, config: ScalingConfig) -> None:
        self.config = config
        self._announce("config")

    def refusals(self) -> list[str]:
        """Series of the current choice that will be skipped whole, and why (shown before Run)."""
        out = []
        for dev in self.config.devices:
            for impl in self.config.impls:
                why = dtype_refusal(dev, impl, self.config.dtype)
                if why:
                    out.append(f"{impl} on {dev}: {why}")
        return out

    # ================================================================== run control
    @property
    def is_running(self) -> bool:
        return self.run_state in ("running", "cancelling")

    def start(self) -> bool:
        """Measure with the current choice (the previous results are cleared); False when already running."""
        if self.is_running:
            return False
        cfg = check_bench(self.config, flags=False)  # the CLI's checks: a run where nothing can run is refused
        self._run_id += 1
        run_id = self._run_id
        self._cancel = cancel = threading.Event()
        self.run = ScalingRun(cfg)
        self.done, self.total, self.current = 0, cfg.total_items, ""
        sizes = cfg.sizes()
        per_n = len(cfg.devices) * len(cfg.impls)
        self._weight_total = float(sum(n * n for n in sizes) * per_n + (len(cfg.devices) if cfg.matmul_limit else 0)
                                   * max(sizes) ** 2)
        self._weight_done = 0.0
        self._started = time.monotonic()
        self.last_error = ""

        def gen() -> Iterator[object]:
            yield from iter_scaling(cfg, cancel=cancel.is_set)

        self._set_state("running", f"Measuring {cfg.total_points} points "
                                   f"({len(cfg.devices)} device(s) × {len(cfg.impls)} implementation(s) × "
                                   f"{len(sizes)} sizes of n, {cfg.repeat} timed calls each)…")
        self._announce("results")
        self._update_readouts()
        self._handle = self.runner.start(gen, lambda item: self._on_item(run_id, item),
                                         lambda reason: self._on_done(run_id, reason))
        return True

    def cancel(self) -> None:
        """Ask the run to stop after the call in flight (returns at once; ``run_state`` becomes "cancelled" when
        the worker has stopped)."""
        if self.run_state == "running":
            self._cancel.set()
            self._set_state("cancelling", "Cancelling after the call in flight…")

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Cancel any run and wait for its thread (the window calls this when it closes)."""
        self._cancel.set()
        handle = self._handle
        if handle is not None:
            handle.wait(timeout_s)

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """ThreadRunner only: deliver points until the run has ended or ``timeout_s`` passed; whether it ended."""
        deadline = time.monotonic() + timeout_s
        while self.is_running:
            if not isinstance(self.runner, ThreadRunner) or time.monotonic() > deadline:
                return False
            self.runner.pump(0.05)
        return True

    # ================================================================== the run's callbacks (owner's thread)
    def _on_item(self, run_id: int, item: object) -> None:
        if run_id != self._run_id or not isinstance(item, (PointResult, MatmulLimit)):
            return
        self.run.add(item)
        self.done = item.index
        if isinstance(item, PointResult):
            self._weight_done += item.n * item.n
            what = f"n = {item.n} · {item.impl} on {item.device}"
            self.current = what + (f" skipped: {item.skipped_reason}" if item.skipped_reason else
                                   f": {item.seconds * 1e3:.3g} ms")
        else:
            self._weight_done += max(self.run.config.sizes()) ** 2
            self.current = (f"matmul limit on {item.device}: {item.gflops:.1f} GFLOP/s"
                            if math.isfinite(item.gflops) else f"matmul limit on {item.device}: {item.skipped_reason}")
        self._announce("point", "results", "progress", point=item)
        self._update_readouts()
        if self.run_state == "running":
            self._set_status(f"{self.done} / {self.total} · {self.current} · {self.eta_text}")

    def _on_done(self, run_id: int, reason: str) -> None:
        if run_id != self._run_id:
            return
        self._handle = None
        self.run.cancelled = self._cancel.is_set()
        if reason.startswith("error"):
            self.last_error = reason[len("error: "):]
            lines = self.last_error.strip().splitlines()
            self._set_state("error", f"The run failed: {lines[-1] if lines else 'unknown error'}")
        elif self.run.cancelled:
            self._set_state("cancelled", f"Cancelled after {self.done} of {self.total} measurements; the points "
                                         "measured so far stay.")
        else:
            skipped = sum(1 for p in self.run.points if p.skipped_reason)
            self._set_state("finished", f"Done: {len(self.run.points) - skipped} points measured"
                                        + (f", {skipped} skipped (the readouts say why)"
                                           if skipped else "") + ".")
        self._update_readouts()
        self._announce("progress")

    def _set_state(self, state: str, status: str) -> None:
        self.run_state = state
        self._announce("run_state")
        self._set_status(status)

    def _update_readouts(self) -> None:
        self.readouts = self.run.readouts() if self.run.points or self.run.limits else []
        self._announce(readouts=list(self.readouts))

    # ================================================================== what the views show
    @property
    def eta_seconds(self) -> float | None:
        """Time left, assuming each point costs in proportion to n² (what the run measures)."""
        if self._started is None or self._weight_done <= 0 or not self.is_running:
            return None
        elapsed = time.monotonic() - self._started
        return elapsed * max(self._weight_total - self._weight_done, 0.0) / self._weight_done

    @property
    def eta_text(self) -> str:
        return format_eta(self.eta_seconds)

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def context_line(self) -> str:
        """What an exported figure names: "cpu · float32 · batch 1 · 4 heads · d = 64 · n 16…2048 · median of 3"."""
        cfg = self.run.config
        return (f"{', '.join(cfg.devices)} · {cfg.dtype} · batch {cfg.batch} · {cfg.heads} heads · d = {cfg.d} · "
                f"n {cfg.min_n}…{cfg.max_n} · median of {cfg.repeat} calls"
                + (" · cancelled" if self.run.cancelled else ""))

    def series_keys(self) -> list[Key]:
        return list(self.run.series())

    def series_points(self, key: Key, what: str = "seconds") -> tuple[list[int], list[float]]:
        """(n, value) of the measured points of a series; ``what``: "seconds" or "peak_mib"."""
        pts = [p for p in self.run.measured(key) if math.isfinite(getattr(p, what))]
        return [p.n for p in pts], [float(getattr(p, what)) for p in pts]

    def legend(self, key: Key, what: str = "seconds") -> str:
        """"naive-torch · cpu: slope 1.98" (memory: and how its peak was measured, "RSS peak")."""
        slope = self.run.slope(key, what)
        text = f"{key[1]} · {key[0]}" + (f": slope {slope:.2f}" if math.isfinite(slope) else "")
        if what == "peak_mib":
            methods = {p.peak_method for p in self.run.measured(key)}
            if methods:
                text += f" ({', '.join(sorted(METHOD_SHORT.get(m, m) for m in methods))})"
        return text

    def skipped_text(self, key: Key) -> str:
        """Why points of a series were skipped ("" when none were)."""
        return "; ".join(f"n = {p.n}: {p.skipped_reason}" for p in self.run.series().get(key, [])
                         if p.skipped_reason)

    def reference_line(self, what: str = "seconds") -> tuple[list[int], list[float]]:
        """An n² line through the slowest (or largest) series' point at its largest n, over the n of the run."""
        anchor: tuple[int, float] | None = None
        for key in self.run.series():
            ns, vs = self.series_points(key, what)
            if ns and (anchor is None or ns[-1] > anchor[0] or (ns[-1] == anchor[0] and vs[-1] > anchor[1])):
                anchor = (ns[-1], vs[-1])
        if anchor is None or anchor[1] <= 0:
            return [], []
        sizes = self.run.config.sizes()
        return sizes, [anchor[1] * (n / anchor[0]) ** 2 for n in sizes]


__all__ = ["METHOD_SHORT", "METHOD_TEXT", "RUN_STATES", "LabEvents", "ScalingLab"]
