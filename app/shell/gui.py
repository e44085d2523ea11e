"""Start the Qt application and show the main window (or run the self-test and exit).

Before Qt starts, ``app.shell.display`` asks whether a window can open here; if not, one line says why and what to
do (fitted to the bundle or the source) and the exit code is 2, instead of Qt's abort. Ctrl+C and SIGTERM close the
window (a timer polls ``app.common.stopping``: Python's signal handlers only run while Python code does) and the
process exits 130 / 143. ``--self-test`` uses throw-away settings in a temporary folder, never the user's.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.common import stopping
from app.widgets.application import make_application

if TYPE_CHECKING:
    from PySide6.QtCore import QTimer

    from app.shell.main_window import MainWindow

STOP_POLL_MS = 150


def run(self_test_dir: str | None = None) -> int:
    """Show the window and enter the event loop. With ``self_test_dir`` (may be ""), render every view to PNG
    there, print the paths and exit 0 (1 if any render failed)."""
    import os

    from app.shell.display import display_problem

    if self_test_dir is not None and sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM") \
            and display_problem():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"  # the self-test renders to files; no screen needed
    problem = display_problem()
    if problem:
        print(f"attention-playground: {problem}", file=sys.stderr)
        return 2
    with stopping.deferred():  # Qt from here on: a signal is noted, the window closed at the next poll
        return _run(self_test_dir)


def _run(self_test_dir: str | None) -> int:
    app: Any = make_application()
    from app import create_main_window
    from app.widgets.qt_compat import delete_now

    if self_test_dir is None:
        window = create_main_window()
        window.show()
        timer = _close_on_stop(window)
        code = app.exec()
        timer.stop()
        delete_now(window, flush=True)  # see qt_compat: deleting it in PySide's exit hook can segfault
        return code
    from PySide6.QtCore import QSettings

    from app.common.outputs import remove_scratch, scratch_folder

    own = scratch_folder("attention-self-test-settings-")  # removed at exit too: Qt rewrites it when it lets go
    out = Path(self_test_dir) if self_test_dir else Path(tempfile.mkdtemp(prefix="attention-self-test-"))
    window = None
    try:
        settings = QSettings(str(own / "settings.ini"), QSettings.Format.IniFormat)
        # its own settings: the user's window stays as they left it; no background torch imports (no device
        # detection, no warm-up): closing would wait for them
        window = create_main_window(settings=settings, detect_devices=False, warm_up_torch=False,
                                    confirm_on_close=False)
        window.show()
        written = _self_test(app, window, out)
    except stopping.Stopped:
        if not self_test_dir:  # the temporary folder was ours: nothing half-done left behind
            import shutil

            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        if window is not None:
            window.setWindowModified(False)
            window.close()
            delete_now(window, flush=True)
        remove_scratch(own)
    for path in written:
        print(path)
    ok = bool(written) and all(Path(p).is_file() and Path(p).stat().st_size > 0 for p in written)
    return 0 if ok else 1


def _self_test(app: Any, window: MainWindow, out: Path) -> list[Path]:
    """Render every view to PNG in ``out`` (``app/shell/self_test.py``); a stop is acted on between two views."""
    from app.shell.self_test import render_all

    return render_all(window, out)


def _close_on_stop(window: MainWindow) -> QTimer:
    """A timer that closes ``window`` (no unsaved-changes question: the user asked the process to stop) once a
    stop is pending; the exit code then says stopped (``app.common.entry``)."""
    from PySide6.QtCore import QTimer

    timer = QTimer(window)
    timer.setInterval(STOP_POLL_MS)

    def poll() -> None:
        if stopping.pending():
            timer.stop()
            window.confirm_on_close = False
            window.close()

    timer.timeout.connect(poll)
    timer.start()
    return timer
