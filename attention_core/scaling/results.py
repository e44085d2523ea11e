"""The scaling lab's settings, results and what derives from them (no measuring here, see ``scaling``): the
implementations and dtypes, ``ScalingConfig``, one ``PointResult`` per (device, implementation, n), a device's
``MatmulLimit``, the memory estimate, the log-log slope, and ``ScalingRun``: slopes, largest n, speed-ups, shares of
the matmul limit, the readouts and the CSV. No Qt, no torch.
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import memory as mem

__all__ = ["IMPLEMENTATIONS", "IMPL_TITLES", "DTYPES", "DTYPE_BYTES", "MEMORY_FACTORS", "CSV_COLUMNS", "MIB",
           "ScalingConfig", "PointResult", "MatmulLimit", "ScalingRun", "fit_slope", "attention_flops",
           "estimate_mib", "dtype_refusal", "format_mib", "weights_readout"]

IMPLEMENTATIONS = ("steps", "naive-torch", "fused", "naive-numpy")
IMPL_TITLES = {"steps": "step by step (every intermediate kept)", "naive-torch": "naive torch (matmul·softmax·matmul)",
               "fused": "fused SDPA (library bulk path)", "naive-numpy": "naive numpy"}
DTYPES = ("float32", "float16", "bfloat16")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
MEMORY_FACTORS = {"steps": 4, "naive-torch": 3, "fused": 1, "naive-numpy": 3}
"""Copies of the n×n weights matrix each implementation holds at its peak: the step path keeps scores, scaled,
exp and weights; the naive paths scores, exp and weights; the fused kernel works in tiles (1 = a safe margin)."""
CSV_COLUMNS = ("device", "implementation", "dtype", "n", "batch", "heads", "d", "threads", "seconds", "cpu_seconds",
               "peak_mib", "peak_method", "estimate_mib", "limit_mib", "gflops", "share_of_matmul_limit",
               "skipped_reason")
MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class ScalingConfig:
    devices: tuple[str, ...] = ("cpu",)
    impls: tuple[str, ...] = IMPLEMENTATIONS
    dtype: str = "float32"
    batch: int = 1
    heads: int = 4
    d: int = 64
    min_n: int = 16
    max_n: int = 1024
    repeat: int = 5
    memory_limit_mib: float | None = None
    """Skip points estimated above this; None = half the free memory of each device when the run starts."""
    matmul_limit: bool = True
    seed: int = 0
    threads: int | None = None
    """CPU threads of torch and of numpy's OpenBLAS during the run (None: leave both as they are). 1 is the robust
    choice on a busy machine: a parallel kernel waits for its slowest thread, and a core taken by another process
    (or by the other library's spinning threads) stalls it."""

    def validate(self) -> ScalingConfig:
        """Return self, or raise ``ValueError`` naming the setting that is wrong."""
        if not self.devices:
            raise ValueError("devices: choose at least one device")
        for dev in self.devices:
            if dev != "cpu" and not dev.startswith("cuda"):
                raise ValueError(f"devices: unknown device {dev!r} (cpu, cuda:N)")
        if not self.impls:
            raise ValueError("impls: choose at least one implementation")
        for impl in self.impls:
            if impl not in IMPLEMENTATIONS:
                raise ValueError(f"impls: unknown implementation {impl!r}; choose from {', '.join(IMPLEMENTATIONS)}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype: {self.dtype!r} is not one of {', '.join(DTYPES)}")
        for name, lo, hi in (("batch", 1, 64), ("heads", 1, 64), ("d", 1, 1024), ("repeat", 1, 100)):
            value = getattr(self, name)
            if not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"{name}: expected an integer in [{lo}, {hi}], got {value!r}")
        if not isinstance(self.min_n, int) or self.min_n < 1:
            raise ValueError(f"min_n: expected an integer >= 1, got {self.min_n!r}")
        if not isinstance(self.max_n, int) or not self.min_n <= self.max_n <= 1 << 17:
            raise ValueError(f"max_n: expected an integer in [{self.min_n}, {1 << 17}], got {self.max_n!r}")
        if self.threads is not None and (not isinstance(self.threads, int) or not 1 <= self.threads <= 1024):
            raise ValueError(f"threads: expected an integer >= 1 (or None), got {self.threads!r}")
        if self.memory_limit_mib is not None and not (self.memory_limit_mib > 0):
            raise ValueError(f"memory_limit_mib: expected a positive number, got {self.memory_limit_mib!r}")
        return self

    def sizes(self) -> list[int]:
        """n from ``min_n`` doubling up to ``max_n`` (``max_n`` itself included)."""
        out, n = [], self.min_n
        while n < self.max_n:
            out.append(n)
            n *= 2
        return [*out, self.max_n]

    @property
    def total_points(self) -> int:
        return len(self.devices) * len(self.impls) * len(self.sizes())

    @property
    def total_items(self) -> int:
        return self.total_points + (len(self.devices) if self.matmul_limit else 0)


@dataclass(frozen=True)
class PointResult:
    device: str
    impl: str
    dtype: str
    n: int
    batch: int
    heads: int
    d: int
    seconds: float = math.nan
    """Median seconds of the timed calls (warm-up excluded)."""
    times: tuple[float, ...] = ()
    cpu_seconds: float = math.nan
    """Median CPU time of the process (all its threads) per timed call: what the computation cost, whether or not
    another program held a core meanwhile (on a GPU it is the launch and wait overhead only)."""
    peak_mib: float = math.nan
    peak_method: str = ""
    estimate_mib: float = math.nan
    limit_mib: float = math.nan
    skipped_reason: str = ""
    threads: int = 0
    """torch's CPU threads when it was measured (0: not measured)."""
    index: int = 0
    total: int = 0

    @property
    def measured(self) -> bool:
        return not self.skipped_reason and math.isfinite(self.seconds)

    @property
    def gflops(self) -> float:
        """Matmul work of one call (``attention_flops``) per second, in GFLOP/s; nan when skipped."""
        if not self.measured or self.seconds <= 0:
            return math.nan
        return attention_flops(self.batch, self.heads, self.n, self.d) / self.seconds / 1e9


@dataclass(frozen=True)
class MatmulLimit:
    """The machine's matmul speed on one device: a square ``size``×``size`` matmul, the fastest of the timed calls."""

    device: str
    dtype: str
    size: int
    seconds: float
    index: int = 0
    total: int = 0
    skipped_reason: str = ""
    threads: int = 0

    @property
    def gflops(self) -> float:
        return 2.0 * self.size ** 3 / self.seconds / 1e9 if self.seconds > 0 and not self.skipped_reason else math.nan


def attention_flops(batch: int, heads: int, n: int, d: int) -> float:
    """Multiply-adds ×2 of the two matmuls (Q·Kᵀ and weights·V): 4·B·h·n²·d (softmax not counted)."""
    return 4.0 * batch * heads * n * n * d


def estimate_mib(impl: str, batch: int, heads: int, n: int, d: int, dtype: str) -> float:
    """Memory one call needs at its peak: B·h·n² weights × ``MEMORY_FACTORS[impl]`` plus q, k, v and the output."""
    nbytes = DTYPE_BYTES[dtype]
    return (MEMORY_FACTORS[impl] * batch * heads * n * n + 4 * batch * heads * n * d) * nbytes / MIB


def fit_slope(ns: list[int] | tuple[int, ...], values: list[float] | tuple[float, ...]) -> float:
    """Least-squares slope of log(value) against log(n) over the upper half of the n measured (2 = quadratic);
    nan with fewer than two usable points."""
    pts = sorted((n, v) for n, v in zip(ns, values) if n > 0 and math.isfinite(v) and v > 0)
    if len(pts) < 2:
        return math.nan
    pts = pts[max(0, min(len(pts) // 2, len(pts) - 2)):]
    xs, ys = [math.log(p[0]) for p in pts], [math.log(p[1]) for p in pts]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return math.nan if sxx == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def format_mib(mib: float) -> str:
    if mib >= 1024:
        return f"{mib / 1024:.3g} GiB"
    if mib >= 1:
        return f"{mib:.3g} MiB"
    return f"{mib * 1024:.3g} KiB"


def weights_readout(n: int, dtype: str = "float32") -> str:
    """"at n = 4096 the weights matrix alone is 64 MiB per head in float32"."""
    return f"at n = {n} the weights matrix alone is {format_mib(n * n * DTYPE_BYTES[dtype] / MIB)} per head in {dtype}"


def dtype_refusal(device: str, impl: str, dtype: str) -> str:
    """Why ``impl`` cannot run ``dtype`` on ``device`` ("" when it can)."""
    if impl == "naive-numpy" and device != "cpu":
        return "numpy runs on the CPU only"
    if dtype == "float32":
        return ""
    if impl in ("steps", "naive-numpy"):
        return f"{dtype}: the {impl} path computes in numpy, float32 only"
    if device == "cpu":
        return f"{dtype} is measured on CUDA only (CPU half-precision matmul is emulated, not a fair figure)"
    if dtype == "bfloat16" and not mem.bf16_supported(device):
        return f"bfloat16 is not supported on {device}"
    return ""


@dataclass
class ScalingRun:
    """What a run measured so far; derives slopes, the largest n, speed-ups, shares and the readouts."""

    config: ScalingConfig
    points: list[PointResult] = field(default_factory=list)
    limits: dict[str, MatmulLimit] = field(default_factory=dict)
    cancelled: bool = False

    def add(self, item: PointResult | MatmulLimit) -> None:
        if isinstance(item, MatmulLimit):
            self.limits[item.device] = item
        else:
            self.points.append(item)

    def series(self) -> dict[tuple[str, str], list[PointResult]]:
        out: dict[tuple[str, str], list[PointResult]] = {}
        for p in self.points:
            out.setdefault((p.device, p.impl), []).append(p)
        return out

    def measured(self, key: tuple[str, str]) -> list[PointResult]:
        return [p for p in self.series().get(key, []) if p.measured]

    def slope(self, key: tuple[str, str], what: str = "seconds") -> float:
        pts = self.measured(key)
        return fit_slope([p.n for p in pts], [getattr(p, what) for p in pts])

    def largest_n(self, key: tuple[str, str]) -> int | None:
        pts = self.measured(key)
        return max(p.n for p in pts) if pts else None

    def share(self, key: tuple[str, str]) -> float:
        """GFLOP/s at the series' largest n over the device's matmul limit (nan when either is missing)."""
        pts, limit = self.measured(key), self.limits.get(key[0])
        if not pts or limit is None or not math.isfinite(limit.gflops):
            return math.nan
        return max(pts, key=lambda p: p.n).gflops / limit.gflops

    def speedup(self, device: str, fast: str = "fused", slow: str = "naive-torch") -> tuple[int, float] | None:
        """(n, slow seconds / fast seconds) at the largest n both measured on ``device``."""
        a = {p.n: p.seconds for p in self.measured((device, fast))}
        b = {p.n: p.seconds for p in self.measured((device, slow))}
        common = sorted(set(a) & set(b))
        return (common[-1], b[common[-1]] / a[common[-1]]) if common else None

    def readouts(self) -> list[str]:
        """The lines the Lab shows: the weights matrix's size, then per series its largest n, slope and share,
        then the fused-over-naive speed-up per device."""
        cfg = self.config
        top = max((p.n for p in self.points if p.measured), default=cfg.max_n)
        lines = [weights_readout(top, cfg.dtype) + f" (× {cfg.batch * cfg.heads} for batch {cfg.batch} · "
                                                   f"{cfg.heads} heads)"]
        for key in self.series():
            n = self.largest_n(key)
            if n is None:
                reasons = {p.skipped_reason for p in self.series()[key]}
                lines.append(f"{key[1]} on {key[0]}: nothing measured ({'; '.join(sorted(reasons))[:120]})")
                continue
            slope, share = self.slope(key), self.share(key)
            text = f"{key[1]} on {key[0]}: largest n = {n}"
            if math.isfinite(slope):
                text += f", time slope {slope:.2f}"
            if math.isfinite(share):
                text += f", {share:.0%} of the matmul limit at n = {n}"
            skipped = [p for p in self.series()[key] if p.skipped_reason]
            if skipped:
                text += f"; n = {skipped[0].n} skipped: {skipped[0].skipped_reason}"
            lines.append(text)
        for dev in cfg.devices:
            for slow in ("naive-torch", "steps", "naive-numpy"):
                sp = self.speedup(dev, "fused", slow)
                if sp is not None:
                    how = f"{sp[1]:.1f}× faster than" if sp[1] >= 1 else f"{1 / sp[1]:.1f}× slower than"
                    lines.append(f"on {dev} fused is {how} {slow} at n = {sp[0]} (the largest n both reached)")
                    break
        for dev, lim in self.limits.items():
            if math.isfinite(lim.gflops):
                threads = f", {lim.threads} thread{'s' if lim.threads > 1 else ''}" if lim.threads else ""
                lines.append(f"matmul limit on {dev}: {lim.gflops:.1f} GFLOP/s ({lim.size}×{lim.size}, {lim.dtype}"
                             f"{threads})")
        return lines

    def summary(self) -> dict[str, Any]:
        """The CLI's JSON line: per series its slopes and largest n, the matmul limits, the speed-ups."""
        series = {}
        for key in self.series():
            slope, mslope, cslope = self.slope(key), self.slope(key, "peak_mib"), self.slope(key, "cpu_seconds")
            share = self.share(key)
            series[f"{key[0]}/{key[1]}"] = {
                "slope": round(slope, 3) if math.isfinite(slope) else None,
                "cpu_slope": round(cslope, 3) if math.isfinite(cslope) else None,
                "memory_slope": round(mslope, 3) if math.isfinite(mslope) else None,
                "largest_n": self.largest_n(key),
                "share_of_matmul_limit": round(share, 4) if math.isfinite(share) else None}
        speedups = {}
        for dev in self.config.devices:
            sp = self.speedup(dev)
            if sp is not None:
                speedups[dev] = {"n": sp[0], "fused_over_naive_torch": round(sp[1], 3)}
        return {"series": series, "speedup": speedups, "cancelled": self.cancelled,
                "matmul_gflops": {d: (round(m.gflops, 2) if math.isfinite(m.gflops) else None)
                                  for d, m in self.limits.items()}}

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for p in self.points:
            limit = self.limits.get(p.device)
            share = p.gflops / limit.gflops if limit is not None and math.isfinite(limit.gflops) else math.nan
            row = {k: v for k, v in asdict(p).items() if k in CSV_COLUMNS}
            row.update(implementation=p.impl, gflops=p.gflops, share_of_matmul_limit=share)
            rows.append({k: ("" if isinstance(row[k], float) and math.isnan(row[k]) else row[k]) for k in CSV_COLUMNS})
        return rows

    def write_csv(self, path: str | Path) -> Path:
        """``#`` lines naming the run (devices, implementations, dtype, batch, heads, d), the column names, then one
        row per point; ``numpy.genfromtxt(path, comments='#', delimiter=',')`` reads the numbers (the names' row
        and the text columns as nan)."""
        from ..fileio import atomic_write

        c = self.config
        comments = ["# Attention Playground: scaling lab, time and memory against n, one row per point",
                    f"# devices: {', '.join(c.devices)}", f"# implementations: {', '.join(c.impls)}",
                    f"# dtype: {c.dtype}", f"# batch: {c.batch}", f"# heads: {c.heads}", f"# d: {c.d}",
                    f"# n: {c.min_n} to {c.max_n}, repeats: {c.repeat}"]

        def write(fh: Any) -> None:
            fh.writelines(f"{line}\n" for line in comments)
            w = csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
            w.writeheader()
            w.writerows(self.rows())

        atomic_write(Path(path), write, text=True)
        return Path(path)
