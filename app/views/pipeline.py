"""The step pipeline, in reading order: QKᵀ → ×scale → mask → softmax → ·V, one heatmap each.

Subscribes to the Playground model: redraws on ``result`` (only while shown; a hidden view catches up when it is
shown again), outlines on ``explanation``, marks the pinned cell on ``pinned``. It computes nothing.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from attention_core import STEP_NAMES, STEP_TITLES

from ..models.playground import STEP_VIEWS, PlaygroundModel
from .frame import RedrawWhenShown
from .heatmap import HeatmapWidget

STEPS = STEP_VIEWS
TITLES = {name: f"{mark} {STEP_TITLES[name]}" for mark, name in zip("①②③④⑤", STEP_NAMES)}


class PipelineView(RedrawWhenShown, QWidget):
    """Five heatmaps in a 3 + 2 grid so each stays readable at 1280×800."""

    cellHovered = Signal(str, int, int)
    cellClicked = Signal(str, int, int)

    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        grid = QGridLayout(self)
        grid.setContentsMargins(2, 2, 2, 2)
        grid.setSpacing(4)
        self.heatmaps: dict[str, HeatmapWidget] = {}
        self.captions: dict[str, QLabel] = {}
        for n, name in enumerate(STEPS):
            hm = HeatmapWidget(title=TITLES[name])
            hm.setMinimumSize(200, 170)
            hm.cellHovered.connect(lambda i, j, v=name: self.cellHovered.emit(v, i, j))
            hm.cellClicked.connect(lambda i, j, v=name: self.cellClicked.emit(v, i, j))
            cap = QLabel()
            cap.setObjectName("stepCaption")
            cap.setWordWrap(True)
            cap.setAlignment(Qt.AlignmentFlag.AlignCenter)
            box = QWidget()
            v = QVBoxLayout(box)
            v.setContentsMargins(0, 0, 0, 0)
            v.setSpacing(0)
            v.addWidget(hm, 1)
            v.addWidget(cap)
            # a 6-column grid: row 0 holds scores, scaled, masked (2 columns each); row 1 weights and output (3 each)
            row, col, span = (0, 2 * n, 2) if n < 3 else (1, 3 * (n - 3), 3)
            grid.addWidget(box, row, col, 1, span)
            self.heatmaps[name] = hm
            self.captions[name] = cap
        for c in range(6):
            grid.setColumnStretch(c, 1)
        grid.setRowStretch(0, 1)
        grid.setRowStretch(1, 1)
        model.events.result.connect(self.request_redraw)
        model.events.explanation.connect(self._on_explanation)
        model.events.pinned.connect(self._on_pinned)
        self.redraw()

    def set_dark(self, dark: bool) -> None:
        for hm in self.heatmaps.values():
            hm.apply_theme(dark)

    # ---------------------------------------------------------------- model events
    def redraw(self) -> None:
        """Draw the model's current result and captions."""
        self._stale = False
        m = self.model
        s = m.result
        q, k = m.state.query_tokens, m.state.key_tokens
        blocked = None if s.mask is None else ~s.mask
        hm = self.heatmaps
        # axis titles only on the first map of each row: the others share its axes, and the space goes to cells
        hm["scores"].set_data(s.scores, q, k, kind="signed", row_title="query", col_title="key")
        hm["scaled"].set_data(s.scaled, q, k, kind="signed")
        hm["masked"].set_data(s.masked, q, k, blocked=blocked, kind="signed")
        hm["weights"].set_data(s.weights, q, k, blocked=blocked, kind="weights", row_title="query",
                               col_title="key")
        hm["output"].set_data(s.output, q, [f"v{j}" for j in range(s.output.shape[1])], kind="signed",
                              col_title="value dimension")
        for name, cap in self.captions.items():
            cap.setText(m.captions.get(name, ""))
        self._on_explanation()
        self._on_pinned()

    def _on_explanation(self) -> None:
        for name, hm in self.heatmaps.items():
            rows, cols, cells = self.model.highlights.get(name, ((), (), ()))
            hm.set_highlight(rows, cols, cells)

    def _on_pinned(self) -> None:
        pinned = self.model.pinned
        for name, hm in self.heatmaps.items():
            hm.set_selected(pinned[1:] if pinned is not None and pinned[0] == name else None)
