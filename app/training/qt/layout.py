"""How the Training tab's columns adapt to the window, and remember their sizes (1024 × 640 to 4K).

``left | (centre | right)`` in two splitters: the side columns collapse when dragged shut and both splitters'
states are kept in QSettings. On a tall, narrow screen the right column goes under the grid (plots beside the
tabs); on a short one (a 640 or 720 px laptop) the grid's ten-line "how to read a map" legend becomes the grid's
tooltip and Try it gets two thirds of the right column, so the maps and Try it's map keep their room.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QLabel, QSizePolicy, QSplitter, QWidget

from app.widgets.settings import Settings

TALL_NARROW = (1100, 900)
"""Below this width and from this height on, the right column goes under the grid."""
SHORT = 620
"""Below this panel height (a window under ~720 px) the legend becomes a tooltip and Try it gets two thirds of the
right column. A 1280 × 800 window's panel is ~710 px high."""


def quiet_hover_label(label: QLabel) -> None:
    """The grid's hover read-out is one long line: unwrapped, its width became the window's minimum and a hover
    widened the window (1280 → 1733 px). Wrapped in a box two lines high, hovering moves nothing."""
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
    label.setFixedHeight(2 * label.fontMetrics().lineSpacing() + 4)


class TrainingColumns(QObject):
    """Follows ``panel``'s size (an event filter, so the panel needs no resizeEvent of its own)."""

    def __init__(self, panel: QWidget, splitters: dict[str, QSplitter], legend: QLabel, grid: QWidget,
                 settings: Settings | None) -> None:
        super().__init__(panel)
        self.panel, self.splitters, self.legend, self.grid, self.settings = panel, splitters, legend, grid, settings
        self.short: bool | None = None
        if settings is not None:
            for name, split in splitters.items():
                if (state := settings.splitter_state(name)) is not None:
                    split.restoreState(state)
        panel.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self.panel and event.type() == QEvent.Type.Resize:
            self.adapt()
        return False

    def adapt(self) -> None:
        main, right = self.splitters["training-main"], self.splitters["training-right"]
        w, h = self.panel.width(), self.panel.height()
        below = w < TALL_NARROW[0] and h >= TALL_NARROW[1]
        orientation = Qt.Orientation.Vertical if below else Qt.Orientation.Horizontal
        if main.orientation() != orientation:
            main.setOrientation(orientation)
            right.setOrientation(Qt.Orientation.Horizontal if below else Qt.Orientation.Vertical)
        short = h < SHORT
        if short != self.short:
            self.short = short
            self.legend.setHidden(short)
            self.grid.setToolTip(self.legend.text() if short else "")
            if not below:  # once the splitters have their new sizes
                QTimer.singleShot(0, self._share_right)

    def _share_right(self) -> None:
        """Plots : tabs = 1 : 2 on a short window, 3 : 4 (the old 310 : 420) otherwise."""
        right = self.splitters["training-right"]
        total = sum(right.sizes())
        plots = total // 3 if self.short else total * 3 // 7
        right.setSizes([plots, total - plots])

    def save(self) -> None:
        """Keep the splitters' sizes (a collapsed column stays collapsed) for the next start."""
        if self.settings is not None:
            for name, split in self.splitters.items():
                self.settings.set_splitter_state(split.saveState(), name)
