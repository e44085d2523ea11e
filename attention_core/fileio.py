"""Atomic file writes (no torch, no Qt): sessions, exports, histories and checkpoints all go through here.

One permission rule for every file the app writes: the mode a plain ``open(path, "w")`` would give, 0o666 less the
user's umask (0644 under the usual 022). ``mkstemp``, which the atomic writes need, makes its file 0600 whatever
the umask; ``atomic_write`` sets the rule's mode on the temporary file before the rename, so the file appears with
it at once (``readable_mode``; the film writer, which renames a temporary file of its own, uses it too).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def current_umask() -> int:
    """This process's umask, read without changing it where the system tells it (Linux: ``/proc/self/status``);
    elsewhere set and set back at once (``os.umask`` cannot be read otherwise)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)  # briefly the strictest mask, never a looser one, should another thread create a file
    os.umask(mask)
    return mask


def readable_mode() -> int:
    """The mode every file the app writes gets: 0o666 less the umask."""
    return 0o666 & ~current_umask()


def atomic_write(path: str | Path, write: Callable[[Any], None], text: bool = False) -> None:
    """Write through a temporary file in the same folder, then rename: readers never see half a file. The file
    gets ``readable_mode()`` (see the module docstring)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        fh: IO[Any] = os.fdopen(fd, "w", newline="", encoding="utf-8") if text else os.fdopen(fd, "wb")
        with fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, readable_mode())  # mkstemp made it 0600
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
