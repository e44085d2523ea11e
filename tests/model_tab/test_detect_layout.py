"""The Detect view in a narrow column: at 1280 × 800 with the Learn dock open (lesson 8's own screen) three columns
left the pattern map ~70 px high and ~150 px wide, the loss curve ~100 px, and their captions cut. Narrow, the heads
list becomes a tab of the left column; wide, it stays a column of its own."""

from __future__ import annotations

from qt_settle import settled


def _detect_at(window, qtbot, path, size):
    """The Model tab's session with a model and its detectors run, and a Detect view of it at ``size`` (the room the
    window gives it: 660 × 510 at 1280 × 800 beside the Learn dock, measured on a screenshot)."""
    from app.model_tab.qt.detect_view import DetectView

    session = window.inspect.model
    session.load(path)
    qtbot.waitUntil(lambda: session.trace is not None and not session.tracing, timeout=60_000)
    view = DetectView(session)
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: session.heads.detection is not None and not session.heads.busy, timeout=60_000)
    view.scores.cellClicked.emit(1, 0)  # a head picked: its pattern and caption drawn
    settled(qtbot)
    return view


def _caption_whole(label) -> bool:
    return label.isVisible() and label.heightForWidth(label.width()) <= label.height()


def test_beside_the_learn_dock_the_pattern_and_the_curve_get_room_and_whole_captions(window, qtbot,
                                                                                       induction_model):
    view = _detect_at(window, qtbot, induction_model, (660, 510))
    plot = view.pattern.plot.getViewBox().sceneBoundingRect()
    assert plot.height() >= 100 and plot.width() >= 150, plot  # was ~70 px high
    assert view.curve.plot_widget.height() >= 120 and view.curve.plot_widget.width() >= 250
    for label in (view.pattern_caption, view.curve.caption, view.score_caption):
        assert _caption_whole(label), label.text()
    assert view.narrow and view.left.indexOf(view.heads) >= 0  # the heads list is a tab of the left column
    # the heads list (with its buttons) is there when its tab is picked
    view.left.setCurrentWidget(view.heads)
    settled(qtbot)
    assert view.heads.isVisible() and view.heads.list.count() == 8 and view.heads.width() > 170


def test_a_wide_view_keeps_the_heads_list_as_a_column(window, qtbot, induction_model):
    view = _detect_at(window, qtbot, induction_model, (1400, 800))
    assert not view.narrow and view.left.indexOf(view.heads) < 0
    assert view.heads.isVisible() and view.heads.width() == 170
    view.resize(660, 510)  # narrow, then wide again: the list goes back to its column, shown
    qtbot.waitUntil(lambda: view.narrow, timeout=5000)
    view.resize(1400, 800)
    qtbot.waitUntil(lambda: not view.narrow, timeout=5000)
    settled(qtbot)
    assert view.heads.isVisible() and view.left.count() == 2 and view.heads.width() == 170


def test_a_short_view_gives_the_pattern_and_the_curve_a_tab_each(window, qtbot, induction_model):
    """At 1024 × 640 the Detect view is ~725 × 330 px: the pattern and the curve sharing its height left the map ~30
    px high. Short, they are two tabs, each with the whole height; tall again, they share it as before."""
    from app.model_tab.qt.detect_view import CURVE_TAB, PATTERN_TAB

    view = _detect_at(window, qtbot, induction_model, (725, 330))
    assert view.short and view.middle_tabs.isVisible() and not view.middle.isVisible()
    assert [view.middle_tabs.tabText(i) for i in range(view.middle_tabs.count())] == [PATTERN_TAB, CURVE_TAB]
    plot = view.pattern.plot.getViewBox().sceneBoundingRect()
    assert plot.height() >= 100, plot
    view.middle_tabs.setCurrentWidget(view.curve)
    settled(qtbot)
    assert view.curve.isVisible() and view.curve.plot_widget.height() >= 150
    view.resize(660, 510)
    qtbot.waitUntil(lambda: not view.short, timeout=5000)
    settled(qtbot)
    assert view.middle.isVisible() and not view.middle_tabs.isVisible() and view.middle.count() == 2
    assert view.pattern_window.isVisible() and view.curve.isVisible()
