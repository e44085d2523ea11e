"""Attention cost against sequence length n (h=4 heads, d=64), CPU and CUDA where present.

Compares this library's bulk path (``attention_core.attention``), its step-by-step path (``attention_steps``,
every intermediate kept), torch's fused ``scaled_dot_product_attention`` and a naive numpy implementation.
Prints median time, peak extra memory (RSS high-water mark, CPU) and the fitted log-log slope over
n >= 256, where the O(n^2) term dominates. Then the tiny-matrix latency that a live edit costs.

    .venv/bin/python benchmarks/bench_attention.py [--max-n 4096] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from attention_core import attention, attention_steps, available_devices


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM (peak RSS) to the current RSS
    except OSError:
        pass


def measure(fn: Callable[[], object], repeat: int, sync: Callable[[], None] = lambda: None) -> tuple[float, float]:
    """(median seconds, peak extra MiB of RSS during one call)."""
    fn()
    sync()
    _reset_peak()
    base = _rss_kib("VmRSS")
    fn()
    sync()
    peak = max(_rss_kib("VmHWM") - base, 0) / 1024
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), peak


def interleaved(fa: Callable[[], object], fb: Callable[[], object], repeat: int,
                sync: Callable[[], None] = lambda: None) -> tuple[float, float]:
    """Median times of two functions measured in alternation, so a noisy neighbour hits both alike."""
    ta, tb = [], []
    for i in range(repeat):
        for f, out in ((fa, ta), (fb, tb)) if i % 2 == 0 else ((fb, tb), (fa, ta)):
            t0 = time.perf_counter()
            f()
            sync()
            out.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def naive_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def slope(ns: list[int], ts: list[float]) -> float:
    pts = [(n, t) for n, t in zip(ns, ts) if n >= 256]
    if len(pts) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def bench_scaling(device: str, sizes: list[int], repeat: int) -> None:
    h, d = 4, 64
    sync = (lambda: torch.cuda.synchronize()) if device.startswith("cuda") else (lambda: None)
    print(f"\n## attention over n, h={h}, d={d}, float32, device={device}, torch threads={torch.get_num_threads()}")
    print(f"{'n':>6} | {'library bulk':>14} | {'fused SDPA':>12} | {'bulk/SDPA':>9} | {'steps path':>12} | "
          f"{'naive numpy':>12} | {'peak MiB bulk/SDPA/steps/numpy':>32}")
    cols: dict[str, list[float]] = {"bulk": [], "sdpa": [], "steps": [], "numpy": []}
    for n in sizes:
        gen = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(h, n, d, generator=gen).to(device) for _ in range(3))
        qn, kn, vn = (t.cpu().numpy() for t in (q, k, v))
        rep = repeat if n <= 1024 else max(2, repeat // 2)
        _, m_bulk = measure(lambda: attention(q, k, v, device=device), 1, sync)
        _, m_sdpa = measure(lambda: F.scaled_dot_product_attention(q, k, v), 1, sync)
        t_bulk, t_sdpa = interleaved(lambda: attention(q, k, v, device=device),
                                     lambda: F.scaled_dot_product_attention(q, k, v), 2 * rep + 1, sync)
        t_steps, m_steps = measure(lambda: attention_steps(q, k, v, device=device), max(2, rep // 2), sync)
        t_np, m_np = measure(lambda: naive_numpy(qn, kn, vn), max(2, rep // 2))
        for key, val in zip(cols, (t_bulk, t_sdpa, t_steps, t_np)):
            cols[key].append(val)
        mem = "n/a" if device != "cpu" else f"{m_bulk:.0f}/{m_sdpa:.0f}/{m_steps:.0f}/{m_np:.0f}"
        print(f"{n:>6} | {t_bulk * 1e3:11.3f} ms | {t_sdpa * 1e3:9.3f} ms | {t_bulk / t_sdpa:8.2f}x | "
              f"{t_steps * 1e3:9.3f} ms | {t_np * 1e3:9.3f} ms | {mem:>32}")
    print("log-log slope over n>=256 (2 = O(n^2)): " + ", ".join(
        f"{k} {slope(sizes, v):.2f}" for k, v in cols.items()))
    big = [(n, b / s) for n, b, s in zip(sizes, cols["bulk"], cols["sdpa"]) if n >= 256]
    if big:
        worst = max(r for _, r in big)
        print(f"library bulk / fused SDPA at n>=256: worst {worst:.3f}x (target <= 1.1x)")


def bench_tiny(repeat: int) -> None:
    from attention_core.steps import _prepare, _steps_torch

    print("\n## live-edit latency: attention_steps for one small matrix, all steps, validation included")
    print(f"{'Lq x d':>8} | {'numpy path median':>17} | {'p95':>8} | {'torch CPU path median':>21} | {'p95':>8}")
    for lq, d in [(3, 4), (4, 8), (8, 16), (16, 32), (16, 64)]:
        rng = np.random.default_rng(0)
        q, k, v = rng.normal(size=(lq, d)), rng.normal(size=(lq, d)), rng.normal(size=(lq, d))

        def torch_path() -> None:
            _steps_torch(*_prepare(q, k, v, None, None), "cpu")

        samples_np, samples_t = [], []
        for _ in range(max(repeat * 100, 500)):
            t0 = time.perf_counter()
            attention_steps(q, k, v)
            samples_np.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            torch_path()
            samples_t.append(time.perf_counter() - t0)
        print(f"{lq:>3} x {d:<3} | {statistics.median(samples_np) * 1e6:14.1f} us | "
              f"{np.percentile(samples_np, 95) * 1e6:5.1f} us | {statistics.median(samples_t) * 1e6:18.1f} us | "
              f"{np.percentile(samples_t, 95) * 1e6:5.1f} us")
    print("(the playground's live path is attention_steps on CPU = the numpy path)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-n", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    sizes = [n for n in (16, 64, 256, 512, 1024, 2048, 4096) if n <= args.max_n]
    for device in available_devices():
        bench_scaling(device, sizes, args.repeat)
    bench_tiny(args.repeat)


if __name__ == "__main__":
    main()
