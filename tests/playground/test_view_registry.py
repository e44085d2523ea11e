"""The Playground's views behind Steps come from one registry (app/playground/views/registry.py): a new view is one
module with ``build(model, edits)`` and one line there; the tab adds its tab, builds it on first use, names it
``tab.<name>`` and wires its cells to hover and pin, with no code of its own in the tab."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
from PySide6.QtGui import QUndoStack
from PySide6.QtWidgets import QWidget

from app.playground.model.playground import PlaygroundModel
from app.playground.qt.commands import UndoableEdits
from app.playground.tab import PlaygroundTab
from app.playground.views import registry
from app.widgets.theme import ThemeController

PLANTED_VIEW = textwrap.dedent('''
    from PySide6.QtCore import Signal
    from PySide6.QtWidgets import QLabel

    from app.widgets.theme import follow_theme

    class CellsView(QLabel):
        cellHovered = Signal(str, int, int)
        cellClicked = Signal(str, int, int)

        def __init__(self, model, edits):
            super().__init__("planted")
            self.model, self.edits, self.dark = model, edits, None
            follow_theme(self._restyle)

        def _restyle(self, colors):
            self.dark = colors.dark

    def build(model, edits):
        return CellsView(model, edits)
''')


def make_tab(qtbot) -> PlaygroundTab:
    model, stack = PlaygroundModel(), QUndoStack()
    tab = PlaygroundTab(model, UndoableEdits(model, stack))
    tab._undo_stack = stack  # kept alive with the tab
    qtbot.addWidget(tab)
    return tab


def test_every_registered_view_is_a_tab_built_from_its_module(qtbot):
    tab = make_tab(qtbot)
    titles = [tab.view_tabs.tabText(i) for i in range(tab.view_tabs.count())]
    assert titles == ["Steps", *(v.title for v in registry.VIEWS)]  # a new view needs no edit here
    assert {"multihead", "vectors", "three_d", "flow"} <= {v.name for v in registry.VIEWS}
    for entry in registry.VIEWS:
        assert callable(importlib.import_module(entry.module).build), entry
    view = tab.vectors  # built on first read, in its placeholder's place, under its registry name
    assert tab.is_built("vectors") and tab.view_tabs.indexOf(view) == 2 and tab.view("vectors") is view
    assert type(view).__name__ == "VectorView" and not tab.is_built("three_d")
    with pytest.raises(AttributeError):
        tab.surface  # noqa: B018 (the 3D view is three_d: one name for it)


def test_a_new_view_is_one_module_and_one_registry_line(qtbot, tmp_path, monkeypatch, request):
    (tmp_path / "planted_cells_view.py").write_text(PLANTED_VIEW)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "VIEWS", (*registry.VIEWS, registry.PlaygroundView("cells", "Cells",
                                                                                     "planted_cells_view")))
    tab = make_tab(qtbot)
    theme = ThemeController(tab)  # the application's theme, as the window sets it: dark before the view is built
    theme.apply(True)
    request.addfinalizer(lambda: (theme.apply(False), theme.release()))
    planted = len(registry.VIEWS)  # its tab: after Steps and every view before it
    assert tab.view_tabs.tabText(planted) == "Cells" and not tab.is_built("cells")
    assert "planted_cells_view" not in sys.modules  # nothing of it imported before it is opened
    tab.view_tabs.setCurrentIndex(planted)  # the user opens it
    view: QWidget = tab.cells
    assert tab.is_built("cells") and tab.view_tabs.currentWidget() is view and view.text() == "planted"
    assert view.model is tab.model and view.edits is tab.edits
    view.cellHovered.emit("weights", 1, 2)  # its cells reach the model as the Steps view's do
    assert tab.model.hovered == ("weights", 1, 2)
    view.cellClicked.emit("scores", 0, 1)
    assert tab.model.pinned == ("scores", 0, 1)
