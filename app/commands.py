"""Undoable edits. Each command stores the state's snapshot before and after (the state is small), so every
kind of edit undoes the same way; a scrub of one cell merges into one step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtGui import QUndoCommand

from .state import PlaygroundState

_MERGE_ID = 4242


class StateCommand(QUndoCommand):
    """Restore ``after`` on redo and ``before`` on undo, then tell the window to refresh."""

    def __init__(self, state: PlaygroundState, before: dict[str, Any], after: dict[str, Any], text: str,
                 on_change: Callable[[], None], merge_key: str | None = None) -> None:
        super().__init__(text)
        self.state, self.before, self.after = state, before, after
        self.on_change, self.merge_key = on_change, merge_key

    def redo(self) -> None:
        self.state.restore(self.after)
        self.on_change()

    def undo(self) -> None:
        self.state.restore(self.before)
        self.on_change()

    def id(self) -> int:  # noqa: A003 (Qt API)
        return _MERGE_ID if self.merge_key else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802
        if isinstance(other, StateCommand) and other.merge_key and other.merge_key == self.merge_key:
            self.after = other.after
            return True
        return False


class CellCommand(QUndoCommand):
    """One cell of one matrix: the hot path of typing and scrubbing, without whole-state snapshots.

    Consecutive scrub steps with the same ``merge_key`` (one drag of one cell) merge into one undo step.
    """

    def __init__(self, state: PlaygroundState, name: str, row: int, col: int, old: float, new: float,
                 on_change: Callable[[], None], merge_key: str | None = None) -> None:
        super().__init__(f"Edit {name}[{row}, {col}]")
        self.state, self.name, self.row, self.col = state, name, row, col
        self.old, self.new = old, new
        self.on_change, self.merge_key = on_change, merge_key

    def redo(self) -> None:
        self.state.set_cell(self.name, self.row, self.col, self.new)
        self.on_change()

    def undo(self) -> None:
        self.state.set_cell(self.name, self.row, self.col, self.old)
        self.on_change()

    def id(self) -> int:  # noqa: A003 (Qt API)
        return _MERGE_ID if self.merge_key else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802
        if isinstance(other, CellCommand) and other.merge_key and other.merge_key == self.merge_key:
            self.new = other.new
            return True
        return False
