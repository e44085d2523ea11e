"""What the scaling lab asks of a device: synchronise, free memory, peak memory of one call, out-of-memory.

Peak memory of one call, by method (the lab says which it used):

- ``cuda``: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, minus what was allocated before.
- ``rss`` (CPU, torch): the resident-set high-water mark (``VmHWM``), reset through ``/proc/self/clear_refs``
  after ``malloc_trim`` gave freed heap back to the system, minus the resident set before the call.
- ``tracemalloc`` (CPU, numpy): the traced peak of the call (numpy reports its buffers to ``tracemalloc``).
"""

from __future__ import annotations

import ctypes
import math
import sys
import tracemalloc
from collections.abc import Callable

MIB = 1024.0 * 1024.0


def placement(name: str) -> str:
    """Where a device's tensors go (the device's own name; tests replace this to run the CUDA path on the CPU)."""
    return name


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_hwm() -> bool:
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed heap back to the system, so reuse counts again
        except (OSError, AttributeError):
            pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current resident set
        return True
    except OSError:
        return False


def available_mib() -> float:
    """MemAvailable of /proc/meminfo in MiB (psutil-free); ``inf`` where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return math.inf


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's ``OutOfMemoryError`` (CUDA), a CPU allocator failure, or ``MemoryError``."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    if "out of memory" in text or "can't allocate memory" in text or "not enough memory" in text:
        return True
    try:
        import torch

        return isinstance(exc, torch.cuda.OutOfMemoryError)
    except ImportError:  # pragma: no cover - torch is a dependency
        return False


def bf16_supported(device: str) -> bool:
    import torch

    try:
        return bool(torch.cuda.is_bf16_supported())
    except (RuntimeError, AssertionError):
        return False


_BLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads")
_BLAS_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads")


def _openblas() -> ctypes.CDLL | None:
    """numpy's OpenBLAS, already loaded into this process (found in /proc/self/maps), or None."""
    import numpy  # noqa: F401  (loads its BLAS)

    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line and ".so" in line.split()[-1]}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if any(hasattr(lib, name) for name in _BLAS_SETTERS):
            return lib
    return None


def set_blas_threads(n: int) -> int | None:
    """Set numpy's OpenBLAS threads to ``n``; the number before, or None where it cannot be set (another BLAS,
    not Linux). torch's own threads are ``torch.set_num_threads``: with both at 1 nothing waits for a thread that
    another process's work (or the other library's spinning threads) took off the core."""
    lib = _openblas()
    if lib is None:
        return None
    getter = next((getattr(lib, g) for g in _BLAS_GETTERS if hasattr(lib, g)), None)
    before = int(getter()) if getter is not None else None
    setter = next(getattr(lib, name) for name in _BLAS_SETTERS if hasattr(lib, name))
    setter(ctypes.c_int(int(n)) if "64_" not in setter.__name__ else ctypes.c_longlong(int(n)))
    return before


class DeviceProbe:
    """One device as the lab measures it (``name``: "cpu" or "cuda:N")."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cuda = name.startswith("cuda")
        self.placement = placement(name)

    def sync(self) -> None:
        """Wait for the device's queued work (CUDA runs asynchronously; the CPU needs nothing)."""
        if self.cuda:
            import torch

            torch.cuda.synchronize(self.name)

    def free_mib(self) -> float:
        if self.cuda:
            import torch

            return torch.cuda.mem_get_info(self.name)[0] / MIB
        return available_mib()

    def release(self) -> None:
        """After out of memory: give the cached blocks back so the next series starts clean."""
        import gc

        gc.collect()
        if self.cuda:
            import torch

            torch.cuda.empty_cache()

    def peak_mib(self, fn: Callable[[], object], method: str) -> float:
        """Extra memory at the peak of one ``fn()`` call, measured by ``method`` (see the module docstring)."""
        if method == "cuda":
            import torch

            self.sync()
            torch.cuda.reset_peak_memory_stats(self.name)
            before = torch.cuda.memory_allocated(self.name)
            fn()
            self.sync()
            return max(torch.cuda.max_memory_allocated(self.name) - before, 0) / MIB
        if method == "tracemalloc":
            started = not tracemalloc.is_tracing()
            if started:
                tracemalloc.start()
            try:
                tracemalloc.reset_peak()
                before = tracemalloc.get_traced_memory()[0]
                fn()
                return max(tracemalloc.get_traced_memory()[1] - before, 0) / MIB
            finally:
                if started:
                    tracemalloc.stop()
        if not _reset_hwm():
            return math.nan
        rss = _status_kib("VmRSS")
        fn()
        hwm = _status_kib("VmHWM")
        if rss is None or hwm is None:
            return math.nan
        return max(hwm - rss, 0) / 1024.0
