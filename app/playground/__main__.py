"""``python -m app.playground``: the Playground tab alone (every view, edits through an undo stack)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QUndoStack

    from app.playground.model.playground import PlaygroundModel
    from app.playground.qt.commands import UndoableEdits
    from app.playground.tab import PlaygroundTab

    model = PlaygroundModel()
    stack = QUndoStack()
    tab = PlaygroundTab(model, UndoableEdits(model, stack))
    tab._undo_stack = stack  # kept alive with the tab
    return tab


if __name__ == "__main__":
    sys.exit(show_alone("Playground", _build))
