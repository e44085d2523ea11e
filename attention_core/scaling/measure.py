"""The scaling lab's measurement engine: attention's cost against sequence length n, per device and implementation.

Implementations (``IMPLEMENTATIONS``): ``steps`` (``attention_steps``, every intermediate kept), ``naive-torch``
(matmul, softmax, matmul), ``fused`` (``attention``, the library's bulk path on torch's fused
``scaled_dot_product_attention``) and ``naive-numpy``. For each (device, implementation, n) a point is measured:
one warm-up call (excluded), one call for the peak memory, then ``repeat`` timed calls (median), with
``torch.cuda.synchronize`` before and after each timed call on CUDA. Before a point, the memory it needs is
estimated (B·h·n² elements of the weights matrix × the implementation's intermediates, ``MEMORY_FACTORS``) and the
point is skipped, with its reason, when that exceeds the limit (default: half the free memory of that device).
Out of memory is caught per point: that point says so, the series stops growing, the run goes on.

``iter_scaling(config, cancel=...)`` yields one ``MatmulLimit`` per device, then one ``PointResult`` per point
(progress, and Cancel between two calls); ``run_scaling(config)`` collects them into a ``ScalingRun`` (slopes,
readouts, CSV; ``scaling_results`` holds those and the settings). No Qt; torch is imported when a run starts.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from . import memory as mem
from .results import (
    MEMORY_FACTORS,
    MatmulLimit,
    PointResult,
    ScalingConfig,
    ScalingRun,
    dtype_refusal,
    estimate_mib,
    format_mib,
)

__all__ = ["iter_scaling", "run_scaling", "measure_point", "measure_matmul_limit", "Cancelled"]

Cancel = Callable[[], bool]


class Cancelled(Exception):
    """The caller's ``cancel()`` said stop (raised between two calls, caught by ``iter_scaling``)."""


# ====================================================================== measuring
def _check(cancel: Cancel | None) -> None:
    if cancel is not None and cancel():
        raise Cancelled


def _time_calls(fn: Callable[[], object], dev: mem.DeviceProbe, repeat: int, cancel: Cancel | None
                ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(wall-clock seconds, process CPU seconds) of each of ``repeat`` calls, the device synchronised around each."""
    times, cpu = [], []
    for _ in range(repeat):
        _check(cancel)
        dev.sync()
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        dev.sync()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return tuple(times), tuple(cpu)


def _callable(impl: str, dev: mem.DeviceProbe, cfg: ScalingConfig, n: int) -> Callable[[], object]:
    import torch

    from ..steps import attention, attention_steps

    dtype = getattr(torch, cfg.dtype)
    gen = torch.Generator().manual_seed(cfg.seed + n)
    shape = (cfg.batch, cfg.heads, n, cfg.d)
    q, k, v = (torch.randn(shape, generator=gen) for _ in range(3))
    scale = 1.0 / math.sqrt(cfg.d)
    if impl in ("steps", "naive-numpy"):
        qn, kn, vn = (t.numpy() for t in (q, k, v))
        if impl == "steps":
            return lambda: attention_steps(qn, kn, vn, device=dev.placement)
        return lambda: _naive_numpy(qn, kn, vn, scale)
    place = dev.placement
    q, k, v = (t.to(device=place, dtype=dtype) for t in (q, k, v))
    if impl == "fused":
        return lambda: attention(q, k, v, device=place)

    def naive() -> object:
        with torch.no_grad():
            w = torch.softmax((q @ k.transpose(-1, -2)) * scale, dim=-1)
            return w @ v

    return naive


def _naive_numpy(q: Any, k: Any, v: Any, scale: float) -> Any:
    import numpy as np

    s = (q @ np.swapaxes(k, -1, -2)) * np.float32(scale)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def _peak_method(impl: str, dev: mem.DeviceProbe) -> str:
    if dev.cuda and impl != "naive-numpy":
        return "cuda"
    return "tracemalloc" if impl in ("steps", "naive-numpy") else "rss"


def measure_point(cfg: ScalingConfig, dev: mem.DeviceProbe, impl: str, n: int, limit_mib: float,
                  cancel: Cancel | None = None) -> PointResult:
    """One point: the estimate against the limit, a warm-up call, a call for the peak memory, the timed calls."""
    base = PointResult(dev.name, impl, cfg.dtype, n, cfg.batch, cfg.heads, cfg.d,
                       estimate_mib=estimate_mib(impl, cfg.batch, cfg.heads, n, cfg.d, cfg.dtype), limit_mib=limit_mib)
    refusal = dtype_refusal(dev.name, impl, cfg.dtype)
    if refusal:
        return replace(base, skipped_reason=refusal)
    if base.estimate_mib > limit_mib:
        return replace(base, skipped_reason=f"needs ~{format_mib(base.estimate_mib)} (B·h·n² = "
                                            f"{cfg.batch * cfg.heads * n * n:,} weights × {MEMORY_FACTORS[impl]}) "
                                            f"> limit {format_mib(limit_mib)}")
    fn: Callable[[], object] | None = None
    oom = ""
    try:
        _check(cancel)
        fn = _callable(impl, dev, cfg, n)
        fn()  # warm-up: first-call costs (kernel choice, allocator growth) stay out of the figures
        dev.sync()
        _check(cancel)
        method = _peak_method(impl, dev)
        peak = dev.peak_mib(fn, method)
        times, cpu = _time_calls(fn, dev, cfg.repeat, cancel)
    except Cancelled:
        raise
    except (RuntimeError, MemoryError) as exc:
        if not mem.is_out_of_memory(exc):
            raise
        oom = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
    if oom:  # out of the except block: its traceback no longer holds the point's tensors
        fn = None
        dev.release()
        return replace(base, skipped_reason=f"out of memory: {oom}")
    import torch

    return replace(base, seconds=statistics.median(times), times=times, cpu_seconds=statistics.median(cpu),
                   peak_mib=peak, peak_method=method, threads=torch.get_num_threads())


def measure_matmul_limit(dev: mem.DeviceProbe, dtype: str, size: int, repeat: int,
                         cancel: Cancel | None = None) -> MatmulLimit:
    """Seconds of the fastest of several square ``size``×``size`` matmuls (warm-up excluded): the device's matmul
    limit."""
    import torch

    tdt = getattr(torch, dtype if not dtype_refusal(dev.name, "naive-torch", dtype) else "float32")
    gen = torch.Generator().manual_seed(size)
    a, b = (torch.randn(size, size, generator=gen).to(device=dev.placement, dtype=tdt) for _ in range(2))
    with torch.no_grad():
        a @ b
        dev.sync()
        times, _cpu = _time_calls(lambda: a @ b, dev, max(5, repeat), cancel)
    # a limit is what the device can do: the fastest call, not the typical one
    return MatmulLimit(dev.name, str(tdt).removeprefix("torch."), size, min(times),
                       threads=0 if dev.cuda else torch.get_num_threads())


def iter_scaling(config: ScalingConfig, cancel: Cancel | None = None
                 ) -> Iterator[PointResult | MatmulLimit]:
    """Yield each device's ``MatmulLimit`` (when ``config.matmul_limit``), then one ``PointResult`` per
    (n, device, implementation), n growing, so every series grows together and a cancelled run keeps comparable
    points. ``cancel()`` is checked between two calls; True ends the generator (nothing more is yielded)."""
    cfg = config.validate()
    probes = {name: mem.DeviceProbe(name) for name in cfg.devices}
    limits = {name: (cfg.memory_limit_mib if cfg.memory_limit_mib is not None else p.free_mib() / 2)
              for name, p in probes.items()}
    total, index = cfg.total_items, 0
    failed: dict[tuple[str, str], int] = {}
    threads_before: int | None = None
    blas_before: int | None = None
    if cfg.threads is not None:
        import torch

        threads_before = torch.get_num_threads()
        torch.set_num_threads(cfg.threads)
        blas_before = mem.set_blas_threads(cfg.threads)
    try:
        if cfg.matmul_limit:
            for name, probe in probes.items():
                size = min(max(cfg.max_n, 256), 2048 if not probe.cuda else 8192)
                index += 1
                lim = MatmulLimit(name, cfg.dtype, size, math.nan, skipped_reason="out of memory")
                try:
                    lim = measure_matmul_limit(probe, cfg.dtype, size, cfg.repeat, cancel)
                except (RuntimeError, MemoryError) as exc:
                    if not mem.is_out_of_memory(exc):
                        raise
                if lim.skipped_reason:
                    probe.release()
                yield replace(lim, index=index, total=total)
        for n in cfg.sizes():
            for name, probe in probes.items():
                for impl in cfg.impls:
                    index += 1
                    key = (name, impl)
                    if key in failed:
                        p = PointResult(name, impl, cfg.dtype, n, cfg.batch, cfg.heads, cfg.d,
                                        estimate_mib=estimate_mib(impl, cfg.batch, cfg.heads, n, cfg.d, cfg.dtype),
                                        limit_mib=limits[name],
                                        skipped_reason=f"not tried: n = {failed[key]} ran out of memory")
                    else:
                        p = measure_point(cfg, probe, impl, n, limits[name], cancel)
                        if p.skipped_reason.startswith("out of memory"):
                            failed[key] = n
                    yield replace(p, index=index, total=total)
    except Cancelled:
        return
    finally:
        if threads_before is not None:
            import torch

            torch.set_num_threads(threads_before)
        if blas_before is not None:
            mem.set_blas_threads(blas_before)


def run_scaling(config: ScalingConfig, progress: Callable[[PointResult | MatmulLimit], None] | None = None,
                cancel: Cancel | None = None) -> ScalingRun:
    """Measure every point of ``config`` (see ``iter_scaling``); ``progress(item)`` after each."""
    run = ScalingRun(config.validate())
    for item in iter_scaling(config, cancel):
        run.add(item)
        if progress is not None:
            progress(item)
    run.cancelled = cancel is not None and bool(cancel())
    return run
