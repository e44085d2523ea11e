"""Hang guards: the one place a test may read a clock.

A test asserts a property (the state reached, what was imported, how many calls ran after a cancel), never how long
something took: on a shared, busy machine any wall-clock bound is either loose enough to prove nothing or tight
enough to fail at random. What a test may still need is a bound on how long it *waits* for a state, so that a
broken build fails instead of hanging the suite. That bound is a hang guard: at least ten times what the wait is
expected to take, and named as such (``hang_guard_s=``, ``HANG_GUARD_S``), so nobody reads it as a budget.

Speeds are measured in ``benchmarks/`` (``bench_responsiveness.py``: each figure with a ratio to a baseline
measured in the same run). ``tests/test_architecture.py::test_no_test_bounds_how_long_something_took`` fails on a test
that compares a clock reading in an ``assert``; the helpers here raise ``Hung`` instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable

HANG_GUARD_S = 60.0
"""The default hang guard: far above any wait in the suite (each is at most a few seconds on a busy machine)."""


class Hung(AssertionError):
    """A wait ran past its hang guard: the build hangs (or the machine is unusable), not merely slow."""


def wait_until(done: Callable[[], object], what: str, *, hang_guard_s: float = HANG_GUARD_S,
               between: Callable[[], object] | None = None, poll_s: float = 0.01) -> None:
    """Return as soon as ``done()`` is true; ``between()`` runs between two looks (pump a runner, process events),
    else it sleeps ``poll_s``. Raise ``Hung`` naming ``what`` past ``hang_guard_s`` seconds."""
    give_up = time.monotonic() + hang_guard_s
    while not done():
        if time.monotonic() > give_up:
            raise Hung(f"hung: {what} (not reached within the {hang_guard_s:g} s hang guard)")
        if between is not None:
            between()
        else:
            time.sleep(poll_s)
