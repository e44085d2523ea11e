"""A spreadsheet-like editor for one matrix of the state: type, Tab, paste, copy, Ctrl+drag to scrub.

The table model never changes the Playground model itself: an edit goes through ``UndoableEdits`` (one undo step;
a scrub's drag merges), and the editor follows the model's events (``matrices`` repaints the cells that changed,
a new shape or new labels reset the table; ``explanation`` outlines the source rows). Text that is not a finite
number is refused with a message and the old value stays.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QInputDialog, QLabel, QTableView, QVBoxLayout, QWidget

from app.playground.model.playground import PlaygroundModel
from app.playground.model.state import PlaygroundState, parse_number
from app.playground.qt.commands import UndoableEdits

Index = QModelIndex | QPersistentModelIndex


def short_number(v: float) -> str:
    """At most ~6 characters so a 58 px column never elides: 3 decimals below 10, 2 below 100, else 4 digits."""
    if abs(v) >= 100:
        s = f"{v:.4g}"
    elif v != 0 and abs(v) < 0.0005:
        s = f"{v:.0e}"  # tiny but not zero: say so
    else:
        s = f"{v:.3f}" if abs(v) < 10 else f"{v:.2f}"
        s = s.rstrip("0").rstrip(".") if "." in s else s
        if s in ("-0", ""):
            s = "0"
    return s.replace("-", "−")


class MatrixTableModel(QAbstractTableModel):
    """Shows ``model.matrices[name]``; edits go out as ``edit_requested(name, row, col, value)``."""

    edit_requested = Signal(str, int, int, float)
    rejected = Signal(str)

    def __init__(self, playground: PlaygroundModel, name: str, parent: Any = None) -> None:
        super().__init__(parent)
        self.playground, self.name = playground, name
        self.highlight_rows: tuple[int, ...] = ()
        self.highlight_cols: tuple[int, ...] = ()
        self._shown = self.matrix().copy()  # what the view last showed: sync() repaints only what changed
        self._row_labels = self.state.row_labels(name)
        self._col_labels = self.state.col_labels(name)

    @property
    def state(self) -> PlaygroundState:
        return self.playground.state  # read each time: undo replaces the model's state object

    def matrix(self) -> np.ndarray:
        return self.state.matrices[self.name]

    def labels_changed(self) -> bool:
        return (self.state.row_labels(self.name) != self._row_labels
                or self.state.col_labels(self.name) != self._col_labels)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else self.matrix().shape[0]

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else self.matrix().shape[1]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        v = float(self.matrix()[index.row(), index.column()])
        if role == Qt.ItemDataRole.DisplayRole:
            return short_number(v)  # full precision in the tooltip and while editing
        if role == Qt.ItemDataRole.EditRole:
            return repr(v)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{self.name}[{self.state.row_labels(self.name)[index.row()]}, {index.column()}] = {v!r}"
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.BackgroundRole and (
                index.row() in self.highlight_rows or index.column() in self.highlight_cols):
            return QBrush(QColor(255, 0, 200, 60))
        return None

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if role != Qt.ItemDataRole.EditRole or not index.isValid():
            return False
        try:
            number = parse_number(value)
        except ValueError as exc:
            self.rejected.emit(f"{self.name}: {exc}; the old value is kept.")
            return False
        self.edit_requested.emit(self.name, index.row(), index.column(), number)
        return True

    def flags(self, index: Index) -> Qt.ItemFlag:
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
                   ) -> Any:  # noqa: N802
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        labels = self._row_labels if orientation == Qt.Orientation.Vertical else self._col_labels
        return labels[section] if section < len(labels) else None

    def refresh(self) -> None:
        """Re-read the state (shape, labels or values changed)."""
        self.beginResetModel()
        self._shown = self.matrix().copy()
        self._row_labels = self.state.row_labels(self.name)
        self._col_labels = self.state.col_labels(self.name)
        self.endResetModel()

    def sync(self) -> None:
        """Announce only the cells whose value changed since the last sync (a full reset when the shape did)."""
        current = self.matrix()
        if current.shape != self._shown.shape:
            self.refresh()
            return
        changed = np.argwhere(current != self._shown)
        if changed.size:
            (r0, c0), (r1, c1) = changed.min(axis=0), changed.max(axis=0)
            self._shown = current.copy()
            self.dataChanged.emit(self.index(int(r0), int(c0)), self.index(int(r1), int(c1)),
                                  [Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole])

    def set_highlight(self, rows: tuple[int, ...] = (), cols: tuple[int, ...] = ()) -> None:
        if (rows, cols) != (self.highlight_rows, self.highlight_cols):
            self.highlight_rows, self.highlight_cols = rows, cols
            if self.rowCount() and self.columnCount():
                self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, self.columnCount() - 1),
                                      [Qt.ItemDataRole.BackgroundRole])


class MatrixTable(QTableView):
    """Keyboard-friendly table: Ctrl+C / Ctrl+V blocks, Ctrl+drag (or Ctrl+↑/↓) scrubs a value."""

    paste_requested = Signal(str, int, int, object)  # name, row, col, block (np.ndarray)
    scrub_requested = Signal(str, int, int, float, str)  # ..., merge key: one drag = one undo step
    token_rename_requested = Signal(str, int)  # matrix name, row

    SCRUB_PER_PIXEL = 0.01
    WIDEST, NARROWEST = 58, 36
    """A column's width where there is room, and the least it is narrowed to (``fit_columns``)."""

    def __init__(self, model: MatrixTableModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setModel(model)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ContiguousSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed
                             | QAbstractItemView.EditTrigger.AnyKeyPressed)
        self.setTabKeyNavigation(True)
        # fixed widths: ResizeToContents would re-measure every cell on every edit (100 ms for 16x64)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.horizontalHeader().setMinimumSectionSize(self.NARROWEST)
        self.horizontalHeader().setDefaultSectionSize(self.WIDEST)
        self._fitted = self.WIDEST  # the column width last chosen by ``fit_columns``
        self.verticalHeader().geometriesChanged.connect(self.fit_columns)  # longer token names: less room
        # a longer number in a narrowed table: wider columns, or back to scrolling (a wide table never measures)
        model.dataChanged.connect(lambda *_: self.fit_columns() if self._fitted < self.WIDEST else None)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(24)
        self.verticalHeader().sectionDoubleClicked.connect(
            lambda row: self.token_rename_requested.emit(model.name, row))
        self._scrub: tuple[int, int, float, float] | None = None
        self._drags = 0
        self._closed_editors: weakref.WeakSet[QWidget] = weakref.WeakSet()
        self.setToolTip("Type a number and press Enter or Tab. Ctrl+drag left/right (or Ctrl+↑/↓) scrubs a value. "
                        "Ctrl+C / Ctrl+V copy and paste blocks. Double-click a row name to rename the token.")

    def matrix_model(self) -> MatrixTableModel:
        return self.model()  # type: ignore[return-value]

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.fit_columns()

    def fit_columns(self) -> None:
        """Every column in view when they all fit with their numbers whole: at 1280 × 800 with the Learn dock open
        the inputs column leaves a 4-column table ~190 px, and 58 px columns hid the last behind a scroll bar. A
        table that cannot fit (d = 8 there) keeps ``WIDEST`` columns and its scroll bar: whole numbers beat
        cut ones. Only a change of the fitting width resizes the columns (one the user dragged stays meanwhile)."""
        model = self.model()
        cols = model.columnCount()
        if cols == 0:
            return
        bar = self.verticalScrollBar()
        room = self.width() - 2 * self.frameWidth() - self.verticalHeader().width()
        room -= bar.sizeHint().width() if bar.isVisible() else 0
        width = room // cols
        if width < self.WIDEST:  # narrower only when every column fits with its widest text whole
            width = width if width >= max(self.NARROWEST, self._widest_text(cols)) else self.WIDEST
        width = min(width, self.WIDEST)
        if width != self._fitted:
            self._fitted = width
            self.horizontalHeader().setDefaultSectionSize(width)
            for c in range(cols):
                self.horizontalHeader().resizeSection(c, width)

    def _widest_text(self, cols: int) -> int:
        """The width a column needs for its header and its numbers as shown, with the cell's margins."""
        model, metrics = self.model(), self.fontMetrics()
        texts = [str(model.headerData(c, Qt.Orientation.Horizontal)) for c in range(cols)]
        texts += [str(model.data(model.index(r, c))) for r in range(model.rowCount()) for c in range(cols)]
        return max(metrics.horizontalAdvance(t) for t in texts) + 12

    # ---- editors
    def closeEditor(self, editor: Any, hint: Any) -> None:  # noqa: N802 (Qt API)
        self._closed_editors.add(editor)
        super().closeEditor(editor, hint)

    def commitData(self, editor: Any) -> None:  # noqa: N802 (Qt API)
        """An editor whose cell left the viewport is hidden; a Return then reaches the table, which commits and
        closes it, and the delegate commits it once more on its way out. That second commit is a no-op in Qt,
        with a warning ("commitData called with an editor that does not belong to this view"): skip it. (Closed
        editors are deleted soon after; the weak set forgets them then.)"""
        if editor in self._closed_editors:
            return
        super().commitData(editor)

    # ---- copy / paste
    def keyPressEvent(self, event: Any) -> None:  # noqa: N802
        idx = self.currentIndex()
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy_selection()
            return
        if event.matches(QKeySequence.StandardKey.Paste):
            self.paste_text(QGuiApplication.clipboard().text())
            return
        if (event.modifiers() & Qt.KeyboardModifier.ControlModifier and idx.isValid()
                and event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down)):
            step = 0.1 if event.key() == Qt.Key.Key_Up else -0.1
            m = self.matrix_model()
            old = float(m.matrix()[idx.row(), idx.column()])
            self.scrub_requested.emit(m.name, idx.row(), idx.column(), round(old + step, 10),
                                      f"nudge:{m.name}:{idx.row()}:{idx.column()}")
            return
        super().keyPressEvent(event)

    def copy_selection(self) -> str:
        sel = self.selectedIndexes() or ([self.currentIndex()] if self.currentIndex().isValid() else [])
        if not sel:
            return ""
        rows = sorted({i.row() for i in sel})
        cols = sorted({i.column() for i in sel})
        m = self.matrix_model().matrix()
        text = "\n".join("\t".join(repr(float(m[r, c])) for c in cols) for r in rows)
        QGuiApplication.clipboard().setText(text)
        return text

    def paste_text(self, text: str) -> None:
        """Paste a tab/space/comma-separated block at the current cell (refused whole if any cell is bad)."""
        idx = self.currentIndex()
        row, col = (idx.row(), idx.column()) if idx.isValid() else (0, 0)
        m = self.matrix_model()
        lines = [ln for ln in text.strip("\n").splitlines() if ln.strip()]
        try:
            block = [[parse_number(c) for c in (ln.split("\t") if "\t" in ln else ln.replace(";", " ").split())]
                     for ln in lines]
            if not block or len({len(r) for r in block}) != 1:
                raise ValueError("the pasted text is not a rectangle of numbers")
        except ValueError as exc:
            m.rejected.emit(f"{m.name}: paste refused: {exc}; nothing was changed.")
            return
        self.paste_requested.emit(m.name, row, col, np.array(block, dtype=np.float64))

    # ---- scrubbing
    def mousePressEvent(self, event: Any) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            idx = self.indexAt(event.position().toPoint())
            if idx.isValid():
                start = float(self.matrix_model().matrix()[idx.row(), idx.column()])
                self._scrub = (idx.row(), idx.column(), event.position().x(), start)
                self._drags += 1
                self.setCurrentIndex(idx)
                return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: Any) -> None:  # noqa: N802
        if self._scrub is not None:
            r, c, x0, start = self._scrub
            value = round(start + (event.position().x() - x0) * self.SCRUB_PER_PIXEL, 4)
            name = self.matrix_model().name
            self.scrub_requested.emit(name, r, c, value, f"drag{self._drags}:{name}:{r}:{c}")
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: Any) -> None:  # noqa: N802
        if self._scrub is not None:
            self._scrub = None
            return
        super().mouseReleaseEvent(event)


class MatrixEditor(QWidget):
    """A titled MatrixTable ("Q  (queries × d_k)") that follows the Playground model."""

    ROLES = {"Q": "queries", "K": "keys", "V": "values", "X": "tokens", "X_q": "query tokens",
             "X_kv": "key/value tokens", "W_Q": "projection to Q", "W_K": "projection to K",
             "W_V": "projection to V", "W_O": "multi-head output projection"}

    def __init__(self, playground: PlaygroundModel, name: str, edits: UndoableEdits,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.playground, self.edits = playground, edits
        self.model = MatrixTableModel(playground, name, self)
        self.table = MatrixTable(self.model, self)
        self.title = QLabel()
        self.title.setObjectName("matrixTitle")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.table)
        self.model.edit_requested.connect(lambda n, r, c, v: edits.set_cell(n, r, c, v))
        self.model.rejected.connect(edits.refused)
        self.table.scrub_requested.connect(lambda n, r, c, v, key: edits.set_cell(n, r, c, v, merge_key=key))
        self.table.paste_requested.connect(
            lambda n, r, c, block: edits.apply(f"Paste into {n}", lambda m: m.set_block(n, r, c, block)))
        self.table.token_rename_requested.connect(self._rename_token)
        playground.events.changed.connect(self._on_changed)
        playground.events.explanation.connect(self._on_explanation)
        self._shape: tuple[int, int] = (-1, -1)
        self.refresh()

    def _on_changed(self, fields: frozenset[str]) -> None:
        if not fields & {"matrices", "dims", "tokens", "mode", "heads"} or self.isHidden():
            return
        if self.playground.state.shape_of(self.model.name) != self._shape or self.model.labels_changed():
            self.refresh()
        else:
            self.model.sync()  # repaints only the cells that changed

    def showEvent(self, event: Any) -> None:  # noqa: N802
        # hidden editors skip updates; catch up when shown
        if self.playground.state.shape_of(self.model.name) != self._shape or self.model.labels_changed():
            self.refresh()
        else:
            self.model.sync()
        super().showEvent(event)

    def _on_explanation(self) -> None:
        rows, cols, _ = self.playground.highlights.get(self.model.name, ((), (), ()))
        self.model.set_highlight(tuple(rows), tuple(cols))

    def _rename_token(self, name: str, row: int) -> None:
        if name in ("W_Q", "W_K", "W_V", "W_O"):
            return
        side = "k" if name in ("K", "V", "X_kv") else "q"
        labels = self.playground.state.row_labels(name)
        text, ok = QInputDialog.getText(self, "Rename token", f"Name for token {row + 1}:", text=labels[row])
        if ok:
            self.edits.apply("Rename token", lambda m: m.set_token(side, row, text))

    def refresh(self) -> None:
        st, name = self.playground.state, self.model.name
        rows, cols = st.shape_of(name)
        self._shape = (rows, cols)
        self.title.setText(f"<b>{name}</b>  {self.ROLES[name]} · {rows}×{cols}")
        self.model.refresh()
        self.table.fit_columns()  # a new shape: its columns at the width that fits
        # header + rows + room for a horizontal scroll bar, so the last row is never half hidden
        height = self.table.horizontalHeader().sizeHint().height() + 24 * rows + 6 + 16
        self.table.setMinimumHeight(min(height, 24 * 6 + 48))
        self.table.setMaximumHeight(height)
