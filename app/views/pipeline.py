"""The step pipeline, in reading order: QKᵀ → ×scale → mask → softmax → ·V, one heatmap each."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from ..explain import scale_words
from ..state import PlaygroundState, Result
from .heatmap import HeatmapWidget

STEPS = ("scores", "scaled", "masked", "weights", "output")
TITLES = {
    "scores": "① Scores Q·Kᵀ",
    "scaled": "② Scaled",
    "masked": "③ Masked",
    "weights": "④ Weights = softmax",
    "output": "⑤ Output = weights·V",
}


class PipelineView(QWidget):
    """Five heatmaps in a 3 + 2 grid so each stays readable at 1280×800. Views only draw a Result."""

    cellHovered = Signal(str, int, int)
    cellClicked = Signal(str, int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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

    def set_dark(self, dark: bool) -> None:
        for hm in self.heatmaps.values():
            hm.apply_theme(dark)

    def show_result(self, state: PlaygroundState, result: Result) -> None:
        s = result.steps
        q, k = state.query_tokens, state.key_tokens
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
        cap = self.captions
        cap["scores"].setText("query row · key row (dot product)")
        cap["scaled"].setText(f"× {scale_words(state)}")
        n_blocked = 0 if s.mask is None else int((~s.mask).sum())
        mask_text = {"none": "no mask", "causal": "causal: no looking ahead", "padding": "padding keys blocked",
                     "custom": "custom: click a cell to block it"}[state.mask_mode]
        warn = ""
        if s.fully_masked.any():
            rows = ", ".join(q[i] for i in range(len(q)) if s.fully_masked[i])
            warn = f"  <span style='color:#c0392b'>⚠ every key blocked for: {rows} → zero weights</span>"
        cap["masked"].setText(f"{mask_text} · {n_blocked} cells = −∞{warn}")
        cap["weights"].setText("each row sums to 1 (Σ at the right)")
        cap["output"].setText("each row: weighted average of V's rows")

    def set_selected(self, view: str | None, cell: tuple[int, int] | None) -> None:
        for name, hm in self.heatmaps.items():
            hm.set_selected(cell if name == view else None)

    def set_highlights(self, highlights: dict) -> None:
        for name, hm in self.heatmaps.items():
            rows, cols, cells = highlights.get(name, ((), (), ()))
            hm.set_highlight(rows, cols, cells)
