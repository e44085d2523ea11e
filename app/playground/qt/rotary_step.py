"""The Steps view's ⓡ rotate step, shown above the five maps while rotary positions are on.

Q and K before rotation, Q and K after (the ``AttentionSteps`` fields ``q_rotated``, ``k_rotated``: the scores ①
are made from these), the angle each column pair turns at each position, and the plot of why that makes attention
relative (``RotaryPlot``). Hovering a rotated cell sends ``cellHovered("q_rotated", i, j)`` (or ``k_rotated``), so
the explanation bar shows that cell's rotation with the numbers plugged in, as every other map's hover does.

Built the first time rotary is on (never at launch), hidden while it is off, redrawn only while shown; the numbers
come from the model (``model.result``) and ``app.playground.model.rotary``: nothing is computed here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from app.playground.model.playground import PlaygroundModel
from app.playground.model.rotary import RotaryPicture, plotted_pair, rotary_data
from app.playground.qt.rotary_plot import RotaryPlot
from app.playground.qt.step_arrows import mark
from app.widgets.heatmap.view import HeatmapWidget

ROTATE_MARK = ("ⓡ", "↻")
"""The rotate step's mark, and what stands in for it where the font has no circled letters (``mark``)."""
MAP_TITLES = {"q": "Q before", "q_rotated": "{r} Q rotated", "k": "K before", "k_rotated": "{r} K rotated",
              "q_angles": "{r} angle m·θ (rad)", "k_angles": "{r} key angle n·θ (rad)"}
"""Each map of the strip, by the name it is kept under (``maps``); the rotated ones are the hoverable steps."""
HOVERED = ("q_rotated", "k_rotated")
STRIP_MIN_H = 130
"""The strip's least height when shown open, beside the plot (one row)."""
NARROW_W = 900
"""Narrower than this the plot goes under the maps: side by side, five maps and the plot left each map ~100 px and
cut the titles ("Q befor")."""
NARROW_PART_H = (200, 185)
"""In the narrow layout, the height of the maps' row and of the plot under it."""
TOGGLE_TEXT = {True: "▸ Show", False: "▾ Hide"}
TOGGLE_TIP = {True: "Show Q and K before and after rotation, the angles, and why the score is relative",
              False: "Fold the rotate step to its line, giving its height to the maps below"}
EXPORT_TITLES = {"q": "Q before rotation", "q_rotated": "Q rotated (rotary positions)", "k": "K before rotation",
                 "k_rotated": "K rotated (rotary positions)", "q_angles": "Rotation angle of each column pair",
                 "k_angles": "Rotation angle of each column pair (keys)"}


def unchanged(hm: HeatmapWidget, values: np.ndarray | None, rows: list[str]) -> bool:
    """Whether ``hm`` shows ``values`` with these row labels already."""
    shown = hm.values()
    return (values is not None and shown.shape == values.shape and hm.row_labels() == rows
            and bool(np.array_equal(shown, values)))


class RotaryStep(QWidget):
    """Q, K before and after rotation, the angles, and the relative-score plot, in one row."""

    cellHovered = Signal(str, int, int)
    cellClicked = Signal(str, int, int)
    collapseToggled = Signal(bool)
    """The ▸ Show / ▾ Hide button was pressed: the folded state asked for (the view decides and calls
    ``set_collapsed``)."""

    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        root = QVBoxLayout(self)
        root.setContentsMargins(0, 0, 0, 0)
        root.setSpacing(0)
        self.caption = QLabel()
        self.caption.setObjectName("flowArrow")
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.TextFormat.RichText)
        self.collapsed = False
        self.toggle = QToolButton()
        self.toggle.setObjectName("rotaryToggle")
        self.toggle.setAutoRaise(True)
        self.toggle.clicked.connect(lambda: self.collapseToggled.emit(not self.collapsed))
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.caption, 1)
        header.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignTop)
        root.addLayout(header)
        self.body = QWidget()  # the maps and the plot: what folding hides
        row = self.row = QGridLayout(self.body)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(4)
        root.addWidget(self.body, 1)
        self.narrow: bool | None = None  # the plot under the maps (``arrange``); None until first arranged
        self.maps: dict[str, HeatmapWidget] = {}
        self.mark = mark(*ROTATE_MARK)
        for name, title in MAP_TITLES.items():
            hm = HeatmapWidget(title=title.format(r=self.mark))
            hm.setMinimumSize(70, STRIP_MIN_H - 30)
            if name in HOVERED:
                hm.cellHovered.connect(lambda i, j, v=name: self.cellHovered.emit(v, i, j))
                hm.cellClicked.connect(lambda i, j, v=name: self.cellClicked.emit(v, i, j))
            hm.export_extras = lambda n=name: {"title": EXPORT_TITLES[n]}
            self.maps[name] = hm
        self.plot_box = QWidget()
        column = QVBoxLayout(self.plot_box)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        self.plot = RotaryPlot()
        column.addWidget(self.plot, 1)
        self.plot_key = QLabel()
        self.plot_key.setObjectName("stepCaption")
        self.plot_key.setWordWrap(True)
        self.plot_key.setTextFormat(Qt.TextFormat.RichText)
        column.addWidget(self.plot_key)
        self.arrange(NARROW_W)
        self.set_collapsed(False)
        for hm in self.maps.values():  # the cells get the room (their numbers, or a hover, read them)
            hm.set_colorbar_shown(False)
        self._angles: RotaryPicture | None = None  # the angles drawn last
        model.events.explanation.connect(self._on_explanation)
        model.events.pinned.connect(self._on_pinned)

    def arrange(self, width: int) -> None:
        """The maps in one row with the plot beside them at ``width`` of ``NARROW_W`` and more, else the plot under
        them."""
        narrow = width < NARROW_W
        if narrow == self.narrow:
            return
        self.narrow = narrow
        row = self.row
        for n, hm in enumerate(self.maps.values()):
            row.addWidget(hm, 0, n)
        count = len(self.maps)
        if narrow:
            row.addWidget(self.plot_box, 1, 0, 1, count)
        else:
            row.addWidget(self.plot_box, 0, count)
        for hm in self.maps.values():  # the maps keep their row's height: the plot's hint would take it all
            hm.setMinimumHeight(NARROW_PART_H[0] if narrow else STRIP_MIN_H - 30)
        self.plot_box.setMaximumHeight(NARROW_PART_H[1] if narrow else 16777215)
        self._stretch()

    def _stretch(self) -> None:
        """The shown maps share the width (a hidden one, the keys' angles when they equal the queries', takes
        none); beside them the plot takes two maps' width."""
        for n, hm in enumerate(self.maps.values()):
            self.row.setColumnStretch(n, 0 if hm.isHidden() else 1)
        self.row.setColumnStretch(len(self.maps), 0 if self.narrow else 2)

    def set_collapsed(self, collapsed: bool) -> None:
        """Fold the strip to its caption line and the ▸ Show button, or open it."""
        self.collapsed = collapsed
        self.body.setVisible(not collapsed)
        self.toggle.setText(TOGGLE_TEXT[collapsed])
        self.toggle.setToolTip(TOGGLE_TIP[collapsed])
        self.setMinimumHeight(0 if collapsed else STRIP_MIN_H)

    def header_height(self, width: int) -> int:
        """The caption line's height (with the button) at ``width``: all the strip takes while folded."""
        words = self.caption.heightForWidth(max(width - self.toggle.sizeHint().width() - 6, 1))
        return max(words, self.toggle.sizeHint().height())

    def open_height(self, width: int, share: int) -> int:
        """The strip's height while open at ``width``: ``share`` of the view beside the plot (at least
        ``STRIP_MIN_H``), or the maps' row and the plot's under them in the narrow layout."""
        if width < NARROW_W:
            return self.header_height(width) + sum(NARROW_PART_H) + self.row.spacing()
        return max(STRIP_MIN_H, share)

    def redraw(self) -> None:
        """Draw the model's rotation (call only while rotary is on)."""
        m, s = self.model, self.model.result
        data = rotary_data(s)
        if data is None:
            return
        pic = data.picture
        qt, kt = list(m.state.query_tokens), list(m.state.key_tokens)
        qcols = [f"k{j}" for j in range(pic.d)]
        mp = self.maps
        for side, labels, before, after in (("q", qt, s.q, s.q_rotated), ("k", kt, s.k, s.k_rotated)):
            # an edit of one matrix leaves the other side's maps as they are: not set (nor repainted) again
            if unchanged(mp[side], before, labels) and unchanged(mp[f"{side}_rotated"], after, labels):
                continue
            mp[side].set_data(before, labels, qcols, kind="signed", row_title="query" if side == "q" else "key")
            mp[f"{side}_rotated"].set_data(after, labels, qcols, kind="signed", col_title="column",
                                           levels=mp[side].levels())
        same = data.same_positions
        if self._angles is None or not (np.array_equal(self._angles.q_angles, pic.q_angles)
                                        and np.array_equal(self._angles.k_angles, pic.k_angles)):
            self._angles = pic  # the angles change with the setting, not with an edited number: drawn then only
            mp["q_angles"].set_data(pic.q_angles, data.q_rows, list(pic.labels), kind="signed", col_title="pair")
            if not same:
                mp["k_angles"].set_data(pic.k_angles, data.k_rows, list(pic.labels), kind="signed",
                                        col_title="pair")
        if mp["k_angles"].isHidden() != same:
            mp["k_angles"].setVisible(not same)
            self._stretch()
        self.caption.setText(data.caption.replace(ROTATE_MARK[0], self.mark))
        self._draw_plot()
        self._on_explanation()
        self._mark_pinned()

    def _draw_plot(self) -> None:
        s = self.model.result
        data = rotary_data(s)
        if data is None:
            return
        query, key = plotted_pair(self.model.pinned, s)
        curves = data.curves(query, key)
        if curves is not None:
            qt, kt = self.model.state.query_tokens, self.model.state.key_tokens
            self.plot.draw(curves, f"q '{qt[curves.query]}' · k '{kt[curves.key]}', now at m − n = {curves.offset}")
            self.plot_key.setText(self.plot.key_html)

    def _on_explanation(self) -> None:
        if self.isHidden():
            return
        for name in HOVERED:
            rows, cols, cells = self.model.highlights.get(name, ((), (), ()))
            self.maps[name].set_highlight(rows, cols, cells)
        for name, src in (("q", "Q"), ("k", "K")):
            rows, cols, _ = self.model.highlights.get(src, ((), (), ()))
            self.maps[name].set_highlight(rows, cols)

    def _mark_pinned(self) -> None:
        pinned = self.model.pinned
        for name in HOVERED:
            self.maps[name].set_selected(pinned[1:] if pinned is not None and pinned[0] == name else None)

    def _on_pinned(self, *_args: Any) -> None:
        if self.isHidden():
            return
        self._mark_pinned()
        self._draw_plot()  # a pinned query × key cell picks the plotted pair
