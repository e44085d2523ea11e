"""The Experiments tab's two tables: the runs (one row a run, one column an option, cells editable; an edit the
model refuses puts the old value back and its reason shows under the table) and the final table (one row a
finished run: steps to 99 %, final greedy and token accuracy, mean head entropy, best task score), both filled from
``ExperimentSession``; the final table exports as CSV (``attention_core.tiny.experiments.write_summary_csv``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLabel,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.experiments.model.session import COLUMNS, format_cell
from app.widgets.theme import ThemeColors, colors_for, follow_theme
from attention_core.positions import POSITIONAL_KINDS
from attention_core.tiny.tasks import TASK_NAMES

if TYPE_CHECKING:
    from app.experiments.model.session import ExperimentSession

CHOICES = {"task": TASK_NAMES, "positional": POSITIONAL_KINDS, "causal": ("yes", "no")}
HEADERS = {"task": "task", "positional": "positions", "causal": "causal", "num_heads": "heads",
           "num_layers": "layers", "attention_dropout": "dropout", "lr": "lr", "steps": "steps",
           "seed": "seed"}
SUMMARY_SHOWN = (("run", "run"), ("steps_to_99", "steps to 99 %"), ("sequence_accuracy", "greedy sequence acc."),
                 ("token_accuracy", "token acc."), ("mean_head_entropy", "mean head entropy (nats)"),
                 ("best_task_score", "best task score"))
"""The final table's columns (``summary_row`` keys and headers); the CSV has every ``SUMMARY_COLUMNS``."""


class _ChoiceDelegate(QStyledItemDelegate):
    """A combo box for the options that take one of a few values (task, positions, causal)."""

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem,  # noqa: N802 (Qt API)
                     index: QModelIndex | QPersistentModelIndex) -> QWidget:
        choices = CHOICES.get(COLUMNS[index.column()])
        if choices is None:
            return super().createEditor(parent, option, index)
        box = QComboBox(parent)
        box.addItems(list(choices))
        return box

    def setEditorData(self, editor: QWidget, index: QModelIndex | QPersistentModelIndex) -> None:  # noqa: N802
        if isinstance(editor, QComboBox):
            editor.setCurrentText(str(index.data()))
        else:
            super().setEditorData(editor, index)

    def setModelData(self, editor: QWidget, model: QAbstractItemModel,  # noqa: N802 (Qt API)
                     index: QModelIndex | QPersistentModelIndex) -> None:
        if isinstance(editor, QComboBox):
            model.setData(index, editor.currentText())
        else:
            super().setModelData(editor, model, index)


class RunsTable(QWidget):
    """The editable runs table and, under it, why the last edit was refused."""

    def __init__(self, model: ExperimentSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels([HEADERS[c] for c in COLUMNS])
        self.table.setItemDelegate(_ChoiceDelegate(self.table))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed
                                   | QAbstractItemView.EditTrigger.AnyKeyPressed)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        for name in ("task", "positional"):  # "induction", "sinusoidal": never cut
            header.setSectionResizeMode(COLUMNS.index(name), QHeaderView.ResizeMode.ResizeToContents)
        header.setMinimumSectionSize(30)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setToolTip("One row a run, one column an option: double-click a cell to change it. The legend "
                              "names each run by the options that differ between the runs.")
        box.addWidget(self.table)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        box.addWidget(self.error_label)
        self._filling = False
        self._dark = False
        self.table.itemChanged.connect(self._on_item_changed)
        model.events.runs.connect(self.fill)
        model.events.table_error.connect(self.show_error)
        model.events.run_state.connect(lambda _s: self._set_editable())
        self.fill()
        follow_theme(self._restyle)

    def fill(self) -> None:
        """The model's rows, one per run (the vertical header names the run as the legend does)."""
        self._filling = True
        try:
            rows = self.model.rows
            self.table.setRowCount(len(rows))
            self.table.setVerticalHeaderLabels([str(i + 1) for i in range(len(rows))])
            for i, run in enumerate(self.model.runs):
                header = self.table.verticalHeaderItem(i)
                if header is not None:
                    header.setToolTip(f"run {i + 1}: {run.name}")
            for i, row in enumerate(rows):
                for j, col in enumerate(COLUMNS):
                    text = format_cell(row[col])
                    item = self.table.item(i, j)
                    if item is None:
                        item = QTableWidgetItem(text)
                        item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                        self.table.setItem(i, j, item)
                    elif item.text() != text:
                        item.setText(text)
            self._set_editable()
            height = self.table.horizontalHeader().height() + 22 * len(rows) + 4
            self.table.setFixedHeight(max(height, 60))
        finally:
            self._filling = False

    def _set_editable(self) -> None:
        running = self.model.is_running
        self.table.setEnabled(not running)

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if self._filling:
            return
        if not self.model.set_cell(item.row(), COLUMNS[item.column()], item.text()):
            self.fill()  # refused: the old value back

    def show_error(self, text: str) -> None:
        self.error_label.setText(f"<span style='color:{colors_for(self._dark).bad}'>{text}</span>" if text else "")
        self.error_label.setVisible(bool(text))

    def _restyle(self, c: ThemeColors) -> None:
        self._dark = c.dark
        self.show_error(self.model.table_error)

    def cell_text(self, row: int, column: str) -> str:
        item = self.table.item(row, COLUMNS.index(column))
        return item.text() if item is not None else ""


class SummaryTable(QTableWidget):
    """The final table: one row per finished run, the model's ``summary`` rows as they are."""

    def __init__(self, model: ExperimentSession, parent: QWidget | None = None) -> None:
        super().__init__(0, len(SUMMARY_SHOWN), parent)
        self.session = model  # not ``self.model``: that would hide QTableWidget.model() (the item model)
        self.setHorizontalHeaderLabels([h for _k, h in SUMMARY_SHOWN])
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        self.setToolTip("Each finished run, at its last evaluation: the first evaluated step whose held-out greedy "
                        "exact-sequence accuracy reached 99 % (– if none), that accuracy and the teacher-forced "
                        "token accuracy at the end, the heads' mean attention entropy, and the best head's task "
                        "score (how often its strongest key is where the task's ideal pattern says).")
        model.events.summary.connect(self.fill)
        self.fill()

    def fill(self) -> None:
        rows = self.session.summary
        self.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, (key, _h) in enumerate(SUMMARY_SHOWN):
                item = QTableWidgetItem(summary_text(key, row.get(key)))
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter if j else Qt.AlignmentFlag.AlignLeft
                                      | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(i, j, item)
        self.setFixedHeight(self.horizontalHeader().sizeHint().height() + 22 * max(len(rows), 2) + 6)

    def texts(self) -> list[list[str]]:
        return [[item.text() if (item := self.item(i, j)) else "" for j in range(self.columnCount())]
                for i in range(self.rowCount())]


def summary_text(key: str, value: Any) -> str:
    """A final-table cell: accuracies as percentages, entropy and scores with two decimals, – for none."""
    if value is None:
        return "–"
    if key in ("sequence_accuracy", "token_accuracy"):
        return f"{float(value) * 100:.1f} %"
    if key in ("mean_head_entropy", "best_task_score"):
        return f"{float(value):.2f}"
    return str(value)
