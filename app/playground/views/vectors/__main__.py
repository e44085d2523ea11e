"""``python -m app.playground.views.vectors``: the Vectors view alone, on cat-sat-mat (drags go through an undo
stack)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QUndoStack

    from app.playground.model.playground import PlaygroundModel
    from app.playground.qt.commands import UndoableEdits
    from app.playground.views.vectors.view import VectorView

    model, stack = PlaygroundModel(), QUndoStack()
    view = VectorView(model, UndoableEdits(model, stack))
    stack.setParent(view)  # kept alive with the view
    return view


if __name__ == "__main__":
    sys.exit(show_alone("Vectors view", _build))
