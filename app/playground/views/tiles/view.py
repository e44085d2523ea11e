"""The Tiles view: FlashAttention's tiled forward pass over the Playground's Q, K, V, one tile at a time.

Reading order: the block sizes (controls, one undo step each), the tile being computed (Step, or the slider over
the tiles in the order computed), the Lq × Lk grid of tiles (the current one outlined, done ones blue, skipped ones
grey and hatched), each query row's running max m, running sum l, the rescale factor exp(m_before − m) the current
tile applied (marked when a larger max arrived) and its un-normalised output o, the memory held against the full
matrix, and the output so far beside Steps' output with their largest difference once the last tile is done. Every
number is a field of ``attention_core.FlashSteps`` (``app.playground.views.tiles.model``); this widget only draws.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.playground.model.concealment import Concealment
from app.playground.model.playground import PlaygroundModel
from app.playground.views.tiles import model as tm
from app.playground.views.tiles.grid import TileGrid
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.theme import LIGHT, ThemeColors, follow_theme

if TYPE_CHECKING:
    from app.playground.qt.commands import UndoableEdits

UPDATE = "m ← max(m, rowmax(S)) · l ← l·e^(m_before − m) + Σ e^(S − m) · o ← o·e^(m_before − m) + e^(S − m)·V"
STAT_COLUMNS = ("query", "m (max)", "l (sum)", "rescale")
HEADER_TIPS = ("the query row", "running max: the largest score the row has seen so far",
               "running sum of e^(score − m) over the keys seen", "e^(m_before − m): what this tile multiplied the "
               "row's sum and output by (below 1 when a larger max arrived)")


class TilesView(RedrawWhenShown, QWidget):
    """Draws ``model.flash`` frame by frame; ``index`` (1 … number of tiles) is the view's own position."""

    def __init__(self, model: PlaygroundModel, edits: UndoableEdits | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model, self.edits = model, edits
        self.index = 1
        self.frame: tm.TileFrame | None = None
        self.flash: Any = None
        self._widths: list[int] = []  # the longest text of each table column, last drawn (re-measured on change)
        self.colors = LIGHT
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        controls = QHBoxLayout()
        self.block_q, self.block_k = QSpinBox(), QSpinBox()
        for label, spin, name in (("Block q", self.block_q, "blockQ"), ("Block k", self.block_k, "blockK")):
            spin.setRange(0, 999)  # out of range is refused by the model, with its reason beside the controls
            spin.setObjectName(name)
            spin.setKeyboardTracking(False)
            spin.setToolTip("rows (queries) / columns (keys) per tile")
            spin.valueChanged.connect(self._on_blocks)
            controls.addWidget(QLabel(label))
            controls.addWidget(spin)
        self.refusal = QLabel()
        self.refusal.setObjectName("tilesRefusal")
        self.refusal.setWordWrap(True)
        controls.addWidget(self.refusal, 1)
        self.back = QPushButton("◀")
        self.back.setMaximumWidth(36)
        self.back.setToolTip("the tile before")
        self.step = QPushButton("Step ▶")
        self.step.setToolTip("compute the next tile")
        self.back.clicked.connect(lambda: self.show_tile(self.index - 1))
        self.step.clicked.connect(lambda: self.show_tile(self.index + 1))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setMinimum(1)
        self.slider.setMinimumWidth(120)
        self.slider.valueChanged.connect(self.show_tile)
        self.position = QLabel()
        for w in (self.back, self.step, self.slider, self.position):
            controls.addWidget(w)
        outer.addLayout(controls)
        self.info = QLabel()
        self.info.setObjectName("tilesInfo")
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.RichText)
        outer.addWidget(self.info)
        self.body = QWidget()  # in a scroll area: on a small window it scrolls rather than squeezing the maps
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.body)
        low = QVBoxLayout(self.body)
        low.setContentsMargins(0, 0, 0, 0)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.setMinimumHeight(200)
        self.grid = TileGrid()
        self.table = QTableWidget()
        self.table.verticalHeader().setVisible(False)
        top.addWidget(self.grid)
        top.addWidget(self.table)
        top.setSizes([400, 500])
        low.addWidget(top, 3)
        self.memory = QLabel()
        self.memory.setObjectName("tilesMemory")
        self.memory.setWordWrap(True)
        low.addWidget(self.memory)
        maps = QHBoxLayout()
        self.flash_output = HeatmapWidget(title="Tiles' output")
        self.steps_output = HeatmapWidget(title="Steps' output")
        for hm in (self.flash_output, self.steps_output):
            hm.setMinimumSize(200, 170)
            maps.addWidget(hm)
        self.difference = QLabel()  # above the maps it compares: in sight without scrolling
        self.difference.setObjectName("tilesDifference")
        self.difference.setWordWrap(True)
        low.addWidget(self.difference)
        low.addLayout(maps, 2)
        outer.addWidget(scroll, 1)
        self.concealment = Concealment.of(model)
        # "flash": model.flash is stale (after every result and every change of block sizes)
        (model.events.flash if hasattr(model.events, "flash") else model.events.result).connect(self.request_redraw)
        self.concealment.events.changed.connect(self.request_redraw)
        follow_theme(self._restyle)
        self.request_redraw()

    # ------------------------------------------------------------------ input
    def _on_blocks(self) -> None:
        bq, bk = self.block_q.value(), self.block_k.value()
        if (bq, bk) == tm.block_sizes(self.model) or self.edits is None:
            return
        ok = self.edits.apply(f"Block sizes {bq} × {bk}", lambda m: m.set_blocks(bq, bk),
                              on_refused=self._refused)
        if ok:
            self.refusal.setText("")
        else:  # the old sizes stay: the controls show them again
            self._show_blocks()

    def _refused(self, message: str) -> None:
        self.refusal.setText(f"<span style='color:{self.colors.bad}'>{message}</span>")

    def _show_blocks(self) -> None:
        bq, bk = tm.block_sizes(self.model)
        for spin, v in ((self.block_q, bq), (self.block_k, bk)):
            with QSignalBlocker(spin):
                spin.setValue(v)

    def show_tile(self, index: int) -> None:
        """Show the state after tile ``index`` (1 … number of tiles; clamped)."""
        self.index = int(index)
        self._draw_frame()

    # ------------------------------------------------------------------ drawing
    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.grid.restyle(c)
        if not self._stale:
            self._draw_frame()

    def redraw(self) -> None:
        self._stale = False
        self._show_blocks()
        withheld = self.concealment.withheld_message(*tm.TILES_REVEALS)
        self.body.setVisible(not withheld)
        for w in (self.step, self.back, self.slider):
            w.setEnabled(not withheld)
        if withheld:
            self.frame = None
            self.position.setText("")  # no tile is shown: a kept "tile 1 of 4" would describe a hidden record
            self.info.setText(f"<b>{withheld}.</b>")
            return
        self.flash = tm.flash_of(self.model)
        self._draw_frame()

    def _draw_frame(self) -> None:
        if self._stale or self.concealment.withheld_message(*tm.TILES_REVEALS):
            return
        flash, model = self.flash, self.model
        frame = tm.frame_at(flash, self.index)
        self.frame, self.index = frame, frame.index
        with QSignalBlocker(self.slider):
            self.slider.setMaximum(frame.total)
            self.slider.setValue(frame.index)
        self.back.setEnabled(frame.index > 1)
        self.step.setEnabled(not frame.finished)
        self.position.setText(f"tile {frame.index} of {frame.total}")
        q_tok, k_tok = list(model.query_tokens), list(model.key_tokens)
        self.grid.set_frame(frame, q_tok, k_tok)
        self.info.setText(self._info_html(frame, q_tok))
        self._fill_table(frame, q_tok)
        self.memory.setText(tm.memory_text(flash))
        d_v = flash.output.shape[1]
        cols = [f"v{j}" for j in range(d_v)]
        title = "Tiles' output" if frame.finished else f"Tiles' output so far (o ÷ l after tile {frame.index})"
        self.flash_output.set_data(flash.output if frame.finished else frame.partial, q_tok, cols, kind="signed",
                                   title=title, row_title="query", col_title="value dimension")
        self.steps_output.set_data(model.result.output, q_tok, cols, kind="signed", title="Steps' output",
                                   row_title="query", col_title="value dimension")
        self.difference.setText(self._difference_html(frame))

    def _info_html(self, frame: tm.TileFrame, q_tok: list[str]) -> str:
        t, c = frame.current, self.colors
        where = (f"<b>Tile {frame.index} of {frame.total}</b>: query block {t.q_block} (rows "
                 f"{t.rows.start}–{t.rows.stop - 1}) × key block {t.k_block} (keys {t.cols.start}–{t.cols.stop - 1})")
        if t.skipped:
            return where + f" — <span style='color:{c.muted}'>skipped: the mask blocks every cell of it, so the " \
                           "kernel never computes it</span>"
        grew = tm.rescaled_rows(frame)
        if grew:
            names = ", ".join(f"'{q_tok[i]}' ×{frame.rescale[i]:.3g}" for i in grew)
            news = f"A larger max arrived for {names}: the sum and output held so far shrink by that factor"
        else:
            news = "No row's max grew: nothing held is rescaled"
        return f"{where}. {news}.<br><span style='color:{c.muted}'>{UPDATE}</span>"

    def _difference_html(self, frame: tm.TileFrame) -> str:
        c = self.colors
        if not frame.finished:
            return f"<span style='color:{c.muted}'>Step to the last tile: the output is o ÷ l once every key " \
                   "block has been seen.</span>"
        diff = tm.largest_difference(self.flash, self.model.result.output)
        note = tm.comparison_note(self.model)
        colour = c.good if diff <= 1e-12 else c.warn
        text = (f"<span style='color:{colour}'><b>largest |tiles − Steps| = {diff:.3g}</b></span>: the same output, "
                "exact up to float rounding, without ever holding the Lq × Lk matrix")
        return text + (f" <span style='color:{c.warn}'>({note})</span>" if note else "")

    def _fill_table(self, frame: tm.TileFrame, q_tok: list[str]) -> None:
        """The rows' m, l, rescale and o at this frame. The items are made once per shape and then only given new
        text (a live edit redraws this table: making its ~160 items and measuring every column anew was most of an
        edit's cost with the view open); columns are re-measured when the shape or a text's length changes."""
        d_v = frame.o.shape[1]
        table = self.table
        headers = [*STAT_COLUMNS, *(f"o{j}" for j in range(d_v))]
        reshaped = table.columnCount() != len(headers) or table.rowCount() != len(q_tok)
        if reshaped:
            table.setColumnCount(len(headers))
            table.setHorizontalHeaderLabels(headers)
            for col, tip in enumerate(HEADER_TIPS):
                header = table.horizontalHeaderItem(col)
                if header is not None:
                    header.setToolTip(tip)
            table.setRowCount(len(q_tok))
        t = frame.current
        m_before = np.full(len(q_tok), np.nan)
        m_before[t.rows.start:t.rows.stop] = t.m_before
        grew = set(tm.rescaled_rows(frame))
        bold, plain = QFont(table.font()), QFont(table.font())
        bold.setBold(True)
        orange = QColor(self.colors.orange)
        lit = orange.darker(250) if self.colors.dark else orange.lighter(170)
        widths: list[int] = [0] * len(headers)
        for i, tok in enumerate(q_tok):
            values = [frame.m[i], frame.l[i], frame.rescale[i], *frame.o[i]]
            texts = [tok]
            for col, v in enumerate(values, start=1):
                shown = tm.number(float(v))
                if col == 3 and i in t.rows and math.isinf(m_before[i]):
                    shown = "—"  # the row's first keys: nothing held yet to rescale
                texts.append(shown)
            for col, shown in enumerate(texts):
                item = table.item(i, col)
                if item is None:
                    item = QTableWidgetItem()
                    if col:
                        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    table.setItem(i, col, item)
                widths[col] = max(widths[col], len(shown))
                if item.text() != shown:
                    item.setText(shown)
                if not col:
                    continue
                item.setData(Qt.ItemDataRole.UserRole, float(values[col - 1]))
                item.setBackground(lit if i in t.rows and not t.skipped else QBrush())
                rescaled = col == 3 and i in grew
                item.setFont(bold if rescaled else plain)
                item.setToolTip("a larger max arrived: what this row held is multiplied by this" if rescaled else "")
        if reshaped or widths != self._widths:
            self._widths = widths
            table.resizeColumnsToContents()


def build(model: PlaygroundModel, edits: UndoableEdits) -> QWidget:
    """The view for the Playground's tab (``app/playground/views/registry.py``)."""
    return TilesView(model, edits)
