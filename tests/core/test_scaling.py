"""The scaling lab's engine (attention_core.scaling): sizes, estimates, slopes, skipping, out of memory, the CUDA
path (monkeypatched onto the CPU), cancelling, readouts and the CSV. Real-GPU checks are marked ``cuda``."""

from __future__ import annotations

import csv
import math
import statistics
import threading
import time

import numpy as np
import pytest
import torch
from hang_guard import HANG_GUARD_S

from attention_core.scaling import measure as scaling
from attention_core.scaling import memory as scaling_memory
from attention_core.scaling.measure import iter_scaling, run_scaling
from attention_core.scaling.results import (
    CSV_COLUMNS,
    MatmulLimit,
    PointResult,
    ScalingConfig,
    ScalingRun,
    estimate_mib,
    fit_slope,
    weights_readout,
)

MIB = 1024 * 1024


def test_config_sizes_and_refusals():
    assert ScalingConfig(min_n=16, max_n=512).sizes() == [16, 32, 64, 128, 256, 512]
    assert ScalingConfig(min_n=16, max_n=100).sizes() == [16, 32, 64, 100]
    for bad, word in (({"impls": ()}, "impls"), ({"impls": ("magic",)}, "magic"), ({"dtype": "int8"}, "dtype"),
                      ({"heads": 0}, "heads"), ({"max_n": 8}, "max_n"), ({"devices": ("tpu",)}, "tpu"),
                      ({"memory_limit_mib": -1.0}, "memory_limit_mib"), ({"threads": 0}, "threads")):
        with pytest.raises(ValueError, match=word):
            ScalingConfig(**bad).validate()


def test_estimate_and_weights_readout_are_computed():
    # B·h·n² weights × factor + q, k, v, output, in bytes -> MiB, by hand
    assert estimate_mib("naive-torch", 2, 4, 1024, 64, "float32") == pytest.approx(
        (3 * 2 * 4 * 1024 ** 2 + 4 * 2 * 4 * 1024 * 64) * 4 / MIB)
    assert estimate_mib("steps", 1, 1, 256, 8, "float16") == pytest.approx((4 * 256 ** 2 + 4 * 256 * 8) * 2 / MIB)
    assert weights_readout(4096) == "at n = 4096 the weights matrix alone is 64 MiB per head in float32"
    assert weights_readout(512, "bfloat16") == "at n = 512 the weights matrix alone is 512 KiB per head in bfloat16"


def test_fit_slope_uses_the_upper_half_of_n():
    ns = [16, 32, 64, 128, 256, 512]
    ts = [1e-3 + 1e-9 * n ** 2 for n in ns]  # a constant overhead dominates small n
    upper = ns[3:]
    ref = np.polyfit(np.log(upper), np.log([1e-3 + 1e-9 * n ** 2 for n in upper]), 1)[0]
    assert fit_slope(ns, ts) == pytest.approx(ref)
    assert fit_slope(ns, [3.0 * n ** 2 for n in ns]) == pytest.approx(2.0)
    assert math.isnan(fit_slope([16], [1.0]))
    assert fit_slope([16, 32, 64], [1.0, float("nan"), 16.0]) == pytest.approx(2.0)  # unusable points dropped


def test_small_cpu_run_measures_every_point_consistently(tmp_path):
    cfg = ScalingConfig(max_n=128, min_n=32, repeat=3, heads=2, d=16, threads=1)
    items = list(iter_scaling(cfg))
    assert isinstance(items[0], MatmulLimit) and items[0].size == 256
    assert items[0].gflops == pytest.approx(2 * 256 ** 3 / items[0].seconds / 1e9)
    points = [p for p in items if isinstance(p, PointResult)]
    assert [p.index for p in items] == list(range(1, cfg.total_items + 1))
    assert len(points) == 3 * 4 and all(p.measured for p in points)
    for p in points:
        assert len(p.times) == 3 and p.seconds == statistics.median(p.times)
        assert p.gflops == pytest.approx(4 * 2 * p.n ** 2 * 16 / p.seconds / 1e9)
        assert p.threads == 1
        assert p.peak_method == {"steps": "tracemalloc", "naive-numpy": "tracemalloc"}.get(p.impl, "rss")
    weights_mib = {p.n: 2 * p.n ** 2 * 4 / MIB for p in points}
    for p in points:  # tracemalloc is exact: the numpy paths hold several n×n float32 matrices at once
        if p.impl == "naive-numpy":
            assert p.peak_mib >= 2 * weights_mib[p.n]
        if p.impl == "steps":
            assert p.peak_mib >= 4 * weights_mib[p.n]
    run = ScalingRun(cfg)
    for it in items:
        run.add(it)
    path = run.write_csv(tmp_path / "r.csv")
    rows = list(csv.DictReader(ln for ln in path.open() if not ln.startswith("#")))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 12
    first = next(r for r in rows if r["implementation"] == "fused" and r["n"] == "64")
    ref = next(p for p in points if p.impl == "fused" and p.n == 64)
    assert float(first["seconds"]) == ref.seconds and float(first["peak_mib"]) == ref.peak_mib
    assert float(first["share_of_matmul_limit"]) == pytest.approx(ref.gflops / items[0].gflops)


def test_over_limit_points_are_skipped_with_their_reason():
    cfg = ScalingConfig(max_n=512, min_n=64, repeat=1, heads=1, d=8, memory_limit_mib=1.5, matmul_limit=False,
                        impls=("naive-numpy", "fused"))
    run = run_scaling(cfg)
    for p in run.points:
        need = estimate_mib(p.impl, 1, 1, p.n, 8, "float32")
        if need > 1.5:
            assert not p.measured and p.skipped_reason.startswith("needs ~") and "> limit 1.5 MiB" in p.skipped_reason
            assert f"{p.n * p.n:,} weights" in p.skipped_reason
        else:
            assert p.measured, p
    assert run.largest_n(("cpu", "naive-numpy")) == 256  # 3·512²·4 B = 3 MiB > 1.5 MiB; 3·256²·4 B = 0.75 MiB
    assert run.largest_n(("cpu", "fused")) == 512
    skip = next(p for p in run.points if p.impl == "naive-numpy" and p.n == 512)
    assert "naive-numpy on cpu: largest n = 256, time slope" in " ".join(run.readouts())
    assert f"; n = 512 skipped: {skip.skipped_reason}" in " ".join(run.readouts())


def _failing_at(monkeypatch, impl: str, n_fail: int, exc: Exception, calls: list | None = None):
    real = scaling._callable

    def fake(impl_, dev, cfg, n):
        fn = real(impl_, dev, cfg, n)
        if impl_ == impl and n >= n_fail:
            def boom():
                raise exc
            return boom
        if calls is not None:
            def counted():
                calls.append((impl_, n))
                return fn()
            return counted
        return fn

    monkeypatch.setattr(scaling, "_callable", fake)


def test_simulated_cuda_oom_is_reported_and_the_run_continues(monkeypatch):
    released = []
    monkeypatch.setattr(scaling_memory.DeviceProbe, "release", lambda self: released.append(self.name))
    _failing_at(monkeypatch, "naive-torch", 64,
                torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)"))
    run = run_scaling(ScalingConfig(max_n=256, min_n=32, repeat=1, heads=1, d=8, matmul_limit=False,
                                    impls=("naive-torch", "fused")))
    naive = {p.n: p for p in run.series()[("cpu", "naive-torch")]}
    assert naive[32].measured
    assert naive[64].skipped_reason == "out of memory: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)"
    assert naive[128].skipped_reason == naive[256].skipped_reason == "not tried: n = 64 ran out of memory"
    assert [p.n for p in run.measured(("cpu", "fused"))] == [32, 64, 128, 256]  # the other series went on
    assert released == ["cpu"]
    # an error that is not out of memory is not swallowed
    _failing_at(monkeypatch, "fused", 32, RuntimeError("shape mismatch"))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        run_scaling(ScalingConfig(max_n=32, min_n=32, repeat=1, matmul_limit=False, impls=("fused",)))


def test_cuda_path_synchronises_and_reads_cuda_peaks(monkeypatch):
    """The CUDA path run on the CPU: the device's tensors are placed on the CPU, torch.cuda is faked and every
    call recorded, so the order of warm-up, peak reset, synchronisation and timing can be checked."""
    log: list[str] = []
    allocated = {"now": 1000 * MIB, "peak": 0}
    monkeypatch.setattr(scaling_memory, "placement", lambda name: "cpu")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (6000 * MIB, 8000 * MIB))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: log.append("reset"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: allocated["now"])
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: allocated["now"] + 3 * MIB)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    real = scaling._callable

    def counted(impl, dev, cfg, n):
        fn = real(impl, dev, cfg, n)

        def call():
            log.append("call")
            return fn()
        return call

    monkeypatch.setattr(scaling, "_callable", counted)
    cfg = ScalingConfig(devices=("cuda:0",), impls=("naive-torch", "fused", "naive-numpy"), dtype="float16",
                        max_n=64, min_n=64, repeat=3, heads=1, d=8, matmul_limit=False)
    run = run_scaling(cfg)
    pts = {p.impl: p for p in run.points}
    assert pts["naive-numpy"].skipped_reason == "numpy runs on the CPU only"
    for impl in ("naive-torch", "fused"):
        p = pts[impl]
        assert p.measured and p.peak_method == "cuda" and p.peak_mib == pytest.approx(3.0)
        assert p.limit_mib == pytest.approx(3000.0)  # half the free memory mem_get_info reported
        assert p.dtype == "float16"
    # per point: warm-up call, sync; sync, reset, the peak call, sync; then sync, call, sync per timed call
    per_point = ["call", "sync", "sync", "reset", "call", "sync"] + ["sync", "call", "sync"] * 3
    assert log == per_point * 2
    assert "bfloat16 is not supported on cuda:0" in scaling.dtype_refusal("cuda:0", "fused", "bfloat16")
    assert "CUDA only" in scaling.dtype_refusal("cpu", "fused", "float16")


def test_cancel_is_honoured_at_the_next_call_even_inside_a_point(monkeypatch):
    """Cancel is checked between two calls: once it says stop, no new call starts (one already in flight may end),
    and the point in flight is dropped. (How soon that is on this machine: benchmarks/bench_responsiveness.py.)"""
    started: list[bool] = []  # one entry per call started: was cancel already set?
    first = threading.Event()
    stop = threading.Event()

    def slow(impl, dev, cfg, n):
        def call():
            started.append(stop.is_set())
            first.set()
            time.sleep(0.05)

        return call

    monkeypatch.setattr(scaling, "_callable", slow)
    got: list[object] = []
    cfg = ScalingConfig(max_n=64, min_n=64, repeat=100, matmul_limit=False, impls=("naive-torch",))  # ~5 s
    worker = threading.Thread(target=lambda: got.extend(iter_scaling(cfg, cancel=stop.is_set)))
    worker.start()
    assert first.wait(HANG_GUARD_S)
    stop.set()
    worker.join(HANG_GUARD_S)
    assert not worker.is_alive()
    assert started.count(True) <= 1, started  # the next check stopped it, not the point's end
    assert got == []  # the point in flight was abandoned, not reported half-measured
    # and run_scaling says it was cancelled
    assert run_scaling(cfg, cancel=lambda: True).cancelled


def test_readouts_and_summary_follow_the_points():
    cfg = ScalingConfig(max_n=512, min_n=128, impls=("naive-torch", "fused"))
    run = ScalingRun(cfg)
    run.add(MatmulLimit("cpu", "float32", 512, 2 * 512 ** 3 / 100e9))  # 100 GFLOP/s
    for n, slow, fast in ((128, 1e-3, 5e-4), (256, 4e-3, 1e-3), (512, 16e-3, 4e-3)):
        run.add(PointResult("cpu", "naive-torch", "float32", n, 1, 4, 64, seconds=slow, times=(slow,)))
        run.add(PointResult("cpu", "fused", "float32", n, 1, 4, 64, seconds=fast, times=(fast,)))
    lines = run.readouts()
    assert lines[0].startswith("at n = 512 the weights matrix alone is 1 MiB per head in float32")
    share = 4 * 4 * 512 ** 2 * 64 / 16e-3 / 1e9 / 100  # GFLOP/s at n = 512 over the limit
    assert f"naive-torch on cpu: largest n = 512, time slope 2.00, {share:.0%} of the matmul limit" in lines[1]
    assert "on cpu fused is 4.0× faster than naive-torch at n = 512" in " ".join(lines)
    s = run.summary()
    assert s["series"]["cpu/fused"]["largest_n"] == 512
    assert s["series"]["cpu/fused"]["slope"] == pytest.approx(fit_slope([256, 512], [1e-3, 4e-3]), abs=1e-3)
    assert s["speedup"]["cpu"] == {"n": 512, "fused_over_naive_torch": 4.0}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_real_cuda_run():
    cfg = ScalingConfig(devices=("cuda:0",), impls=("naive-torch", "fused", "steps"), dtype="float32",
                        max_n=1024, min_n=256, repeat=3)
    run = run_scaling(cfg)
    for key in run.series():
        pts = run.measured(key)
        assert [p.n for p in pts] == [256, 512, 1024]
        assert all(p.peak_method == "cuda" and p.peak_mib > 0 for p in pts)
    big = {p.impl: p for p in run.points if p.n == 1024}
    weights = 4 * 1024 ** 2 * 4 / MIB
    assert big["naive-torch"].peak_mib >= 2 * weights > big["fused"].peak_mib
    half = run_scaling(ScalingConfig(devices=("cuda:0",), impls=("fused",), dtype="float16", max_n=512,
                                     min_n=512, repeat=2, matmul_limit=False))
    assert half.points[0].measured
