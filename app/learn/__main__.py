"""``python -m app.learn``: the Learn panel beside the Playground it teaches on (lessons over a fresh model; the
lessons about Training and the Lab need the whole window: ``python -m app``)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QUndoStack
    from PySide6.QtWidgets import QSplitter

    from app.learn.model.engine import LessonRun
    from app.learn.model.files import MemoryStore, bundled_lessons
    from app.learn.qt.panel import LearnPanel
    from app.playground.model.playground import PlaygroundModel
    from app.playground.qt.commands import UndoableEdits
    from app.playground.tab import PlaygroundTab

    model, stack = PlaygroundModel(), QUndoStack()
    edits = UndoableEdits(model, stack)
    store = MemoryStore()
    splitter = QSplitter(Qt.Orientation.Horizontal)
    splitter.addWidget(PlaygroundTab(model, edits))
    splitter.addWidget(LearnPanel(bundled_lessons(), lambda lesson: LessonRun(lesson, model, edits.apply, store),
                                  store, lambda _names: None))
    splitter._undo_stack = stack  # kept alive with the window
    return splitter


if __name__ == "__main__":
    sys.exit(show_alone("Learn panel", _build))
