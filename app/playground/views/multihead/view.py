"""Multi-head view: Q/K/V split into heads, each head's weights, the concatenation, W_O and the output.

Reading order, top to bottom: the K/V-heads control (grouped-query / multi-query attention: fewer K/V heads than
query heads, one undo step, refused with its reason beside it) and what it does (which query heads share each K/V
head, in that K/V head's colour; parameters and KV-cache bytes per token against standard multi-head, from
``app.playground.views.multihead.model``); (1) Q, K, V with a line between the column bands each head takes; (2)
one weight map per head, grouped in a frame of its K/V head's colour; (3) the heads' outputs side by side (concat),
W_O, and the final output. Numbers come from
``attention_core.multi_head_steps`` (``Result.heads``), the text from the model; this widget only draws them,
on the model's ``result`` event while shown (a hidden view catches up when shown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QScrollArea, QSpinBox, QVBoxLayout, QWidget

from app.playground.model.concealment import MULTIHEAD_REVEALS, Concealment
from app.playground.model.export_context import playground_context
from app.playground.model.playground import PlaygroundModel
from app.playground.views.multihead.model import group_colour, grouping_html, kv_grouping
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.theme import current_colors

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

    def __init__(self, model: PlaygroundModel, edits: UndoableEdits | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model, self.edits = model, edits
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        kv_row = QHBoxLayout()
        self.kv_heads = QSpinBox()
        self.kv_heads.setObjectName("kvHeads")
        self.kv_heads.setRange(0, 999)  # out of range is refused by the model, its reason beside the control
        self.kv_heads.setKeyboardTracking(False)
        self.kv_heads.setToolTip("K/V heads: 1 = multi-query, as many as Heads = standard multi-head; in between, "
                                 "grouped-query (it must divide Heads)")
        self.kv_heads.valueChanged.connect(self._on_kv_heads)
        self.kv_refusal = QLabel()
        self.kv_refusal.setObjectName("kvRefusal")
        self.kv_refusal.setWordWrap(True)
        kv_row.addWidget(QLabel("K/V heads"))
        kv_row.addWidget(self.kv_heads)
        kv_row.addWidget(self.kv_refusal, 1)
        outer.addLayout(kv_row)
        self.grouping = QLabel()
        self.grouping.setObjectName("kvGrouping")
        self.grouping.setWordWrap(True)
        self.grouping.setTextFormat(Qt.TextFormat.RichText)
        outer.addWidget(self.grouping)
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
        self._layout_heads: tuple[int, ...] = ()
        self.group_frames: list[QFrame] = []
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

    def _on_kv_heads(self, n: int) -> None:
        if self.edits is None or n == self._kv_now():
            return
        heads = self.model.num_heads
        ok = self.edits.apply(f"K/V heads {n}", lambda m: m.set_kv_heads(None if n == heads else n),
                              on_refused=lambda msg: self.kv_refusal.setText(
                                  f"<span style='color:{current_colors().bad}'>{msg}</span>"))
        if ok:
            self.kv_refusal.setText("")
        else:  # the old value stays: the control shows it again
            self._show_kv()

    def _kv_now(self) -> int:
        kv = getattr(self.model, "kv_heads", None)
        return int(kv if kv is not None else self.model.num_heads)

    def _show_kv(self) -> None:
        with QSignalBlocker(self.kv_heads):
            self.kv_heads.setValue(self._kv_now())
        self.kv_heads.setEnabled(self.model.num_heads > 1 or self._kv_now() != 1)

    def _ensure(self, kv_head_of: tuple[int, ...]) -> None:
        """One weight map per query head, in a frame per K/V head (its colour) holding the heads that share it."""
        if self._layout_heads == kv_head_of:
            return
        for frame in self.group_frames:
            self.rows[1].removeWidget(frame)
            frame.deleteLater()
        h = len(kv_head_of)
        self.head_maps = [HeatmapWidget(title=f"head {i + 1}: weights") for i in range(h)]
        self.group_frames = []
        for g in range(max(kv_head_of) + 1):
            frame = QFrame()
            frame.setObjectName(f"kvGroup{g}")
            frame.setStyleSheet(f"QFrame#kvGroup{g} {{ border: 3px solid {group_colour(g)}; border-radius: 4px; }}")
            box = QVBoxLayout(frame)
            box.setContentsMargins(4, 2, 4, 4)
            members = [i for i in range(h) if kv_head_of[i] == g]
            title = QLabel(f"<span style='color:{group_colour(g)}'><b>K/V head {g + 1}</b></span> · query head"
                           f"{'s' if len(members) > 1 else ''} {', '.join(str(i + 1) for i in members)}")
            box.addWidget(title)
            maps = QHBoxLayout()
            box.addLayout(maps, 1)
            for i in members:
                self.head_maps[i].setMinimumSize(160 if h > 4 else 200, 160)
                maps.addWidget(self.head_maps[i])
            self.rows[1].addWidget(frame)
            self.group_frames.append(frame)
        for n, hm in enumerate(self.head_maps):
            self._connect(hm, f"head:{n}")
        self._layout_heads = kv_head_of

    def redraw(self) -> None:
        self._stale = False
        model = self.model
        state, result = model.state, model.computation
        h = state.num_heads
        withheld = self.concealment.withheld_message(*MULTIHEAD_REVEALS)
        self._show_kv()
        grouping = kv_grouping(model)
        self.grouping.setVisible(grouping is not None)
        self.grouping.setText(grouping_html(grouping) if grouping is not None else "")
        if result.heads is None or withheld:  # one head (nothing split), or a lesson's question covers the heads
            self.info.setText(model.heads_info + (f"<br><b>{withheld}.</b>" if withheld else ""))
            self.body.setVisible(False)
            return
        self.body.setVisible(True)
        self.info.setText(model.heads_info)
        mh = result.heads
        assert grouping is not None
        self._ensure(grouping.kv_head_of)
        q_tok, k_tok = state.query_tokens, state.key_tokens
        blocked = None if mh.heads.mask is None else ~mh.heads.mask
        kv = grouping.kv_heads
        for name, mat, rows, prefix in (("Q", result.q, q_tok, "k"), ("K", result.k, k_tok, "k"),
                                        ("V", result.v, k_tok, "v")):
            hm = self.split_maps[name]
            parts = f"{h} heads" if name == "Q" or kv == h else f"{kv} K/V head{'s' if kv > 1 else ''}"
            hm.set_data(mat, rows, [f"{prefix}{j}" for j in range(mat.shape[1])], kind="signed",
                        title=f"{name} split into {parts}", row_title="query" if name == "Q" else "key",
                        col_title="column")
            hm.set_column_groups(h if name == "Q" else kv)
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
    return MultiHeadView(model, edits)
