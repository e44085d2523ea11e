"""The Cause view's Lens and Attribution panels: each follows ``session.cause`` (``app.model_tab.model.cause``) and
draws its result; they compute nothing. A token field's refusal is said under it in red and the field keeps the old
value. Clicking a head's cell of the attribution grid picks that head and opens it in the Playground."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.session import InspectSession
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.theme import LIGHT, ThemeColors, follow_theme, span, style_plot, style_view

TOP_SHOWN = 5


def caption_label() -> QLabel:
    label = QLabel("")
    label.setWordWrap(True)
    label.setObjectName("captionLabel")
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def error_label() -> QLabel:
    label = QLabel("")
    label.setObjectName("errorLabel")
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setVisible(False)
    return label


def show_error(label: QLabel, text: str, colors: ThemeColors) -> None:
    label.setText(span("⚠ " + html.escape(text), colors.bad) if text else "")
    label.setVisible(bool(text))


def token_field(placeholder: str, tip: str) -> QLineEdit:
    edit = QLineEdit()
    edit.setPlaceholderText(placeholder)
    edit.setToolTip(tip)
    edit.setMaximumWidth(160)
    return edit


class LensPanel(RedrawWhenShown, QWidget):
    """Rows = half-layers with their top tokens and probabilities; a target token's probability and rank drawn
    through the layers."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.cause = session, session.cause
        self.colors = LIGHT
        v = QVBoxLayout(self)
        v.setContentsMargins(2, 2, 2, 2)
        self.caption = caption_label()
        v.addWidget(self.caption)
        row = QHBoxLayout()
        row.addWidget(QLabel("Target token:"))
        self.target_edit = token_field("top prediction", "One token of the model's vocabulary (␣ for a space); "
                                       "empty: the model's own top prediction. Enter to draw it.")
        self.target_edit.returnPressed.connect(lambda: self.cause.set_lens_target(self.target_edit.text()))
        row.addWidget(self.target_edit)
        row.addStretch(1)
        v.addLayout(row)
        self.error = error_label()
        v.addWidget(self.error)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.table = QTableWidget(0, TOP_SHOWN)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setHorizontalHeaderLabels([f"#{i + 1}" for i in range(TOP_SHOWN)])
        split.addWidget(self.table)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        self.curve_title = QLabel("")
        rv.addWidget(self.curve_title)
        self.plots = pg.GraphicsLayoutWidget()
        rv.addWidget(self.plots, 1)
        self.prob_plot = self.plots.addPlot(row=0, col=0)
        self.prob_plot.setLabel("left", "probability")
        self.prob_plot.setYRange(0, 1)
        self.prob_curve = self.prob_plot.plot([], [], symbol="o", symbolSize=5)
        self.rank_plot = self.plots.addPlot(row=1, col=0)
        self.rank_plot.setLabel("left", "rank (0 = top)")
        self.rank_plot.setXLink(self.prob_plot)
        self.rank_curve = self.rank_plot.plot([], [], symbol="o", symbolSize=5)
        split.addWidget(right)
        split.setSizes([520, 360])
        v.addWidget(split, 1)
        self.cause.events.lens.connect(self.request_redraw)
        follow_theme(self._restyle)
        self.redraw()

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        style_view(self.plots, c)
        for plot in (self.prob_plot, self.rank_plot):
            style_plot(plot, c)
        for curve in (self.prob_curve, self.rank_curve):
            curve.setPen(pg.mkPen(c.blue, width=2))
            curve.setSymbolBrush(c.blue)
        self.redraw()

    def redraw(self) -> None:
        self._stale = False
        c = self.cause
        show_error(self.error, c.lens_error, self.colors)
        self.caption.setText(c.lens_caption())
        lens = c.lens
        if lens is None:
            self.table.setRowCount(0)
            self.prob_curve.setData([], [])
            self.rank_curve.setData([], [])
            self.curve_title.setText("")
            return
        self.table.setRowCount(len(lens.labels))
        self.table.setVerticalHeaderLabels(list(lens.labels))
        for r, top in enumerate(lens.top):
            for j in range(TOP_SHOWN):
                text = f"{top[j][1]!r} {top[j][2]:.3f}" if j < len(top) else ""
                self.table.setItem(r, j, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        curve = c.lens_curve()
        assert curve is not None
        name, probs, ranks = curve
        x = np.arange(len(lens.labels))
        self.prob_curve.setData(x, probs)
        self.rank_curve.setData(x, ranks.astype(float))
        self.curve_title.setText(f"{name!r} through the layers: its probability and its rank at each half-layer")
        ticks = [list(enumerate(lens.labels))]
        for plot in (self.prob_plot, self.rank_plot):
            plot.getAxis("bottom").setTicks(ticks)


class AttributionPanel(RedrawWhenShown, QWidget):
    """A cell per head (layers × heads) and a column for each layer's MLP, coloured by its share of the logit
    (difference); embed, biases, their sum and the model's own value beside it. A head's cell opens that head in
    the Playground."""

    def __init__(self, session: InspectSession, open_head: Callable[[], Any] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.cause, self.open_head = session, session.cause, open_head
        self.colors = LIGHT
        v = QVBoxLayout(self)
        v.setContentsMargins(2, 2, 2, 2)
        self.caption = caption_label()
        v.addWidget(self.caption)
        row = QHBoxLayout()
        row.addWidget(QLabel("Target:"))
        self.target_edit = token_field("top prediction", "One token; empty: the model's own top prediction")
        row.addWidget(self.target_edit)
        row.addWidget(QLabel("Foil:"))
        self.foil_edit = token_field("none", "One token to subtract (logit difference); empty: the target's logit")
        row.addWidget(self.foil_edit)
        for edit in (self.target_edit, self.foil_edit):
            edit.returnPressed.connect(self._apply)
        row.addStretch(1)
        v.addLayout(row)
        self.error = error_label()
        v.addWidget(self.error)
        self.grid = HeatmapWidget(title="Direct logit attribution")
        self.grid.set_show_numbers(True)
        self.grid.cellHovered.connect(self._hover)
        self.grid.cellClicked.connect(self._clicked)
        v.addWidget(self.grid, 1)
        self.sums = QLabel("")
        self.sums.setWordWrap(True)
        v.addWidget(self.sums)
        self.cause.events.attribution.connect(self.request_redraw)
        follow_theme(self._restyle)
        self.redraw()

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.redraw()

    def _apply(self) -> None:
        if not self.cause.set_attr_tokens(self.target_edit.text(), self.foil_edit.text()):
            return

    def _hover(self, r: int, col: int) -> None:
        a = self.cause.attribution
        if a is None or r < 0:
            self.sums.setText(self._sums_text())
            return
        heads = a.heads.shape[1]
        what = f"head {r}.{col}" if col < heads else f"mlp {r}"
        value = a.heads[r, col] if col < heads else a.mlps[r]
        self.sums.setText(f"{what}: {value:+.4f}" + (" — click to open it in the Playground" if col < heads else ""))

    def _clicked(self, r: int, col: int) -> None:
        a = self.cause.attribution
        if a is None or not (0 <= r < a.heads.shape[0] and 0 <= col < a.heads.shape[1]):
            return
        self.session.select_head(r, col)
        if self.open_head is not None:
            self.open_head()

    def _sums_text(self) -> str:
        a = self.cause.attribution
        if a is None:
            return ""
        return (f"embed {a.embed:+.4f}   heads {float(a.heads.sum()):+.4f}   MLPs {float(a.mlps.sum()):+.4f}   "
                f"biases {a.biases:+.4f}   = {a.total:+.4f}   (the model's own: {a.actual:+.4f})"
                + (f"   {a.note}" if a.note else ""))

    def redraw(self) -> None:
        self._stale = False
        c = self.cause
        show_error(self.error, c.attr_error, self.colors)
        self.caption.setText(c.attribution_caption())
        a = c.attribution
        self.grid.setVisible(a is not None)  # a result for another text is not drawn: it was cleared
        if a is None:
            self.sums.setText("")
            return
        layers, heads = a.heads.shape
        values = np.concatenate([a.heads, a.mlps[:, None]], axis=1)
        self.grid.set_data(values, [str(li) for li in range(layers)], [str(h) for h in range(heads)] + ["MLP"],
                           kind="signed", title="Each head's (and MLP's) share of the logit",
                           row_title="layer", col_title="head")
        self.sums.setText(self._sums_text())
