"""How much memory a model needs and how much the machine has, decided before a byte of weights is read.

Loading a model larger than the free memory would swap the machine to a halt (or get the process killed) half way
through; the sizes in the safetensors headers are exact, so the loader compares them with ``MemAvailable`` first and
refuses with both figures.
"""

from __future__ import annotations

import os
from pathlib import Path

HEADROOM = 1.15
"""Weights × this = the estimate: activations of a trace and the allocator's slack on top of the weights."""

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
               "F8_E4M3": 1, "F8_E5M2": 1}
"""Bytes per element of each safetensors dtype code (the header's ``dtype`` strings)."""


def available_memory(meminfo: str | Path = "/proc/meminfo") -> tuple[int, str]:
    """(bytes, where the figure came from): ``MemAvailable`` (what can be allocated without swapping), else the
    free physical pages from ``os.sysconf`` (no /proc, e.g. macOS), else a very large number (unknown: allow)."""
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and size > 0:
            return int(pages) * int(size), "free physical pages (os.sysconf)"
    except (ValueError, OSError, AttributeError):
        pass
    return 1 << 62, "unknown (no /proc/meminfo nor sysconf)"


def size_text(n: float) -> str:
    """A byte count for a message, in the unit that fits, as the hub writes sizes: "5.24 MB", "1.5 GB", "548 MB",
    "812 B" (decimal units, three significant figures). The one formatter of sizes in the library's messages: a
    fixed unit printed a 5 MB array as "0.0 GiB"."""
    n = float(n)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}" if abs(n) < 100 * scale else f"{n / scale:,.0f} {unit}"
    return f"{int(n)} B"


def check_fits(where: Path, weight_bytes: int, parameters: int, dtype_name: str, limit: int | None) -> None:
    """Raise ``PretrainedError`` when ``weight_bytes`` × ``HEADROOM`` exceeds ``limit`` (default: the memory
    available now). ``limit`` is the override tests use to simulate a small machine."""
    from .errors import PretrainedError

    source = "the given memory limit"
    if limit is None:
        limit, source = available_memory()
    need = int(weight_bytes * HEADROOM)
    if need > limit:
        hint = " (try dtype='bfloat16', half the size)" if dtype_name == "float32" else ""
        raise PretrainedError(
            f"{where}: the model needs about {size_text(need)} ({parameters:,} parameters in {dtype_name} plus working "
            f"memory) but only {size_text(limit)} is available ({source}); nothing was loaded{hint}")
