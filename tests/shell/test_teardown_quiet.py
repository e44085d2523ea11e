"""Closing the window prints nothing: the colour bar's note follows the bar's height through a slot that does
nothing once the axis (or its title label) is gone, as happens in a teardown.

A script that opened and closed a window printed ``RuntimeError: libshiboken: Internal C++ object (AxisItem)
already deleted`` from that slot at exit (app/widgets/heatmap/style.py): PySide's exit hook deletes what is left in
no fixed order, and the C++ axis still reported a geometry after its Python side was gone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import shiboken6

ROOT = Path(__file__).resolve().parents[2]


def noted_axis(qtbot):
    from app.widgets.heatmap.view import HeatmapWidget

    h = HeatmapWidget(title="scores")
    qtbot.addWidget(h)
    h.set_data([[0.1, 0.9], [0.5, 0.5]], ["a", "b"], ["c", "d"])
    h.set_range_note("shared ①②③ ±2")
    return h, h.colorbar.getAxis("left")


def test_the_note_slot_skips_an_axis_whose_python_side_is_gone(qtbot):
    from app.widgets.heatmap import style

    h, axis = noted_axis(qtbot)
    shiboken6.delete(axis)  # as the exit hook deletes it, with the slot's reference to it still held
    with pytest.raises(RuntimeError, match=r"Internal C\+\+ object \(AxisItem\) already deleted"):
        style._fit_range_note(axis)  # what the slot called before: the message printed at exit
    style._refit_range_note(axis)  # the slot now: nothing to fit, nothing raised


def test_a_script_that_opens_and_closes_the_window_prints_nothing(tmp_path):
    script = textwrap.dedent("""
        import sys
        from PySide6.QtCore import QSettings
        from app.widgets.application import make_application
        import app
        qa = make_application()
        w = app.create_main_window(settings=QSettings(sys.argv[1], QSettings.Format.IniFormat),
                                   detect_devices=False, warm_up_torch=False, confirm_on_close=False)
        w.show()
        qa.processEvents()
        w.playground.set_heads(2)  # the Steps view's maps with their notes, the heads banner
        w.view_tabs.setCurrentWidget(w.tab.multihead)
        qa.processEvents()
        w.close()
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "settings.ini")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr == ""
