"""The Steps view with the rotate step at 1024 × 640: every step map keeps its numbers. The rotate step is folded
to its caption line with a ▸ Show button while the view is too short for it (the maps below were squashed to a
few pixels); opened, the maps keep their minimum height and the view scrolls; with every option off nothing
scrolls and the maps are laid out as before."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication
from qt_settle import settled

from app.playground.qt.pipeline import STEPS
from app.playground.qt.step_arrows import MAP_MIN, SMALL_NOTE, numbers_fit


def resize(window, qtbot, w: int, h: int) -> None:  # type: ignore[no-untyped-def]
    window.resize(w, h)
    qtbot.waitUntil(lambda: window.width() == w and window.height() == h, timeout=2000)
    settle(qtbot)


def settle(qtbot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(5):
        QApplication.processEvents()
    settled(qtbot)


def every_map_readable(pipe) -> None:  # type: ignore[no-untyped-def]
    for name in STEPS:
        hm = pipe.heatmaps[name]
        assert hm.height() >= MAP_MIN[1], (name, hm.height())
        assert numbers_fit(hm), name
        assert SMALL_NOTE not in pipe.captions[name].text(), name


def test_1024x640_with_rotary_folds_the_rotate_step_and_keeps_every_maps_numbers(window, qtbot):
    window.load_preset("cat-sat-mat")
    resize(window, qtbot, 1024, 640)
    pipe = window.pipeline
    assert pipe.scroller.verticalScrollBar().maximum() == 0  # every option off: nothing scrolls
    window.edits.apply("rotary", lambda m: m.set_rotary(10000.0))
    settle(qtbot)
    strip = pipe.rotary
    assert strip is not None and strip.isVisible()
    assert strip.collapsed and not strip.body.isVisible()
    assert strip.toggle.isVisible() and "Show" in strip.toggle.text()
    every_map_readable(pipe)
    assert pipe.scroller.verticalScrollBar().maximum() == 0  # folded: a line, no scrolling
    # opened: the rotate step's maps and plot, and the five maps still readable below, reached by scrolling
    strip.toggle.click()
    settle(qtbot)
    assert not strip.collapsed and strip.body.isVisible() and "Hide" in strip.toggle.text()
    assert strip.maps["q_rotated"].height() >= 150 and strip.plot.height() >= 100
    every_map_readable(pipe)
    assert pipe.scroller.verticalScrollBar().maximum() > 0
    # the user's choice holds through a resize
    resize(window, qtbot, 1030, 650)
    assert not strip.collapsed
    strip.toggle.click()
    settle(qtbot)
    assert strip.collapsed and pipe.scroller.verticalScrollBar().maximum() == 0
    every_map_readable(pipe)


def test_a_tall_window_shows_the_rotate_step_open_without_scrolling(window, qtbot):
    window.load_preset("cat-sat-mat")
    window.edits.apply("rotary", lambda m: m.set_rotary(10000.0))
    resize(window, qtbot, 1920, 1080)
    window.splitter.setSizes([0, 2000] + [0] * (window.splitter.count() - 2))  # as on a wide screen
    settle(qtbot)
    pipe = window.pipeline
    assert not pipe.rotary.collapsed and pipe.rotary.body.isVisible()
    assert pipe.scroller.verticalScrollBar().maximum() == 0
    every_map_readable(pipe)
