"""The 3D tab: the heights are the chosen step's numbers; without OpenGL the tab says so and the app works."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from qt_settle import settled

from app.playground.model.playground import PlaygroundModel
from app.playground.views.three_d.model import surface_of
from attention_core import STEP_NAMES, attention_steps, causal_mask

ROOT = Path(__file__).resolve().parents[3]


def test_heights_are_the_steps_numbers_and_masked_cells_sit_at_the_floor():
    m = PlaygroundModel("cat-sat-mat")
    m.set_mask("causal")
    x = m.state.matrices["X"]
    ref = attention_steps(x, x, x, mask=causal_mask(3))  # identity projections: Q = K = V = X
    for step in STEP_NAMES:
        s = surface_of(m, step)
        values = getattr(ref, step)
        finite = np.isfinite(values)
        np.testing.assert_allclose(s.z[finite], values[finite], rtol=1e-12)
        np.testing.assert_array_equal(s.masked, ~finite)
        if (~finite).any():  # ③ under the causal mask: −∞ drawn at the lowest finite value, and said so
            assert step == "masked"
            np.testing.assert_array_equal(s.z[~finite], values[finite].min())
            assert "3 masked cell(s)" in s.note
    assert surface_of(m, "output").col_labels == ("v0", "v1", "v2", "v3")
    with pytest.raises(ValueError):
        surface_of(m, "nope")


def test_without_opengl_the_tab_says_so_and_the_app_works(window, qtbot, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pyqtgraph.opengl", None)  # the import fails like a missing PyOpenGL
    tab = window.tab
    tab.view_tabs.setCurrentWidget(tab.three_d)
    view = tab.three_d
    qtbot.waitUntil(lambda: view.message.isVisible(), timeout=3000)
    text = view.message.text()
    assert "needs OpenGL" in text and "could not be imported" in text and "Every other tab works" in text
    assert view.gl is None
    menu = view.export_button.refill()
    assert not menu.actions()[0].isEnabled() and "not available" in menu.actions()[0].text()
    with pytest.raises(RuntimeError, match="OpenGL"):
        view.export(tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
    # the rest of the app goes on: an edit reaches the Steps view
    window.playground.set_cell("X", 0, 0, 2.0)
    x = window.playground.state.matrices["X"]
    tab.view_tabs.setCurrentWidget(tab.pipeline)
    settled(qtbot)
    np.testing.assert_allclose(tab.pipeline.heatmaps["scores"].values(), x @ x.T, rtol=1e-12)


GL_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from PySide6.QtCore import QSettings
    from app.widgets.application import make_application
    app = make_application()
    from app import create_main_window
    from app.playground.views.three_d.view import opengl_problem
    problem = opengl_problem()
    if problem:
        print("NOGL", problem); sys.exit(0)
    w = create_main_window(settings=QSettings(sys.argv[1] + "/s.ini", QSettings.Format.IniFormat),
                           detect_devices=False)
    w.confirm_on_close = False
    w.resize(1100, 700); w.show()
    w.playground.load_preset("it-animal-street")
    t = w.tab
    t.view_tabs.setCurrentWidget(t.three_d)
    for _ in range(5): app.processEvents()
    v = t.three_d
    assert v.gl is not None and v.gl.isValid(), v.problem
    for step in ("scores", "weights", "output"):
        v.set_step(step)
        app.processEvents()
        np.testing.assert_allclose(v.drawn_heights(), getattr(w.playground.result, step), rtol=1e-6)
    title = v.export(sys.argv[1] + "/s.png")
    assert "Output" in title, title
    w.setWindowModified(False); w.close()
    print("GLOK")
""")


def test_real_opengl_surface_holds_the_steps_numbers(tmp_path):
    """Qt's offscreen platform has no OpenGL: the real path runs in a child under Xvfb (when installed)."""
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        pytest.skip("xvfb-run is not installed: no OpenGL context to test the real 3D path with")
    script = tmp_path / "gl.py"
    script.write_text(GL_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([xvfb, "-a", "-s", "-screen 0 1280x800x24", sys.executable, str(script), str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    if "NOGL" in r.stdout:
        pytest.skip(f"no OpenGL under Xvfb here: {r.stdout.strip()}")
    assert r.returncode == 0 and "GLOK" in r.stdout, out
    assert (tmp_path / "s.png").stat().st_size > 1000


def test_the_bundle_keeps_opengl_for_the_3d_tab():
    """pyqtgraph.opengl is imported by name at run time: build.spec must name it and must not exclude it."""
    import re

    spec = (ROOT / "build.spec").read_text()
    excludes = re.findall(r'"([\w.]+)"', re.search(r"excludes = \[(.*?)\n\]", spec, re.S).group(1))
    hidden = re.findall(r'"([\w.]+)"', re.search(r"hiddenimports = \((.*?)\n\)", spec, re.S).group(1))
    assert not {"OpenGL", "pyqtgraph.opengl"} & set(excludes)
    assert {"OpenGL", "pyqtgraph.opengl"} <= set(hidden)
