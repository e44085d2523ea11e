"""A heatmap's mouse and keys: which cell is under the pointer, hover and click signals, arrow-key moves, Enter
to pick and the menu key. A mixin of ``HeatmapWidget`` (before ``QWidget`` in its bases, so the event handlers
reach Qt's through ``super()``); it reads the widget's ``plot``, ``graphics``, ``_values``, ``_hover`` and
``_current`` and emits its ``cellHovered``, ``cellClicked`` and ``doubleClicked`` signals."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPointF, Qt

if TYPE_CHECKING:  # a mixin of HeatmapWidget (a QWidget): the type checker sees the widget it is mixed into
    from PySide6.QtWidgets import QWidget as _Widget
else:
    _Widget = object


class PointerAndKeys(_Widget):
    """Mouse and keyboard handling of ``HeatmapWidget`` (see the module docstring)."""

    plot: Any
    graphics: Any
    _values: Any
    _hover: tuple[int, int]
    _current: tuple[int, int] | None
    cellHovered: Any  # noqa: N815 (Qt signal names)
    cellClicked: Any  # noqa: N815
    doubleClicked: Any  # noqa: N815

    def _show_context_menu(self, pos: Any) -> None: ...  # HeatmapWidget's

    def cell_at_scene(self, scene_pos: QPointF) -> tuple[int, int]:
        """(row, col) under a scene position, or (-1, -1) outside the cells."""
        vb = self.plot.getViewBox()
        if not vb.sceneBoundingRect().contains(scene_pos):
            return -1, -1
        p = vb.mapSceneToView(scene_pos)
        rows, cols = self._values.shape
        i, j = math.floor(p.y()), math.floor(p.x())
        if 0 <= i < rows and 0 <= j < cols:
            return i, j
        return -1, -1

    def cell_center_scene(self, row: int, col: int) -> QPointF:
        """Scene position of a cell's centre (tests use it to simulate the mouse)."""
        return self.plot.getViewBox().mapViewToScene(QPointF(col + 0.5, row + 0.5))

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        cell = self.cell_at_scene(scene_pos)
        if cell != self._hover:
            self._hover = cell
            self.cellHovered.emit(*cell)

    def _on_mouse_clicked(self, event: Any) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        if event.double():
            self.doubleClicked.emit()
            return
        cell = self.cell_at_scene(event.scenePos())
        if cell != (-1, -1):
            self._current = cell
            self.setFocus(Qt.FocusReason.MouseFocusReason)
            self.cellClicked.emit(*cell)

    def leaveEvent(self, event: Any) -> None:  # noqa: N802
        super().leaveEvent(event)
        if self._hover != (-1, -1):
            self._hover = (-1, -1)
            self.cellHovered.emit(-1, -1)

    def keyPressEvent(self, event: Any) -> None:  # noqa: N802
        rows, cols = self._values.shape
        if rows == 0 or cols == 0:
            return super().keyPressEvent(event)
        moves = {Qt.Key.Key_Left: (0, -1), Qt.Key.Key_Right: (0, 1), Qt.Key.Key_Up: (-1, 0),
                 Qt.Key.Key_Down: (1, 0)}
        key = event.key()
        if key in moves or key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            i, j = self._current if self._current is not None else (0, 0)
            if key in moves:
                di, dj = moves[key]
                if self._current is not None:
                    i, j = min(max(i + di, 0), rows - 1), min(max(j + dj, 0), cols - 1)
            self._current = (i, j)
            self.cellClicked.emit(i, j)
            return
        if key == Qt.Key.Key_Menu:
            self._show_context_menu(self.graphics.rect().center())
            return
        super().keyPressEvent(event)
