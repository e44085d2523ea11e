"""Qt objects are deleted while Python is healthy, never left to PySide's exit hook.

PySide deletes what is still wrapped in an ``atexit`` hook; a pyqtgraph item deleted there calls a Python
override during finalisation and can segfault (see app/widgets/qt_compat.py). These tests count what would be left.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import shiboken6
from PySide6.QtWidgets import QGraphicsItem

ROOT = Path(__file__).resolve().parents[2]


def live_wrappers(kind: type) -> list[object]:
    return [w for w in shiboken6.getAllValidWrappers() if isinstance(w, kind)]


def test_self_test_run_leaves_no_widget_for_the_exit_hook(tmp_path):
    script = textwrap.dedent("""
        import sys
        import shiboken6
        from PySide6.QtWidgets import QGraphicsItem, QMenu, QWidget
        from app.shell import gui
        code = gui.run(sys.argv[1])
        # what PySide's exit hook would delete; plain QMenus (pyqtgraph's per-plot "Plot Options" menu, kept by
        # the plot's Python object) have no Python overrides, so deleting them there calls no Python code
        left = [type(w).__name__ for w in shiboken6.getAllValidWrappers()
                if isinstance(w, (QWidget, QGraphicsItem)) and shiboken6.ownedByPython(w) and type(w) is not QMenu]
        print("LEFT", len(left), sorted(set(left))[:10])
        sys.exit(code)
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "TMPDIR": str(tmp_path)}  # gui.run's scratch: not entry's exit
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "shots")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    left = [line for line in r.stdout.splitlines() if line.startswith("LEFT")]
    assert left == ["LEFT 0 []"], r.stdout[-2000:]
    assert (tmp_path / "shots" / "window.png").stat().st_size > 0


def test_export_heatmap_deletes_its_widget(qapp, tmp_path):
    from app.widgets.file_export import export_heatmap
    from app.widgets.heatmap.view import HeatmapWidget

    before = len(live_wrappers(HeatmapWidget))
    items_before = len(live_wrappers(QGraphicsItem))
    export_heatmap(tmp_path / "w.png", [[0.25, 0.75], [1.0, 0.0]], ["a", "b"], ["c", "d"], "weights", kind="weights")
    assert (tmp_path / "w.png").stat().st_size > 0
    assert len(live_wrappers(HeatmapWidget)) == before
    assert len(live_wrappers(QGraphicsItem)) <= items_before


def test_closing_the_window_waits_for_the_torch_warm_up(window):
    """A thread still importing torch while the interpreter exits can crash it: closing waits for the worker."""
    panel = window.training_panel
    worker = panel.warm_worker
    assert worker is not None
    window.close()
    assert not worker.is_running
    from PySide6.QtCore import QThreadPool

    assert QThreadPool.globalInstance().activeThreadCount() == 0


def test_closing_the_window_waits_for_device_detection(window):
    """Listing GPUs imports torch on a worker; closing waits for it rather than leave it to interpreter exit."""
    window.start_device_detection()
    worker = window.device_worker
    window.close()
    assert not worker.is_running
    from PySide6.QtCore import QThreadPool

    assert QThreadPool.globalInstance().activeThreadCount() == 0
    window.start_device_detection()  # a closed window starts no new worker
    assert window.device_worker is worker


def test_opening_the_training_tab_does_not_import_torch_in_the_gui_thread(tmp_path):
    """The set-up form validates a TrainConfig on build; it used to import torch there (a 1.4 s freeze)."""
    script = textwrap.dedent("""
        import os, sys
        from app.widgets.application import make_application
        from app import create_main_window
        app = make_application()
        w = create_main_window(detect_devices=False, warm_up_torch=False)
        w.show()
        w.tabs.setCurrentWidget(w.training_panel)
        app.processEvents()
        ok = w.training_panel.form.config() is not None
        print("TORCH", "torch" in sys.modules, "CONFIG", ok)
        sys.stdout.flush()
        os._exit(0)
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert "TORCH False CONFIG True" in r.stdout, r.stdout + r.stderr[-2000:]


def test_a_script_that_never_closes_its_window_exits_cleanly(tmp_path):
    """create_main_window registers the window for deletion before PySide's exit hook; an edited (unsaved) window
    is deleted without a prompt, which at exit would hang with no event loop to answer it."""
    script = textwrap.dedent("""
        import sys
        import shiboken6
        from PySide6.QtWidgets import QGraphicsItem, QMenu, QWidget
        from app.widgets.application import make_application
        from app import create_main_window
        from app.widgets.qt_compat import _delete_registered
        app = make_application()
        window = create_main_window(detect_devices=False)  # kept in a global, as a notebook or script would
        window.show()
        app.processEvents()
        window.edits.set_cell("Q", 0, 0, 2.5)
        print("MODIFIED", window.isWindowModified())
        _delete_registered()  # what the atexit hook runs first
        left = [type(w).__name__ for w in shiboken6.getAllValidWrappers()
                if isinstance(w, (QWidget, QGraphicsItem)) and shiboken6.ownedByPython(w) and type(w) is not QMenu]
        print("LEFT", len(left), sorted(set(left))[:10])
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "MODIFIED True" in r.stdout and "LEFT 0 []" in r.stdout, r.stdout
