"""Ctrl+C (SIGINT) and SIGTERM in a command: stop cleanly, at once where that is safe, soon where it is not.

``install()`` (the CLI's entry, ``app.common.entry``) makes both signals raise ``Stopped``, which unwinds the
command like any exception: the ``finally`` blocks run (a temporary file is removed by the atomic writers, a film's
temporary file by ``app.training.film``), what was written completely stays, and the entry prints one line and
exits 128 + the signal's number (130, 143), without a traceback.

Where it is raised matters. Python runs a signal handler at whatever bytecode comes next, and raising there is only
safe in the app's own code (``app``, ``attention_core``): inside a library the next bytecode may be a callback from
C or C++ — a weakref callback in importlib ("Exception ignored in …", the stop lost), pybind11 inside ``import
torch`` (an exception through C++: abort, exit −6), a Python override called by Qt (shiboken prints it and carries
on; a segfault at exit). So:

- interrupted in the app's own code: ``Stopped`` is raised there and then;
- interrupted in a library: the stop is noted and a trace function raises it as soon as the app's own code runs
  again (a call into it, or the next line of an app frame already on the stack, once the library returns);
- in a ``deferred()`` region (Qt rendering; a run's files, written together or not at all) it is only noted, and
  ``check()`` raises it at the next safe point (between two frames of a film, between two lesson steps, when the
  region ends).

A stop noted once stays noted: every later ``check()`` raises again. A second signal during the stop is ignored
(the clean-up is not interrupted). Qt-free; the window uses it too (``app.shell.gui``: a timer polls ``pending()``
and closes the window).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(BaseException):
    """A stop asked for by a signal (a ``BaseException``: ``except Exception`` does not swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def code(self) -> int:
        """The exit code: 128 + the signal's number, as a shell reports a process a signal ended."""
        return 128 + self.signum


_pending = 0
_deferring = 0
_installed = False


def install() -> bool:
    """Handle SIGINT and SIGTERM from now on (main thread only; False elsewhere, nothing changed)."""
    global _installed
    if threading.current_thread() is not threading.main_thread():
        return False
    for sig in SIGNALS:
        signal.signal(sig, _on_signal)
    _installed = True
    return True


PACKAGES = ("app", "attention_core")
"""The app's own code: a ``Stopped`` raised in one of its frames unwinds like any exception."""
_armed: list[FrameType] = []


def _ours(frame: FrameType) -> bool:
    module = frame.f_globals
    name = str(module.get("__name__", ""))
    if name == "__main__":  # python -m app: its __main__ is app.__main__
        name = str(getattr(module.get("__spec__"), "name", "") or "")
    return name.split(".")[0] in PACKAGES


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _pending:
        return  # already stopping: let the clean-up finish
    _pending = signum
    if _deferring:
        return  # check() raises it
    if frame is not None and _ours(frame):
        raise Stopped(signum)
    _arm(frame)


def _arm(frame: FrameType | None) -> None:
    """Raise the pending stop as soon as the app's own code runs again (see the module docstring)."""
    if sys.gettrace() is not None:  # a debugger or coverage traces this thread: the check points raise it
        return
    while frame is not None:
        if _ours(frame):
            frame.f_trace = _raise_in_ours
            frame.f_trace_lines = True
            _armed.append(frame)
        frame = frame.f_back
    sys.settrace(_on_call)


def _disarm() -> None:
    sys.settrace(None)
    for frame in _armed:
        frame.f_trace = None
    _armed.clear()


def _on_call(frame: FrameType, event: str, _arg: object) -> Any:
    if event == "call" and _ours(frame):
        return _raise_in_ours(frame, event, _arg)
    return None  # a library's frame: not traced line by line


def _raise_in_ours(frame: FrameType, _event: str, _arg: object) -> Any:
    if _deferring or not _pending:
        return None if not _pending else _raise_in_ours
    signum = _pending
    _disarm()
    raise Stopped(signum)


def pending() -> bool:
    """Whether a stop was asked for (and not yet raised, or raised and swallowed)."""
    return bool(_pending)


def pending_code() -> int:
    """The exit code the pending stop asks for (0 when none)."""
    return 128 + _pending if _pending else 0


def check() -> None:
    """Raise ``Stopped`` if a stop is pending: call it at safe points."""
    if _pending:
        if _armed or sys.gettrace() is _on_call:
            _disarm()
        raise Stopped(_pending)


@contextmanager
def deferred() -> Iterator[None]:
    """A region where a signal is only noted (Qt, a result's files); on leaving it normally, a noted stop is
    raised (``check``). Nested regions are fine."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    check()


def defer_forever() -> None:
    """From now on signals are only noted (after a command finished: its results are complete, so a late Ctrl+C
    must not turn the exit into a traceback at interpreter shutdown; the window polls ``pending``)."""
    global _deferring
    _deferring += 1


def reset() -> None:
    """Forget a pending stop and every deferral; give SIGINT and SIGTERM back to Python's defaults (tests)."""
    global _pending, _deferring, _installed
    if _armed or sys.gettrace() is _on_call:
        _disarm()
    _pending, _deferring = 0, 0
    if _installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _installed = False
