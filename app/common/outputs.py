"""Where a command writes, checked before it computes (Qt-free): the folder exists and this user can write in it,
a file is not a folder and a folder is not a file, and a run already there is not replaced without ``--force``.

Nothing here creates a folder the user did not name: an output file's folder must exist (``export --out
missing/x.png`` is refused with the reason), and a run's own folder (``train --out DIR``) is created only when its
parent exists. Writability is tested by creating and removing a temporary file, which is what counts (root, ACLs,
read-only mounts, a full quota), not by the permission bits. Refusals are ``Refused`` (``app.common.validation``).

What a command writes for itself only (a throw-away window's settings, a lesson's model) goes in a
``scratch_folder``, removed when the process ends, a stopped one included (``app.common.entry.finish``).
"""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from app.common.validation import Refused

RUN_FILES = ("model.safetensors", "config.json", "history.csv", "summary.csv")
"""A folder holding any of these holds a run (``train``'s three files, ``experiment``'s summary)."""


def cannot_write(folder: Path) -> str:
    """Why nothing can be written in ``folder`` ("" when something can): a temporary file is created and removed,
    with Ctrl+C and SIGTERM held back meanwhile (a signal between the two left the file behind)."""
    held = {signal.SIGINT, signal.SIGTERM}
    block = hasattr(signal, "pthread_sigmask")
    if block:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        return _try_a_file(folder)
    finally:
        if block:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _try_a_file(folder: Path) -> str:
    try:
        fd, name = tempfile.mkstemp(prefix=".attention-playground-check-", dir=folder)
    except OSError as exc:
        if exc.errno == errno.ENOENT:  # the folder is there, yet no file can be made in it (/proc, a stale mount)
            return "no file can be created there"
        return (exc.strerror or str(exc)).lower()
    os.close(fd)
    try:
        os.unlink(name)
    except OSError:
        pass
    return ""


def _existing_folder(folder: Path, flag: str, value: str) -> None:
    shown = str(folder) if str(folder) else "."
    if not folder.exists():
        raise Refused(f"{flag} {value}: the folder {shown} does not exist (create it first)")
    if not folder.is_dir():
        raise Refused(f"{flag} {value}: {shown} is a file, not a folder")
    why = cannot_write(folder)
    if why:
        raise Refused(f"{flag} {value}: cannot write in {shown} ({why})")


def check_output_file(value: str | os.PathLike[str], flag: str = "--out",
                      suffixes: Sequence[str] | None = None) -> Path:
    """An output file: the suffix (if ``suffixes``), not a folder, its folder exists and is writable, and a file
    already there can be replaced. Returns the path."""
    path = Path(value)
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise Refused(f"{flag} must name a {' or '.join(suffixes)} file (got {str(value)!r})")
    if path.is_dir():
        raise Refused(f"{flag} {value}: is a folder; name a file in it")
    _existing_folder(path.parent, flag, str(value))
    if path.exists() and not os.access(path, os.W_OK):
        raise Refused(f"{flag} {value}: the file exists and cannot be replaced (read-only)")
    return path


def holds_run(folder: Path) -> str:
    """The first run file in ``folder`` ("" when none)."""
    return next((name for name in RUN_FILES if (folder / name).exists()), "")


def check_run_folder(value: str | os.PathLike[str], flag: str = "--out", force: bool = False) -> Path:
    """A run's folder: not a file, its parent exists, writable, and no run already in it unless ``force``.
    The folder itself is created when the run is written."""
    path = Path(value)
    if path.is_dir() and not force:
        found = holds_run(path)
        if found:
            raise Refused(f"{flag} {value}: a run is already there ({found}); add --force to replace it")
    return check_output_folder(value, flag)


def check_output_folder(value: str | os.PathLike[str], flag: str = "--out") -> Path:
    """A folder to write files into (``--self-test DIR``): not a file; it exists and is writable, or its parent
    does (then it is created when written)."""
    path = Path(value)
    if path.exists():
        if not path.is_dir():
            raise Refused(f"{flag} {value}: is a file, not a folder")
        why = cannot_write(path)
        if why:
            raise Refused(f"{flag} {value}: cannot write in {value} ({why})")
        return path
    _existing_folder(path.parent, flag, str(value))
    return path


_scratch: list[Path] = []
_scratch_lock = threading.Lock()


def scratch_folder(prefix: str) -> Path:
    """A new folder in the temporary folder (``TMPDIR``) for files only this process needs; removed when the
    process ends (``remove_scratch``): by ``app.common.entry.finish`` after the exit hooks (Qt's write a window's
    settings file, and so recreate its folder, when the settings object is destroyed there), and after a stop, or
    at exit where the process did not start through the entry (scripts, tests)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    with _scratch_lock:
        if not _scratch:
            atexit.register(remove_scratch)
        _scratch.append(folder)
    return folder


def remove_scratch(folder: Path | None = None) -> None:
    """Remove ``folder`` (one ``scratch_folder`` gave), or every one; each is removed again at exit should
    something write there meanwhile. What cannot be removed is left (a file still open on Windows): nothing here
    may fail an exit."""
    with _scratch_lock:
        chosen = [f for f in _scratch if folder is None or f == folder]
    for f in chosen:
        shutil.rmtree(f, ignore_errors=True)
