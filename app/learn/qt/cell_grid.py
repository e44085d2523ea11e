"""The Learn panel's "click the cell" grid: when a cell question's map is covered until the answer, a
click on the map lands on its cover, so the panel shows that map's cells as an empty grid to click instead — the
query tokens down the side, the key tokens along the top, no numbers and no colours (they would give the answer
away). A click calls ``on_click(row, col)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QSizePolicy, QWidget

CELL_PX = 26
"""A cell's side: big enough to hit, small enough for a 12 × 12 map in the dock."""


class CellGrid(QWidget):
    """An empty, clickable grid of ``rows`` × ``cols`` cells named by their tokens; ``highlight_row`` (the row the
    question is about) has its name in bold."""

    def __init__(self, rows: Sequence[str], cols: Sequence[str], on_click: Callable[[int, int], object],
                 highlight_row: int | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("cellGrid")
        self._rows, self._cols = list(rows), list(cols)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(2)
        for j, name in enumerate(self._cols):
            label = QLabel(name)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            label.setToolTip(f"key '{name}'")
            grid.addWidget(label, 0, j + 1)
        self.buttons: dict[tuple[int, int], QPushButton] = {}
        for i, row in enumerate(self._rows):
            label = QLabel(f"<b>{_esc(row)}</b>" if i == highlight_row else _esc(row))
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(label, i + 1, 0)
            for j, col in enumerate(self._cols):
                b = QPushButton("")
                b.setFixedSize(CELL_PX, CELL_PX)
                b.setCursor(Qt.CursorShape.PointingHandCursor)
                b.setToolTip(f"query '{row}', key '{col}'")
                b.setAccessibleName(f"{row} · {col}")
                b.clicked.connect(lambda _c=False, i=i, j=j: on_click(i, j))
                grid.addWidget(b, i + 1, j + 1)
                self.buttons[(i, j)] = b
        grid.setColumnStretch(len(self._cols) + 1, 1)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def row_names(self) -> list[str]:
        return list(self._rows)

    def col_names(self) -> list[str]:
        return list(self._cols)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
