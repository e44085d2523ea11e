"""A live edit with the Tiles view open gives the table's items new text instead of making the table anew: making
its items and measuring every column on each edit was most of an edit's cost with the view in front (17.6 ms median
at 8 × 16 with rotary on, against 10.1 ms reusing them; benchmarks/bench_gui_edit.py --modern). The numbers shown
stay those of the record."""

from __future__ import annotations

import pytest

from app.playground.views.tiles import model as tm


@pytest.fixture
def tiles(window, qtbot):
    m = window.playground
    m.load_preset("random-3")
    m.set_mode("qkv")  # Q itself editable
    window.view_tabs.setCurrentWidget(window.tab.tiles)
    qtbot.waitExposed(window.tab.tiles)
    return window.tab.tiles


def test_an_edit_reuses_the_tables_items_and_shows_the_new_numbers(window, tiles, qtbot, monkeypatch):
    table = tiles.table
    items = [table.item(r, c) for r in range(table.rowCount()) for c in range(table.columnCount())]
    measured = []
    monkeypatch.setattr(table, "resizeColumnsToContents", lambda: measured.append(1))
    before = table.item(0, 1).data(256)
    q = window.playground.state.matrices["Q"]
    window.edits.set_cell("Q", 0, 0, float(q[0, 0]) + 0.5)
    qtbot.waitUntil(lambda: table.item(0, 1).data(256) != before, timeout=5000)
    assert [table.item(r, c) for r in range(table.rowCount()) for c in range(table.columnCount())] == items
    frame = tiles.frame
    assert table.item(0, 1).text() == tm.number(float(frame.m[0]))  # m of query 0 at the tile shown
    assert table.item(0, 1).data(256) == pytest.approx(float(frame.m[0]), abs=0)
    widths_same = all(len(table.item(r, c).text()) <= tiles._widths[c] for r in range(table.rowCount())
                      for c in range(table.columnCount()))
    assert widths_same and len(measured) <= 1  # re-measured only if a text's length changed
