"""At 1280 × 800 with the Learn dock open (a first launch on a laptop) the inputs column is narrow; every input
table in the X and W mode still shows every row and every column without a scroll bar (4 columns of 58 px hid the
X table's x3 behind one)."""

from __future__ import annotations

from qt_settle import settled


def visible_whole(table) -> list[str]:
    """What of ``table`` a scroll bar hides: each row and column not wholly inside the viewport, and the bars."""
    vp = table.viewport().rect()
    model = table.model()
    hidden = []
    for r in range(model.rowCount()):
        y, h = table.rowViewportPosition(r), table.rowHeight(r)
        if y < 0 or y + h > vp.height():
            hidden.append(f"row {model.headerData(r, _vertical())}")
    for c in range(model.columnCount()):
        x, w = table.columnViewportPosition(c), table.columnWidth(c)
        if x < 0 or x + w > vp.width():
            hidden.append(f"column {model.headerData(c, _horizontal())}")
    for name, bar in (("horizontal", table.horizontalScrollBar()), ("vertical", table.verticalScrollBar())):
        if bar.isVisible():
            hidden.append(f"{name} scroll bar")
    return hidden


def _vertical():
    from PySide6.QtCore import Qt

    return Qt.Orientation.Vertical


def _horizontal():
    from PySide6.QtCore import Qt

    return Qt.Orientation.Horizontal


def test_every_input_table_shows_every_row_and_column_at_1280x800_with_the_dock(window, qtbot):
    window.learn.show()  # Help → Lessons: the dock beside the playground
    dock = window.learn.dock
    dock.setFloating(False)  # docked, as at a first launch (it fits: 1280 px leave the maps their room)
    window.resize(1280, 800)
    window.load_preset("cat-sat-mat")
    window.tab.inputs.choose_mode(1)  # X and W (projection)
    # the window asks for a little more than 1280 px with the dock (1310 under Xvfb too): the size the issue saw
    qtbot.waitUntil(lambda: window.width() <= 1320 and dock.isVisible() and not dock.isFloating())
    assert window.playground.mode == "projection" and window.tab.narrow  # the inputs share the left column
    tab = window.tab
    tab.side_tabs.setCurrentWidget(tab.inputs_scroll)
    settled(qtbot)
    editors = {n: e for n, e in window.editors.items() if e.isVisible()}
    assert {"X", "W_Q", "W_K", "W_V"} <= set(editors)
    for name, editor in editors.items():
        assert not visible_whole(editor.table), (name, visible_whole(editor.table), editor.table.width())


def cut_numbers(table) -> list[str]:
    """The cells whose text is wider than their column (drawn shortened, "0…")."""
    model, metrics = table.model(), table.fontMetrics()
    return [str(model.data(model.index(r, c))) for r in range(model.rowCount()) for c in range(model.columnCount())
            if metrics.horizontalAdvance(str(model.data(model.index(r, c)))) + 8 > table.columnWidth(c)]


def test_a_table_too_wide_to_fit_keeps_its_numbers_whole_and_scrolls(window, qtbot):
    window.learn.show()
    dock = window.learn.dock
    dock.setFloating(False)
    window.resize(1280, 800)
    window.load_preset("lesson-random-4x8")  # d_k = d_v = 8: eight columns cannot fit in ~190 px
    window.tab.inputs.choose_mode(0)  # Q, K, V directly
    qtbot.waitUntil(lambda: window.width() <= 1320 and dock.isVisible() and not dock.isFloating())
    tab = window.tab
    tab.side_tabs.setCurrentWidget(tab.inputs_scroll)
    settled(qtbot)
    table = window.editors["Q"].table
    assert table.isVisible() and table.model().columnCount() == 8
    assert table.horizontalScrollBar().isVisible()  # it scrolls, as before …
    assert not cut_numbers(table), cut_numbers(table)  # … with every number whole (36 px columns showed "0…")
    window.load_preset("cat-sat-mat")  # back to a table that fits: every column in view, numbers whole
    window.tab.inputs.choose_mode(1)
    settled(qtbot)
    for name in ("X", "W_Q"):
        assert not visible_whole(window.editors[name].table) and not cut_numbers(window.editors[name].table)
