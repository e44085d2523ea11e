"""Presentation mode from every starting layout: narrow (the Inputs | Controls tabs) and wide
(two side columns), on first use and later, with the full-screen window's own layout the same or the other one.
Every time: the maps are shown, no side column is, and leaving restores exactly what was visible before.

Before: on a narrow window the presenter hid "the last widget of the splitter", which in the narrow layout is the
maps' column (the first F11 showed the "Scale, mask, heads" panel alone, no map); and leaving after a switch of
layout showed pages of the tab widget by hand, which then stayed hidden (the Inputs column gone)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from qt_settle import settled

WIDE, NARROW = (1400, 800), (1000, 700)


def visible_state(window) -> dict[str, object]:
    tab = window.tab
    return {
        "narrow": tab.narrow,
        "maps": window.pipeline.isVisible() and all(hm.isVisible() for hm in window.pipeline.heatmaps.values()),
        "inputs": tab.inputs_scroll.isVisible(),
        "controls": tab.controls_scroll.isVisible(),
        "side_tabs": tab.side_tabs.isVisible(),
        "page": tab.side_tabs.currentIndex() if tab.narrow else None,
    }


def assert_presenting(window) -> None:
    tab = window.tab
    assert window.presenter.presenting and window.isFullScreen()
    assert window.pipeline.isVisible(), "the maps must be shown"
    assert all(hm.isVisible() for hm in window.pipeline.heatmaps.values())
    assert not tab.inputs_scroll.isVisible() and not tab.controls_scroll.isVisible() and not tab.side_tabs.isVisible()
    assert not any(p.isVisible() for p in window.presenter.side_panels())


def settle(qtbot) -> None:
    settled(qtbot)


@pytest.mark.parametrize("start", ["wide", "narrow"])
@pytest.mark.parametrize("switch", [False, True], ids=["same-layout", "other-layout-while-presenting"])
def test_present_and_leave_from_each_layout_first_use_and_later(window, qtbot, start, switch):
    window.resize(*(WIDE if start == "wide" else NARROW))
    settle(qtbot)
    assert window.tab.narrow is (start == "narrow")
    if start == "narrow":
        window.tab.side_tabs.setCurrentIndex(1)  # "Scale, mask, heads" in front: it must come back in front
    before = visible_state(window)
    assert before["maps"] and (before["side_tabs"] if start == "narrow" else before["inputs"] and before["controls"])
    for use in ("first", "later"):
        window.presenter.present_action.trigger()  # F11
        settle(qtbot)
        assert_presenting(window)
        if switch:  # the full-screen window has the other layout (a screen of the other width)
            window.tab.set_narrow(not window.tab.narrow)
            settle(qtbot)
            assert_presenting(window)
        qtbot.keyClick(window, Qt.Key.Key_Escape)
        settle(qtbot)
        if window.tab.narrow != before["narrow"]:  # offscreen, the normal size may come back after the switch
            window.tab.set_narrow(before["narrow"])
            settle(qtbot)
        assert not window.presenter.presenting and not window.isFullScreen()
        assert visible_state(window) == before, use
        if start == "narrow":
            assert window.tab.side_tabs.currentWidget().isVisible()  # the page in front is shown, not left hidden


def test_layout_switch_after_presenting_shows_every_column(window, qtbot):
    """After presenting, switching between the layouts still shows both side columns (the pages of the tabs
    were once left hidden)."""
    window.resize(*NARROW)
    settle(qtbot)
    window.presenter.set_presenting(True)
    settle(qtbot)
    window.presenter.set_presenting(False)
    window.resize(*WIDE)
    settle(qtbot)
    assert not window.tab.narrow
    assert window.tab.inputs_scroll.isVisible() and window.tab.controls_scroll.isVisible()
    window.resize(*NARROW)
    settle(qtbot)
    assert window.tab.narrow and window.tab.side_tabs.isVisible()
    for i in range(2):
        window.tab.side_tabs.setCurrentIndex(i)
        settle(qtbot)
        assert window.tab.side_tabs.currentWidget().isVisible()


def test_columns_widths_come_back(window, qtbot):
    window.resize(*WIDE)
    settle(qtbot)
    window.tab.setSizes([250, 900, 240])
    settle(qtbot)
    sizes = window.tab.sizes()
    window.presenter.set_presenting(True)
    settle(qtbot)
    window.presenter.set_presenting(False)
    settle(qtbot)
    assert window.tab.sizes() == sizes
