"""Multi-head view: Q/K/V split into heads, each head's weights, the concatenation, W_O and the output.

Reading order, top to bottom: (1) Q, K, V with a line between the column bands each head takes; (2) one weight
map per head; (3) the heads' outputs side by side (concat), W_O, and the final output. Numbers come from
``attention_core.multi_head_steps`` (``Result.heads``), the text from the model; this widget only draws them,
on the model's ``result`` event while shown (a hidden view catches up when shown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from app.playground.model.concealment import MULTIHEAD_REVEALS, Concealment
from app.playground.model.export_context import playground_context
from app.playground.model.playground import PlaygroundModel
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.view import HeatmapWidget

if TYPE_CHECKING:
    from app.playground.qt.commands import UndoableEdits


class MultiHeadView(RedrawWhenShown, QWidget):
    """Draws ``Result.heads`` (attention_core.MultiHeadSteps) and the parameter count of a full layer.

    ``cellHovered``/``cellClicked`` carry the map's name (``split:Q``, ``head:0``, ``concat``, ``w_o``,
    ``mh_output``; see ``app.explain.explain_multihead``) and the cell; (-1, -1) when the pointer leaves.
    """

    cellHovered = Signal(str, int, int)
    cellClicked = Signal(str, int, int)
    mapDoubleClicked = Signal(str)
    """A map's name, on a double-click (presentation mode shows that map alone)."""

    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.info.setObjectName("multiheadInfo")
        outer.addWidget(self.info)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        outer.addWidget(scroll, 1)
        self.body = QWidget()
        scroll.setWidget(self.body)
        body = QVBoxLayout(self.body)
        body.setSpacing(6)
        self.rows = [QHBoxLayout() for _ in range(3)]
        for row in self.rows:
            row.setSpacing(4)
            body.addLayout(row, 1)
        self.head_maps: list[HeatmapWidget] = []
        self.split_maps = {name: HeatmapWidget(title=f"{name} split into heads") for name in ("Q", "K", "V")}
        self.concat = HeatmapWidget(title="Concat(head outputs)")
        self.w_o = HeatmapWidget(title="W_O")
        self.output = HeatmapWidget(title="Output = Concat · W_O")
        for name, hm in self.split_maps.items():
            hm.setMinimumSize(200, 160)
            self.rows[0].addWidget(hm)
            self._connect(hm, f"split:{name}")
        for name, hm in (("concat", self.concat), ("w_o", self.w_o), ("mh_output", self.output)):
            hm.setMinimumSize(200, 160)
            self.rows[2].addWidget(hm)
            self._connect(hm, name)
        self._layout_heads = -1
        self.concealment = Concealment.of(model)
        model.events.result.connect(self.request_redraw)
        self.concealment.events.changed.connect(self.request_redraw)
        model.events.explanation.connect(self._on_explanation)
        model.events.pinned.connect(self._on_pinned)

    def _on_explanation(self) -> None:
        self.set_highlights(self.model.highlights)

    def _on_pinned(self) -> None:
        p = self.model.pinned
        self.set_selected(p[0] if p else None, p[1:] if p else None)

    def _connect(self, hm: HeatmapWidget, name: str) -> None:
        hm.cellHovered.connect(lambda i, j, v=name: self.cellHovered.emit(v, i, j))
        hm.cellClicked.connect(lambda i, j, v=name: self.cellClicked.emit(v, i, j))
        hm.doubleClicked.connect(lambda v=name: self.mapDoubleClicked.emit(v))
        hm.export_extras = self._export_extras  # its Export button names the setting

    def _export_extras(self) -> dict[str, Any]:
        withheld = self.concealment.withheld_message(*MULTIHEAD_REVEALS)
        if withheld:  # a lesson's question covers these maps
            raise ValueError(withheld)
        return {"context": playground_context(self.model)}

    def named_heatmaps(self) -> dict[str, HeatmapWidget]:
        """Every map by the name its signals and highlights use."""
        named = {f"split:{n}": hm for n, hm in self.split_maps.items()}
        named.update({f"head:{h}": hm for h, hm in enumerate(self.head_maps)})
        named.update({"concat": self.concat, "w_o": self.w_o, "mh_output": self.output})
        return named

    def set_highlights(self, highlights: dict[str, Any]) -> None:
        for name, hm in self.named_heatmaps().items():
            rows, cols, cells = highlights.get(name, ((), (), ()))
            hm.set_highlight(rows, cols, cells)

    def set_selected(self, view: str | None, cell: tuple[int, int] | None) -> None:
        for name, hm in self.named_heatmaps().items():
            hm.set_selected(cell if name == view else None)

    def _ensure(self, h: int) -> None:
        if self._layout_heads == h:
            return
        for hm in self.head_maps:
            self.rows[1].removeWidget(hm)
            hm.deleteLater()
        self.head_maps = [HeatmapWidget(title=f"head {i + 1}: weights", ) for i in range(h)]
        for n, hm in enumerate(self.head_maps):
            hm.setMinimumSize(160 if h > 4 else 200, 160)
            self.rows[1].addWidget(hm)
            self._connect(hm, f"head:{n}")
        self._layout_heads = h

    def redraw(self) -> None:
        self._stale = False
        model = self.model
        state, result = model.state, model.computation
        h = state.num_heads
        withheld = self.concealment.withheld_message(*MULTIHEAD_REVEALS)
        if result.heads is None or withheld:  # one head (nothing split), or a lesson's question covers the heads
            self.info.setText(model.heads_info + (f"<br><b>{withheld}.</b>" if withheld else ""))
            self.body.setVisible(False)
            return
        self.body.setVisible(True)
        self.info.setText(model.heads_info)
        mh = result.heads
        self._ensure(h)
        q_tok, k_tok = state.query_tokens, state.key_tokens
        blocked = None if mh.heads.mask is None else ~mh.heads.mask
        for name, mat, rows, prefix in (("Q", result.q, q_tok, "k"), ("K", result.k, k_tok, "k"),
                                        ("V", result.v, k_tok, "v")):
            hm = self.split_maps[name]
            hm.set_data(mat, rows, [f"{prefix}{j}" for j in range(mat.shape[1])], kind="signed",
                        title=f"{name} split into {h} heads", row_title="query" if name == "Q" else "key",
                        col_title="column")
            hm.set_column_groups(h)
        for i in range(h):
            blk = None if blocked is None else np.broadcast_to(blocked, mh.heads.weights.shape)[i]
            self.head_maps[i].set_data(mh.heads.weights[i], q_tok, k_tok, blocked=blk, kind="weights",
                                       title=f"head {i + 1}: weights", row_title="query", col_title="key")
        dv = mh.concat.shape[1]
        cols = [f"c{j}" for j in range(dv)]
        self.concat.set_data(mh.concat, q_tok, cols, kind="signed", title="Concat(head outputs)",
                             row_title="query", col_title="head outputs side by side")
        self.concat.set_column_groups(h)
        self.w_o.set_data(mh.w_o, cols, [f"o{j}" for j in range(mh.w_o.shape[1])], kind="signed",
                          title="W_O", row_title="concat dim", col_title="output dim")
        self.output.set_data(mh.output, q_tok, [f"o{j}" for j in range(mh.output.shape[1])], kind="signed",
                             title="Output = Concat · W_O", row_title="query", col_title="output dim")
        self._on_explanation()
        self._on_pinned()

    def heatmaps(self) -> list[HeatmapWidget]:
        return [*self.split_maps.values(), *self.head_maps, self.concat, self.w_o, self.output]


def build(model: PlaygroundModel, edits: UndoableEdits) -> QWidget:
    """The view for the Playground's tab (``app/playground/views/registry.py``)."""
    return MultiHeadView(model)
