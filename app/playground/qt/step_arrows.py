"""The flow between the Steps view's maps: the arrow that leads into each map, with its operation.

Each step's box carries, above its map, the arrow that makes it: "① ⟶ × 0.5 = 1/√4", with Q and K named where
they enter ① and V where it enters ⑤, and ③ saying "no mask: same as ②" or how many cells the mask blocks. The
arrow belongs to its map rather than to the gaps of a grid, so it stays right however ``PipelineView`` places its
maps (one row, a 3 + 2 grid, a column). The words come from the model (``PlaygroundModel.flow``, built from
``app.playground.model.texts.STEP_OPERATIONS``, which the exported pipeline figure uses too); this only shows them.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class FlowArrow(QLabel):
    """One incoming arrow: "source ⟶ operation note" in one line, elided by wrapping, never widening its map."""

    def __init__(self, step: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.step = step
        self.setObjectName("flowArrow")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)  # the map decides the width
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 0.9)  # a label of the flow, smaller than the maps' titles
        self.setFont(font)

    def set_html(self, html: str) -> None:
        """Show the model's words; unchanged words cost nothing (no relayout on every edit)."""
        if html != self.text():
            self.setText(html)
