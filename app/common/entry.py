"""The top of every process the app starts from a command line (``python -m app``, ``attention-playground``, the
bundle's ``scripts/bundle_entry.py``): no traceback reaches the user.

``guarded(run)`` calls ``run()`` (the CLI's ``main``) with SIGINT/SIGTERM handled (``app.common.stopping``) and
turns what escapes it into an exit code and one line on stderr:

- ``Stopped`` (Ctrl+C, SIGTERM): "attention-playground: stopped" and 130 / 143;
- ``Refused`` (bad input found deep in a command): "attention-playground: reason" and 2;
- anything else: "attention-playground: unexpected error (Kind: message); details in PATH" and 1, the traceback
  written to a crash log in the app's data folder (``crash-logs/``; a temporary folder where that cannot be
  written). An exception while a stop is pending is part of stopping (a pipe to ffmpeg broken by the same Ctrl+C).

``finish(code)`` ends the process through ``os._exit`` (see its docstring: no exit hooks after a stop, no module
teardown ever), its scratch folders removed first. Qt-free.
"""

from __future__ import annotations

import datetime
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

from app.common import stopping
from app.common.stopping import Stopped
from app.common.validation import Refused

PROG = "attention-playground"


def crash_log(exc: BaseException, argv: list[str] | None = None) -> Path:
    """Write ``exc``'s traceback (and the command line, versions) to a new file; returns its path."""
    from app.common.version import __version__

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = "".join([
        f"{PROG} {__version__} crashed at {datetime.datetime.now().isoformat(timespec='seconds')}\n",
        f"command: {' '.join(sys.argv if argv is None else [PROG, *argv])}\n",
        f"python {sys.version.split()[0]} on {sys.platform}; frozen: {bool(getattr(sys, 'frozen', False))}\n\n",
        *traceback.format_exception(type(exc), exc, exc.__traceback__),
    ])
    for folder in _log_folders():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"crash-{stamp}-{os.getpid()}.log"
            path.write_text(text, encoding="utf-8")
            return path
        except OSError:
            continue
    raise OSError("no folder to write a crash log in")


def _log_folders() -> list[Path]:
    folders = []
    try:
        from app.common.paths import data_dir

        folders.append(data_dir(create=False) / "crash-logs")
    except Exception:  # platformdirs missing or confused: the temporary folder still works
        pass
    return [*folders, Path(tempfile.gettempdir()) / "attention-playground-crash-logs"]


def _say(message: str) -> None:
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed or a broken pipe: the exit code still tells
        pass


def guarded(run: Callable[[], int], argv: list[str] | None = None) -> int:
    """``run()``'s exit code, or the code and one line for what escaped it (see the module docstring)."""
    stopping.install()
    try:
        stopping.check()  # a stop noted before this point (app.__main__: while the entry was imported) ends here
        code = run()
    except Stopped as stop:
        return _stopped(stop.code, argv)
    except KeyboardInterrupt:  # a SIGINT before the handler was installed, or raised by a library
        return _stopped(130, argv)
    except SystemExit:
        raise
    except Refused as exc:
        if stopping.pending():
            return _stopped(stopping.pending_code(), argv)
        _say(f"{PROG}: {exc}")
        return 2
    except BaseException as exc:  # noqa: BLE001 - the point: nothing escapes as a traceback
        if stopping.pending():
            return _stopped(stopping.pending_code(), argv)
        return _crashed(exc, argv)
    stopping.defer_forever()  # the results are complete: a late signal changes nothing now
    if stopping.pending():
        return _stopped(stopping.pending_code(), argv)
    return code


def _stopped(code: int, argv: list[str] | None) -> int:
    """One line: "attention-playground train: stopped"."""
    stopping.defer_forever()
    command = argv[0] if argv and not argv[0].startswith("-") else ""
    _say(f"{PROG}{' ' + command if command else ''}: stopped")
    return code


def _crashed(exc: BaseException, argv: list[str] | None) -> int:
    stopping.defer_forever()
    try:
        where = f"; details in {crash_log(exc, argv)}"
    except OSError:
        where = ""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    _say(f"{PROG}: unexpected error ({type(exc).__name__}{': ' + first[:200] if first else ''}){where}")
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def finish(code: int) -> None:
    """End the process with ``code``, always through ``os._exit`` once stdout and stderr are flushed:

    - after a stop, at once: the interpreter's shutdown (Qt's and torch's exit hooks after an interrupted render or
      import) is where the crashes were;
    - otherwise the threads are joined and the exit hooks run (PySide's, ours), as a normal exit does, and then the
      interpreter's teardown of every module is skipped: it took 0.5 s once torch was imported (``train --steps
      5``: 1.2 s instead of 1.7 s), and Python gives SIGINT back to its default action for it, so a Ctrl+C in that
      last half second killed a finished command (exit −2) instead of being ignored."""
    import atexit
    import threading

    _flush()
    if not stopping.pending():
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
        _flush()
    _remove_scratch()
    os._exit(code)


def _remove_scratch() -> None:
    """The process's scratch folders (``app.common.outputs.scratch_folder``), last: after the exit hooks, which
    may still write in them (a throw-away window's settings file), and after a stop, which skips the hooks."""
    outputs = sys.modules.get("app.common.outputs")  # not imported: no scratch folder to remove
    if outputs is not None:
        try:
            outputs.remove_scratch()
        except BaseException:  # noqa: BLE001 - the exit code is already decided; a leftover folder is no crash
            pass
