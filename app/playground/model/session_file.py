"""Session files: JSON with a format name and a version, written atomically, refused with a reason if bad."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.playground.model.playground import PlaygroundModel
from app.playground.model.state import PlaygroundState
from attention_core.fileio import atomic_write

FORMAT = "attention-playground-session"
VERSION = 1
MAX_BYTES = 5_000_000


class SessionError(ValueError):
    """The file cannot be opened as a session; the message says why."""


def save_session(path: str | Path, snapshot: dict[str, Any]) -> None:
    """Write a model snapshot (``PlaygroundModel.snapshot()``) atomically."""
    text = json.dumps({"format": FORMAT, "version": VERSION, "state": snapshot}, indent=1)
    atomic_write(path, lambda fh: fh.write(text), text=True)


def load_session(path: str | Path) -> dict[str, Any]:
    """Read and validate a session; returns a snapshot for ``PlaygroundModel.restore``. Raises SessionError with
    the reason (the caller's current state is untouched)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise SessionError(f"{path.name}: too large for a session file ({path.stat().st_size} bytes)")
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SessionError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise SessionError(f"{path.name}: not a text file") from None
    try:
        data: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SessionError(f"{path.name}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise SessionError(f"{path.name}: nested too deeply to be a session") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SessionError(f"{path.name}: not an Attention Playground session (no '{FORMAT}' format field)")
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise SessionError(f"{path.name}: missing or invalid version field")
    if version > VERSION:
        raise SessionError(f"{path.name}: written by a newer version of the app (session version {version})")
    raw_state = data.get("state")
    if not isinstance(raw_state, dict):
        raise SessionError(f"{path.name}: session state must be an object")
    try:
        snapshot = PlaygroundState.from_snapshot(raw_state).snapshot()
        PlaygroundModel(preset=None).restore(snapshot)  # its numbers must be showable too (no overflow)
    except (ValueError, RecursionError) as exc:
        raise SessionError(f"{path.name}: {exc}") from None
    device = raw_state.get("device", "cpu") if isinstance(raw_state, dict) else "cpu"
    snapshot["device"] = device if isinstance(device, str) else "cpu"
    return snapshot
