"""A guard against a reference-count bug of shiboken6 6.12.0 on CPython < 3.12.

shiboken 6.12.0 returns ``None`` from every void C++ call (``setText``, ``update``, ``processEvents`` …) and
``True`` from ``Signal.emit`` without taking a new reference. From Python 3.12 these objects are immortal; on 3.11
each call drops one reference, and after a few thousand calls the interpreter aborts with "Fatal Python error:
none_dealloc". pyproject.toml excludes 6.12.0 (6.11.3 is fine); this guard covers an environment that has it anyway
by giving the three singletons a huge reference count, which makes them effectively immortal as on 3.12.
"""

from __future__ import annotations

import sys

_PROTECTED = False


def needs_guard() -> bool:
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    try:
        import shiboken6
    except ImportError:
        return False
    return str(getattr(shiboken6, "__version__", "")).startswith("6.12.0")


def protect_singletons(force: bool = False) -> bool:
    """Apply the guard once when needed (or when ``force``); returns True if it was applied by this call."""
    global _PROTECTED
    if _PROTECTED or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    if not (force or needs_guard()):
        return False
    import ctypes

    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += 1 << 40
    _PROTECTED = True
    return True
