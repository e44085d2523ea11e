"""No exception raised inside a Qt callback takes the window down (app/shell/slot_guard.py).

The crash: Playground → Vectors, back to Steps, Heads 4 and K/V heads 2, Vectors again: the Vectors view's
``showEvent`` raised numpy's shape error and shiboken 6.11 on Python 3.11 segfaulted (exit 139) reading that
exception. The child processes below are the user's path and a deliberate error in an override; before the guard
both ended in a segmentation fault."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.shell import slot_guard

ROOT = Path(__file__).resolve().parents[2]

OPEN = """
    import sys
    from PySide6.QtCore import QSettings, QTimer
    from app.widgets.application import make_application
    import app
    qa = make_application()
    w = app.create_main_window(settings=QSettings(sys.argv[1], QSettings.Format.IniFormat), detect_devices=False,
                               warm_up_torch=False, confirm_on_close=False)
    w.show()
    qa.processEvents()
"""


def run_child(body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "OMP_NUM_THREADS": "1"}
    script = textwrap.dedent(OPEN) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script, str(tmp_path / "settings.ini")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_vectors_again_after_grouped_kv_heads_keeps_the_window(tmp_path):
    """Lesson 11 step 3's path, in the event loop as a user clicks it."""
    r = run_child("""
        from app.shell import slot_guard
        tabs = w.tab.view_tabs
        def grouped():
            tabs.setCurrentIndex(0)
            w.edits.apply("Heads: 4", lambda m: m.set_heads(4))
            w.edits.apply("K/V heads: 2", lambda m: m.set_kv_heads(2))
        QTimer.singleShot(0, lambda: tabs.setCurrentWidget(w.tab.vectors))
        QTimer.singleShot(50, grouped)
        QTimer.singleShot(100, lambda: tabs.setCurrentWidget(w.tab.vectors))
        QTimer.singleShot(300, qa.quit)
        qa.exec()
        v = w.tab.vectors
        print("SHOWN", tabs.currentWidget() is v, "KEYS", v.space.k.shape, "CAUGHT", slot_guard.caught)
        w.close()
    """, tmp_path)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "SHOWN True KEYS (3, 4) CAUGHT []" in r.stdout, r.stdout


def test_an_error_from_c_in_any_override_is_shown_not_a_crash(tmp_path):
    """``int("x")`` raises in C: on Python 3.11 such an exception left a Python override un-normalised and
    shiboken 6.11 segfaulted on it. A class defined before the window (walked at install) and one defined after
    (``__init_subclass__``) are both guarded; the window says what happened and keeps running."""
    r = run_child("""
        from PySide6.QtWidgets import QWidget
        from app.shell import slot_guard
        class Late(QWidget):
            def showEvent(self, event):
                int("x")
        late = Late(w.tab)
        QTimer.singleShot(0, late.show)
        QTimer.singleShot(50, lambda: w.tab.explain_label.setText("still alive"))
        QTimer.singleShot(200, qa.quit)
        qa.exec()
        print("CAUGHT", slot_guard.caught)
        print("STATUS", w.statusBar().currentMessage())
        print("LABEL", w.tab.explain_label.text())
        late.deleteLater()
        w.close()
    """, tmp_path)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
    assert "CAUGHT [\"ValueError: invalid literal for int() with base 10: 'x'\"]" in r.stdout, r.stdout
    status = next(line for line in r.stdout.splitlines() if line.startswith("STATUS"))
    assert "Internal error caught (ValueError" in status and "The window keeps running" in status
    assert "details in" in status and str(tmp_path / "data") in status  # the crash log, in the app's data folder
    assert "LABEL still alive" in r.stdout
    assert "in showEvent\nValueError: invalid literal" in r.stderr  # the traceback on stderr (Python's hook, chained)


def test_a_guarded_override_returns_its_value_and_raises_to_a_python_caller(qapp):
    """The wrapper changes nothing but the exception's form: return values pass through, and a script or test
    that calls into Qt still sees the exception."""
    from PySide6.QtCore import QSize
    from PySide6.QtWidgets import QWidget

    slot_guard.install()

    class Sized(QWidget):
        def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
            return QSize(123, 45)

        def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
            int("y")

    assert getattr(Sized.sizeHint, "__slot_guard_wrapped__", False)
    w = Sized()
    try:
        assert w.sizeHint() == QSize(123, 45)
        w.adjustSize()  # Qt calls the Python sizeHint
        assert w.size() == QSize(123, 45)
        with pytest.raises(ValueError, match="invalid literal"):
            w.show()  # Qt calls resizeEvent: shiboken stores the exception and raises it here
    finally:
        w.deleteLater()


def test_the_hook_records_logs_shows_and_chains(window, tmp_path):
    before = len(slot_guard.caught)
    seen = []
    previous = slot_guard.hook.previous  # type: ignore[attr-defined]
    slot_guard.hook.previous = lambda *args: seen.append(args[0])  # type: ignore[attr-defined]
    try:
        try:
            raise KeyError("a missing thing")
        except KeyError as exc:
            slot_guard.hook(KeyError, exc, exc.__traceback__)
    finally:
        slot_guard.hook.previous = previous  # type: ignore[attr-defined]
    assert slot_guard.caught[before:] == ["KeyError: 'a missing thing'"]
    del slot_guard.caught[before:]
    assert seen == [KeyError]
    message = window.statusBar().currentMessage()
    assert message.startswith("⚠ Internal error caught (KeyError: 'a missing thing'); details in ")
    log = Path(message.split("details in ")[1].split(". The window")[0])
    assert log.is_file() and "a missing thing" in log.read_text(encoding="utf-8")
    assert str(tmp_path / "data") in str(log)
