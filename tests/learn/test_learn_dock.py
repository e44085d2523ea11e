"""The Learn dock never squeezes the playground: a window made narrower than its tabs plus the docked panel need
floats the panel (the maps keep their room and their numbers), and a wide window takes it back."""

from __future__ import annotations

from qt_settle import settled

from app.learn.model.files import find_lesson
from app.learn.qt.dock import CENTRAL_ROOM, REDOCK_SLACK
from app.playground.qt.step_arrows import numbers_fit


def test_a_narrowed_window_floats_the_dock_instead_of_squeezing_the_maps(window, qtbot):
    learn = window.learn
    learn.open(find_lesson("dot-product"), 0)
    dock = learn.dock
    dock.setFloating(False)  # docked, as on a wide screen at first launch
    window.resize(1500, 800)
    qtbot.waitUntil(lambda: window.width() == 1500 and not dock.isFloating())
    central = window.centralWidget()
    assert central.width() <= 1500 - dock.width()  # docked beside the tabs
    window.resize(1024, 640)
    qtbot.waitUntil(lambda: dock.isFloating() and learn.floated_for_room, timeout=3000)
    assert dock.isVisible()
    window.resize(1024, 640)  # the docked panel's minimum no longer holds the window wide
    qtbot.waitUntil(lambda: window.width() == 1024)
    assert central.width() == window.width() >= central.minimumSizeHint().width()
    pipeline = window.tab.pipeline
    qtbot.waitUntil(lambda: all(numbers_fit(h) for h in pipeline.heatmaps.values()), timeout=3000)
    # wide again: the panel floated for room docks back; narrowing by a little keeps it (no flip-flopping)
    wide = CENTRAL_ROOM + REDOCK_SLACK + dock.width() + 20
    window.resize(wide, 800)
    qtbot.waitUntil(lambda: not dock.isFloating(), timeout=3000)
    assert not learn.floated_for_room and window.width() - dock.width() >= CENTRAL_ROOM
    window.resize(window.width() - 10, 800)
    settled(qtbot)
    assert not dock.isFloating()


def test_a_panel_the_learner_floated_stays_floating(window, qtbot):
    learn = window.learn
    learn.open(find_lesson("dot-product"), 0)
    learn.dock.setFloating(True)  # the learner's own choice
    learn.floated_for_room = False
    window.resize(1600, 800)
    settled(qtbot)
    assert learn.dock.isFloating()
