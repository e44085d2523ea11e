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
  again (a call into it, or the next line of an app frame already on the stack, once the library returns); inside
  an import the trace function is set only once the import is over (``_signal_after_import``);
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
import time
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
    global _pending, _after_import
    if _pending and not _after_import:
        return  # already stopping: let the clean-up finish
    _pending, _after_import = _pending or signum, False
    if _deferring:
        return  # check() raises it
    if frame is not None and _ours(frame):
        raise Stopped(_pending)
    if frame is not None and _importing(frame) and sys.gettrace() is None and hasattr(signal, "pthread_kill"):
        _signal_after_import()
        return
    _arm(frame)


_IMPORT_FRAMES = "<frozen importlib._bootstrap"
_after_import = False


def _importing(frame: FrameType | None) -> bool:
    """Whether ``frame``, a library's, runs inside an import (importlib between it and the app's innermost frame).
    This module's frames (the signal handler itself, starting the watching thread) are passed over."""
    while frame is not None:
        if frame.f_globals is not _THIS_MODULE:
            if _ours(frame):
                return False
            if frame.f_code.co_filename.startswith(_IMPORT_FRAMES):
                return True
        frame = frame.f_back
    return False


_THIS_MODULE = globals()


def _signal_after_import() -> None:
    """Interrupted inside an import (``import torch``: a second of CPU, nothing of it may be interrupted), wait for
    it to end without the trace function, which would be called for each of its half a million Python calls (a
    third more CPU for every stopped process): a thread looks at the main thread's stack every 2 ms and, once the
    import is done, sends the signal again; its handler then raises or arms as usual (or, inside a new import,
    waits again). A ``check()`` before that, or ``reset()``, ends the wait: the signal sent anyway is ignored."""
    global _after_import
    _after_import = True
    main = threading.main_thread().ident
    assert main is not None

    def watch() -> None:
        while _after_import:
            frame = sys._current_frames().get(main)
            if frame is None:
                return
            if not _importing(frame):
                if _after_import:
                    signal.pthread_kill(main, _pending or signal.SIGINT)
                return
            time.sleep(0.002)

    threading.Thread(target=watch, name="stop-after-import", daemon=True).start()


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


_PREFIXES = tuple(f"{package}." for package in PACKAGES)


def _on_call(frame: FrameType, event: str, _arg: object) -> Any:
    """Called for every Python call while a stop waits (all of ``import torch`` when the signal landed in it: half
    a million calls), so the common case, a library's frame, costs one dictionary look-up and one string test."""
    if event != "call":
        return None
    name = frame.f_globals.get("__name__")
    if name.__class__ is str and (name.startswith(_PREFIXES) or name in PACKAGES or name == "__main__") \
            and _ours(frame):
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
    global _after_import
    if _pending:
        _after_import = False
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
    global _pending, _deferring, _installed, _after_import
    _after_import = False
    if _armed or sys.gettrace() is _on_call:
        _disarm()
    _pending, _deferring = 0, 0
    if _installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _installed = False
