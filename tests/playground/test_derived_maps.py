"""The derived Q, K, V maps (projection mode) are built right after the first frame, not before it (the
launch budget), and then behave as if they had always been there: inside the left column, shown in projection mode,
hidden in Q, K, V mode, drawn with the current numbers and theme."""

from __future__ import annotations

import numpy as np


def test_the_derived_maps_come_right_after_the_first_frame_inside_the_left_column(window, qtbot):
    inputs = window.tab.inputs
    assert window.playground.state.mode == "projection"  # the first preset
    qtbot.waitUntil(lambda: len(inputs.derived) == 3, timeout=5000)
    for hm in window.derived.values():
        assert not hm.isWindow() and inputs.isAncestorOf(hm)  # never a window of its own
        qtbot.waitUntil(hm.isVisible, timeout=5000)
        assert hm.width() > 20
    x = window.playground.state.matrices
    np.testing.assert_allclose(window.derived["K"].values(), x["X"] @ x["W_K"], rtol=1e-12, atol=1e-12)
    order = [inputs._column.indexOf(w) for w in (inputs.derived_title, *window.derived.values())]
    assert order == sorted(order) and order[-1] - order[0] == 3  # under their title, Q, K, V


def test_the_derived_maps_follow_the_mode_and_the_theme(window, qtbot):
    window.edits.apply("qkv", lambda m: m.set_mode("qkv"))
    hm = window.derived["Q"]  # asking builds them, whatever the mode
    assert not hm.isVisible()
    window.set_theme("dark")
    window.edits.apply("projection", lambda m: m.set_mode("projection", "self"))
    qtbot.waitUntil(hm.isVisible, timeout=5000)
    assert hm._dark and hm.graphics.backgroundBrush().color().lightness() < 60
    x = window.playground.state.matrices
    np.testing.assert_allclose(hm.values(), x["X"] @ x["W_Q"], rtol=1e-12, atol=1e-12)
    window.set_theme("light")


def test_derived_maps_built_behind_another_tab_show_when_the_playground_does(window, panel, qtbot):
    # the Training tab is shown (the panel fixture) before the left column's first frame: the maps are built
    # behind it; shown before they had a parent, they were hidden for good (seen in the dark-theme test)
    window.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: len(window.tab.inputs.derived) == 3, timeout=5000)
    for hm in window.derived.values():
        qtbot.waitUntil(hm.isVisible, timeout=5000)
        assert not hm.isWindow()

