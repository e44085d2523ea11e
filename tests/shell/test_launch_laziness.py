"""Launch: the first frame imports and builds only what it shows. The other tabs' hosts, the views
behind Steps and the Learn wiring are made on first use, and every name scripts and tests use still works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FIRST_FRAME = """
import os, sys
from PySide6.QtCore import QSettings
from app.widgets.application import make_application
from app import create_main_window
app = make_application()
settings = QSettings(sys.argv[1], QSettings.Format.IniFormat)
settings.setValue("learn/offer_dismissed", "true")
w = create_main_window(settings=settings)
w.show()
from app.playground.views.registry import VIEWS
heavy = ["torch", "PIL", "imageio_ffmpeg", "pyqtgraph.opengl", "superqt", "app.learn.qt.dock", "app.learn.model.engine",
         "app.playground.qt.rotary_step", "app.playground.qt.rotary_plot", "app.playground.model.rotary",
         "numpy.random",
         "app.training.qt.host", "app.experiments.qt.host", "app.lab.qt.host", "app.model_tab.qt.host",
         *(view.module for view in VIEWS)]  # every view behind Steps, a new one too
print("loaded", [m for m in heavy if m in sys.modules])  # the Learn wiring comes 150 ms after the first frame
app.processEvents()
print("tabs", [w.tabs.tabText(i) for i in range(w.tabs.count())])
print("views", [w.tab.view_tabs.tabText(i) for i in range(w.tab.view_tabs.count())])
print("registry", ["Steps", *(v.title for v in VIEWS)])
os._exit(0)
"""


FIRST_LAUNCH = FIRST_FRAME.replace('settings.setValue("learn/offer_dismissed", "true")\n', "")


@pytest.mark.parametrize("script", [FIRST_FRAME, FIRST_LAUNCH], ids=["offer-dismissed", "first-launch"])
def test_the_first_frame_loads_none_of_what_it_does_not_show(tmp_path, script):
    # a first launch too: its frame shows the offer, not the Learn dock (nor the lesson engine it imports)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "s.ini")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    assert out["loaded"] == "[]"
    assert out["tabs"] == "['Playground', 'Training', 'Experiments', 'Lab', 'Model']"
    assert out["views"] == out["registry"] and "'Vectors', '3D', 'Flow'" in out["views"]  # the registry's order


def test_hosts_and_views_are_made_on_first_use_in_their_places(window, qtbot):
    from app.training.model.session import TrainingSession

    hosts = window.hosts
    assert hosts.hosts == {}  # nothing made by building the window
    assert isinstance(window.training, TrainingSession)  # scripts' name: makes the host
    assert set(hosts.hosts) == {"training"} and window.training_host.model is window.training
    assert window.tabs.tabText(1) == "Training" and window.training_host.built is None
    window.tabs.setCurrentIndex(3)  # the Lab's placeholder: its host, then its tab
    qtbot.waitUntil(lambda: "lab" in hosts.hosts and hosts.hosts["lab"]._tab is not None, timeout=10000)
    assert window.tabs.currentIndex() == 3 and window.tabs.tabText(3) == "Lab"
    assert window.tabs.currentWidget() is window.lab.tab
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == [
        "Playground", "Training", "Experiments", "Lab", "Model"]

    tab = window.tab
    assert not tab.is_built("multihead") and not tab.is_built("flow")
    seen = []
    tab.when_built("flow", seen.append)
    tab.view_tabs.setCurrentIndex(4)  # Flow's placeholder: the view is built in its place and shown
    assert tab.is_built("flow") and seen == [tab.flow] and tab.view_tabs.currentWidget() is tab.flow
    assert window.multihead is tab.multihead and tab.view_tabs.indexOf(tab.multihead) == 1
    window.set_theme("dark")
    assert tab.flow.colors.dark and not tab.is_built("three_d")  # a built view follows it; it builds none
    tab.view_tabs.setCurrentIndex(0)


def test_the_first_launch_offer_is_in_the_first_frame_and_the_learn_wiring_right_after(window, qtbot):
    # fresh settings: the first frame shows the offer, a light widget; the Learn dock's wiring (the lesson engine)
    # is installed right after the first frame and takes the same offer over
    offer = window.learn_offer
    assert offer is not None and offer.isVisible() and "Take a guided lesson" in offer.take_button.text()
    qtbot.waitUntil(lambda: window._learn is not None, timeout=5000)
    assert window.learn.offer is offer and offer.isVisible()
    assert any(a.text() == "&Lessons" for a in window.menuBar().actions()[-1].menu().actions())


def test_taking_the_offer_before_the_learn_wiring_installs_it(window, qtbot):
    window.learn_offer.take_button.click()  # reading window.learn installs the wiring, then the dock opens
    assert window._learn is not None and window.learn.dock.isVisible() and not window.learn_offer.isVisible()


def test_the_presets_menu_lists_every_preset_once_it_is_opened(window):
    from attention_core.presets import PRESET_NAMES, get_preset

    menu = window.preset_menu  # filled when first opened (a title comes from building its preset)
    for _ in range(2):  # opened twice: listed once
        menu.aboutToShow.emit()
        titles = [a.text() for a in menu.actions() if not a.isSeparator()]
        assert titles == [get_preset(n).title for n in PRESET_NAMES] + ["Random (seed…)"]
    magnitude = menu.actions()[PRESET_NAMES.index("magnitude")]
    assert magnitude.toolTip() == get_preset("magnitude").story
    magnitude.trigger()
    assert window.playground.state.preset_name == "magnitude" and window.undo_stack.canUndo()
