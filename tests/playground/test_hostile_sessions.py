"""Hostile session files: every one is refused with a message naming the file and the reason, the current work
is untouched, nothing crashes and no pickle is ever executed. Saves are atomic even when the process is killed."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.playground.model.playground import PlaygroundModel
from app.playground.model.session_file import SessionError, load_session, save_session

MARKER = Path("/tmp/attention-playground-pickle-ran")


class _Evil:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


def good_doc() -> dict:
    model = PlaygroundModel("cat-sat-mat")
    return {"format": "attention-playground-session", "version": 1, "state": model.snapshot()}


def _set(doc: dict, path: str, value) -> dict:
    keys = path.split(".")
    target = doc
    for k in keys[:-1]:
        target = target[k] if not k.isdigit() else target[int(k)]
    last = keys[-1]
    if value is KeyError:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return doc


def text_of(doc: dict) -> bytes:
    return json.dumps(doc).encode()


GOOD = text_of(good_doc())
MUTATIONS: dict[str, object] = {
    "empty": b"",
    "truncated half": GOOD[: len(GOOD) // 2],
    "truncated one byte": GOOD[:-1],
    "bit flipped brace": b"[" + GOOD[1:],
    "bit flipped in a number": GOOD.replace(b'"Lq": 3', b'"Lq": 3\x00'),
    "binary garbage": bytes(range(256)) * 4,
    "not utf-8": b"\xff\xfe\x00{" + GOOD,
    "a pickle": pickle.dumps(_Evil()),
    "a pickle of the state": pickle.dumps(good_doc()),
    "foreign json": b'{"type": "FeatureCollection", "features": []}',
    "json list": b"[1, 2, 3]",
    "json string": b'"attention"',
    "wrong format name": text_of(_set(good_doc(), "format", "attention-playground-lesson")),
    "future version": text_of(_set(good_doc(), "version", 99)),
    "version as text": text_of(_set(good_doc(), "version", "1")),
    "no version": text_of(_set(good_doc(), "version", KeyError)),
    "no state": text_of(_set(good_doc(), "state", KeyError)),
    "state is a list": text_of(_set(good_doc(), "state", [1, 2])),
    "no matrices": text_of(_set(good_doc(), "state.matrices", KeyError)),
    "no dims": text_of(_set(good_doc(), "state.dims", KeyError)),
    "huge dimension": text_of(_set(good_doc(), "state.dims.Lq", 2_000_000_000)),
    "negative dimension": text_of(_set(good_doc(), "state.dims.d_k", -4)),
    "dimension as text": text_of(_set(good_doc(), "state.dims.d_k", "four")),
    "matrix of wrong shape": text_of(_set(good_doc(), "state.matrices.X", [[1.0, 2.0]])),
    "matrix of strings": text_of(_set(good_doc(), "state.matrices.X", [["a"] * 4] * 3)),
    "NaN in a matrix": GOOD.replace(b"[1.0, 0.5, 0.2, 0.8]", b"[NaN, 0.5, 0.2, 0.8]"),
    "Infinity in a matrix": GOOD.replace(b"[1.0, 0.5, 0.2, 0.8]", b"[Infinity, 0.5, 0.2, 0.8]"),
    "overflowing values": GOOD.replace(b"[1.0, 0.5, 0.2, 0.8]", b"[1e300, 0.5, 0.2, 0.8]"),
    "unknown matrix": text_of(_set(good_doc(), "state.matrices.Z", [[1.0]])),
    "unknown mode": text_of(_set(good_doc(), "state.mode", "telepathy")),
    "unknown mask": text_of(_set(good_doc(), "state.mask_mode", "sometimes")),
    "negative scale": text_of(_set(good_doc(), "state.custom_scale", -1.0)),
    "heads do not divide": text_of(_set(good_doc(), "state.num_heads", 3)),
    "token list too short": text_of(_set(good_doc(), "state.query_tokens", ["cat"])),
    "mask of wrong shape": text_of(_set(good_doc(), "state.custom_mask", [[True]])),
    "deeply nested": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.fixture(autouse=True)
def _no_marker():
    MARKER.unlink(missing_ok=True)
    yield
    assert not MARKER.exists(), "a pickle was executed"


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_hostile_file_is_refused_with_its_name_and_a_reason(name, tmp_path):
    path = tmp_path / "hostile.json"
    path.write_bytes(MUTATIONS[name])  # type: ignore[arg-type]
    with pytest.raises(SessionError) as info:
        snap = load_session(path)
        PlaygroundModel().restore(snap)  # what opening does with what passed the file checks
        raise SessionError("accepted")  # pragma: no cover - the test fails on the message below
    message = str(info.value)
    assert message.startswith("hostile.json: ") and message != "accepted" and len(message) > 20


def test_window_refuses_every_hostile_file_and_keeps_the_work(window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda _p, _t, text, *a, **k: shown.append(text))
    window.playground.set_cell("X", 0, 0, 2.5)
    before = window.playground.snapshot()
    weights = window.pipeline.heatmaps["weights"].values().copy()
    for n, data in enumerate(MUTATIONS.values()):
        path = tmp_path / f"file{n}.json"
        path.write_bytes(data)  # type: ignore[arg-type]
        assert not window.open_session(path)
        assert shown[-1].startswith(f"file{n}.json: ") and "unchanged" in shown[-1]
        assert window.playground.snapshot() == before
    assert (window.pipeline.heatmaps["weights"].values() == weights).all()
    assert window.error_label.isVisible() and "file" in window.error_label.text()


def test_a_folder_an_unreadable_file_and_a_2gb_file_are_refused(tmp_path, monkeypatch):
    with pytest.raises(SessionError, match="cannot be read"):
        load_session(tmp_path)
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:  # sparse: 2 GB declared, nothing written
        fh.truncate(2 * 1024**3)
    with pytest.raises(SessionError, match="too large"):
        load_session(big)
    locked = tmp_path / "locked.json"
    locked.write_bytes(GOOD)

    def denied(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", denied)  # root reads any file: simulate the permission error
    with pytest.raises(SessionError, match="locked.json: cannot be read.*Permission denied"):
        load_session(locked)
    with pytest.raises(SessionError, match="missing.json: cannot be read"):
        load_session(tmp_path / "missing.json")


def test_save_is_atomic_when_the_process_is_killed_mid_save(tmp_path):
    """50 times: start a save of a large session in a child, SIGKILL it at a random moment; the previous file is
    always intact and loads."""
    path = tmp_path / "session.json"
    save_session(path, PlaygroundModel("cat-sat-mat").snapshot())
    original = path.read_bytes()
    child = textwrap.dedent(f"""
        import sys
        from app.playground.model.playground import PlaygroundModel
        from app.playground.model.session_file import save_session
        m = PlaygroundModel("lesson-random-4x8")
        m.set_dim("Lq", 32); m.set_dim("d_model", 64); m.set_dim("d_k", 64); m.set_dim("d_v", 64)
        snap = m.snapshot()
        print("ready", flush=True)
        while True:
            save_session({str(path)!r}, snap)
    """)
    import random

    rng = random.Random(7)
    killed_mid_run = 0
    for _ in range(50):
        proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, cwd=os.getcwd())
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        import time

        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_mid_run += proc.returncode == -signal.SIGKILL
        data = path.read_bytes()
        assert data == original or json.loads(data)["format"] == "attention-playground-session"
        PlaygroundModel().restore(load_session(path))  # always a whole, valid session
    assert killed_mid_run == 50
    leftovers = [p for p in tmp_path.iterdir() if p.name != "session.json"]
    # a killed save leaves only its hidden temporary file beside the intact session, never a half-written session
    assert all(p.name.startswith(".session.json.") and p.name.endswith(".tmp") for p in leftovers), leftovers
