"""Leaving presentation mode gives the Playground's columns back the widths they had, also where a column sat at
its least width. Before: the columns were restored while the presentation fonts (``PRESENT_BOOST`` larger) were
still applied, so a side column at its least width at the normal size came back at its least width at the larger
size (the launch layout's left column, 245 px, came back 291 px; seen under Xvfb at 1310 x 800 with the Learn dock)."""

from __future__ import annotations

import pytest

from tests.shell.test_presentation_layouts import NARROW, WIDE, settle


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["narrow", "wide"])
def test_leaving_presentation_restores_columns_at_their_least_width(window, qtbot, size):
    window.resize(*size)
    settle(qtbot)
    tab = window.tab
    first = tab.widget(0)  # the Inputs | Controls tabs (narrow) or the inputs column (wide)
    least = first.minimumSizeHint().width()
    assert least > 0
    sizes = tab.sizes()
    sizes[1] += sizes[0] - least  # the first column as narrow as it may be, as at a launch on a small screen
    sizes[0] = least
    tab.setSizes(sizes)
    settle(qtbot)
    before = tab.sizes()
    assert before[0] == least
    window.presenter.set_presenting(True)
    settle(qtbot)
    assert first.minimumSizeHint().width() > least  # the premise: presenting, the column needs more room
    window.presenter.set_presenting(False)
    settle(qtbot)
    assert (tab.narrow, tab.sizes()) == ((size == NARROW), before)
