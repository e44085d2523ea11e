"""Multi-head view: Q/K/V split into heads, each head's weights, the concatenation, W_O and the output.

Reading order, top to bottom: (1) Q, K, V with a line between the column bands each head takes; (2) one weight
map per head; (3) the heads' outputs side by side (concat), W_O, and the final output. Numbers come from
``attention_core.multi_head_steps`` (``Result.heads``); this widget only draws them.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from ..state import PlaygroundState, Result
from .heatmap import HeatmapWidget


class MultiHeadView(QWidget):
    """Draws ``Result.heads`` (attention_core.MultiHeadSteps) and the parameter count of a full layer.

    ``cellHovered``/``cellClicked`` carry the map's name (``split:Q``, ``head:0``, ``concat``, ``w_o``,
    ``mh_output``; see ``app.explain.explain_multihead``) and the cell; (-1, -1) when the pointer leaves.
    """

    cellHovered = Signal(str, int, int)
    cellClicked = Signal(str, int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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
        self._dark = False
        self._layout_heads = -1

    def _connect(self, hm: HeatmapWidget, name: str) -> None:
        hm.cellHovered.connect(lambda i, j, v=name: self.cellHovered.emit(v, i, j))
        hm.cellClicked.connect(lambda i, j, v=name: self.cellClicked.emit(v, i, j))

    def named_heatmaps(self) -> dict[str, HeatmapWidget]:
        """Every map by the name its signals and highlights use."""
        named = {f"split:{n}": hm for n, hm in self.split_maps.items()}
        named.update({f"head:{h}": hm for h, hm in enumerate(self.head_maps)})
        named.update({"concat": self.concat, "w_o": self.w_o, "mh_output": self.output})
        return named

    def set_highlights(self, highlights: dict) -> None:
        for name, hm in self.named_heatmaps().items():
            rows, cols, cells = highlights.get(name, ((), (), ()))
            hm.set_highlight(rows, cols, cells)

    def set_selected(self, view: str | None, cell: tuple[int, int] | None) -> None:
        for name, hm in self.named_heatmaps().items():
            hm.set_selected(cell if name == view else None)

    def set_dark(self, dark: bool) -> None:
        self._dark = dark
        for hm in self.heatmaps():
            hm.apply_theme(dark)

    def _ensure(self, h: int) -> None:
        if self._layout_heads == h:
            return
        for hm in self.head_maps:
            self.rows[1].removeWidget(hm)
            hm.deleteLater()
        self.head_maps = [HeatmapWidget(title=f"head {i + 1}: weights", dark=self._dark) for i in range(h)]
        for n, hm in enumerate(self.head_maps):
            hm.setMinimumSize(160 if h > 4 else 200, 160)
            self.rows[1].addWidget(hm)
            self._connect(hm, f"head:{n}")
        self._layout_heads = h

    def show_result(self, state: PlaygroundState, result: Result) -> None:
        from attention_core.heads import parameter_count

        h = state.num_heads
        d_model = state.dims["d_k"]
        d_head = d_model // max(h, 1)
        params = parameter_count(d_model, h)
        one = parameter_count(d_model, 1)
        head_text = (f"<b>{h} head{'s' if h > 1 else ''}</b>: each head takes {d_head} of the {d_model} columns of "
                     f"Q and K (and {state.dims['d_v'] // max(h, 1)} of V's {state.dims['d_v']}) and scales by "
                     f"1/√{d_head}. A full layer's parameters (W_Q, W_K, W_V, W_O, each {d_model}×{d_model}, "
                     f"+ biases): 4·{d_model}² + 4·{d_model} = <b>{params}</b> for {h} head{'s' if h > 1 else ''}, "
                     f"exactly the same as one big head ({one}): heads split the width, they add no parameters. "
                     "Black lines mark head boundaries; W_O is editable on the left.")
        if result.heads is None:
            self.info.setText(head_text + "<br><i>Choose 2 or more heads in the Heads control (right) to see the "
                              "split.</i>")
            self.body.setVisible(False)
            return
        self.body.setVisible(True)
        self.info.setText(head_text)
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

    def heatmaps(self) -> list[HeatmapWidget]:
        return [*self.split_maps.values(), *self.head_maps, self.concat, self.w_o, self.output]
