"""Undoable edits of the Playground model. A command calls model methods and nothing else: the model's events
bring every view up to date, so no command knows a widget.

``UndoableEdits`` is what views call: it runs the model method once (a ``ValueError`` refuses the edit, changes
nothing and is reported through ``refused``), then pushes a command whose first ``redo`` has nothing left to do.
Every discrete change is its own step; continuous drags (a cell scrub, the scale slider) pass a ``merge_key`` and
merge into one step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from app.playground.model.playground import PlaygroundModel

_MERGE_ID = 4242
UNDO_LIMIT = 1000
"""Undo steps a window keeps. Each whole-state step holds two snapshots of the state (up to ~0.5 MB at the largest
dimensions), so an unlimited stack grows without end in a long lesson; 1,000 steps is far more than a learner
walks back."""


class ModelCommand(QUndoCommand):
    """Any edit: ``before``/``after`` snapshots, restored through ``model.restore`` on undo/redo."""

    def __init__(self, model: PlaygroundModel, before: dict[str, Any], after: dict[str, Any], text: str,
                 merge_key: str | None = None) -> None:
        super().__init__(text)
        self.model, self.before, self.after, self.merge_key = model, before, after, merge_key
        self._applied = True  # built after the model already changed: the push's redo has nothing to do

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self.model.restore(self.after)

    def undo(self) -> None:
        self.model.restore(self.before)

    def id(self) -> int:  # noqa: A003 (Qt API)
        return _MERGE_ID if self.merge_key else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802
        if isinstance(other, ModelCommand) and other.merge_key and other.merge_key == self.merge_key:
            self.after = other.after
            return True
        return False


class CellCommand(QUndoCommand):
    """One cell of one matrix: the hot path of typing and scrubbing, without whole-model snapshots."""

    def __init__(self, model: PlaygroundModel, name: str, row: int, col: int, old: float, new: float,
                 merge_key: str | None = None) -> None:
        super().__init__(f"Edit {name}[{row}, {col}]")
        self.model, self.name, self.row, self.col = model, name, row, col
        self.old, self.new, self.merge_key = old, new, merge_key
        self._applied = True

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self.model.set_cell(self.name, self.row, self.col, self.new)

    def undo(self) -> None:
        self.model.set_cell(self.name, self.row, self.col, self.old)

    def id(self) -> int:  # noqa: A003 (Qt API)
        return _MERGE_ID if self.merge_key else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802
        if isinstance(other, CellCommand) and other.merge_key and other.merge_key == self.merge_key:
            self.new = other.new
            return True
        return False


def _same_snapshot(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two snapshots of ``UndoableEdits._snapshot`` describe the same state (matrices compared by value)."""
    if a.keys() != b.keys() or any(a[k] != b[k] for k in a if k != "matrices"):
        return False
    ma, mb = a["matrices"], b["matrices"]
    return ma.keys() == mb.keys() and all(ma[k] is mb[k] or np.array_equal(ma[k], mb[k]) for k in ma)


class UndoableEdits(QObject):
    """The one door for user edits: model method → undo stack. ``refused(message)`` when the model says no."""

    refused = Signal(str)
    accepted = Signal()

    def __init__(self, model: PlaygroundModel, stack: QUndoStack, parent: QObject | None = None) -> None:
        if stack.count() == 0 and stack.undoLimit() == 0:  # Qt accepts a limit only while the stack is empty
            stack.setUndoLimit(UNDO_LIMIT)
        super().__init__(parent)
        self.model, self.stack = model, stack
        self._last_matrices: dict[str, np.ndarray] = {}

    def apply(self, text: str, fn: Callable[[PlaygroundModel], Any], merge_key: str | None = None,
              on_refused: Callable[[str], Any] | None = None) -> bool:
        """Run ``fn(model)`` as one undo step. Returns False when the model refuses, and says why: to
        ``on_refused`` when given (a control that shows its own errors next to itself), else through ``refused``."""
        before = self._snapshot()
        try:
            fn(self.model)
        except ValueError as exc:
            (on_refused or self.refused.emit)(str(exc))
            return False
        after = self._snapshot()
        self.accepted.emit()
        if not _same_snapshot(after, before):
            self.stack.push(ModelCommand(self.model, before, after, text, merge_key))
        return True

    def _snapshot(self) -> dict[str, Any]:
        """The model's snapshot with its matrices as read-only arrays, each one *shared* with the previous
        snapshot's when unchanged: a mask or scale step then holds no matrix of its own, and a long session's
        undo history stays small (see ``UNDO_LIMIT``)."""
        snap = self.model.snapshot(arrays=True)
        matrices = snap["matrices"]
        for name, arr in matrices.items():
            last = self._last_matrices.get(name)
            if last is not None and last.shape == arr.shape and np.array_equal(last, arr):
                matrices[name] = last
            else:
                arr.setflags(write=False)
        self._last_matrices = matrices
        return snap

    def set_row(self, name: str, row: int, values: Any, merge_key: str | None = None, text: str = "") -> bool:
        """A whole row of a matrix (a dragged arrow in the Vector view) as one undo step; the moves of one drag
        share a ``merge_key`` and merge."""
        block = np.asarray(values, dtype=np.float64).reshape(1, -1)
        return self.apply(text or f"Edit {name} row {row + 1}", lambda m: m.set_block(name, row, 0, block), merge_key)

    def set_cell(self, name: str, row: int, col: int, value: float, merge_key: str | None = None) -> bool:
        """One cell as one undo step (a scrub's steps share a ``merge_key`` and merge)."""
        m = self.model.matrices.get(name)
        inside = m is not None and 0 <= row < m.shape[0] and 0 <= col < m.shape[1]
        old = float(m[row, col]) if m is not None and inside else math.nan
        try:
            self.model.set_cell(name, row, col, value)  # validates name, cell and value (the one check)
        except ValueError as exc:
            self.refused.emit(str(exc))
            return False
        self.accepted.emit()
        if old != value:
            self.stack.push(CellCommand(self.model, name, row, col, old, float(value), merge_key))
        return True
