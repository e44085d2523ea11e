"""The step pipeline, in reading order: QKᵀ → ×scale → mask → softmax → ·V, one heatmap each.

The optional steps appear only while they are on: ⓡ rotate above the maps (``RotaryStep``, built the first time
rotary is on), ⓒ soft-cap then ⓑ bias (c·tanh(s/c) + bias) between ② and ③ (built when first on). With every
option off the view is the five maps it always was.

Subscribes to the Playground model: redraws on ``result`` (only while shown; a hidden view catches up when it is
shown again), outlines on ``explanation``, marks the pinned cell on ``pinned``. It computes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from app.playground.model.colour_range import SHARED_STEPS
from app.playground.model.playground import PlaygroundModel
from app.playground.model.shown import STEP_VIEWS
from app.playground.qt.step_arrows import (
    MAP_MIN,
    OPTIONAL_MAPS,
    SMALL_NOTE,
    FlowArrow,
    best_columns,
    natural_height,
    numbers_fit,
    optional_title,
    with_marks,
)
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.view import HeatmapWidget
from attention_core import STEP_NAMES, STEP_TITLES

if TYPE_CHECKING:  # the rotate step is imported when rotary is first on: the first frame never shows it
    from app.playground.qt.rotary_step import RotaryStep

STEPS = STEP_VIEWS
TITLES = {name: f"{mark} {STEP_TITLES[name]}" for mark, name in zip("①②③④⑤", STEP_NAMES)}
READING_ORDER = ("scores", "scaled", "capped", "biased", "masked", "weights", "output")
STRIP_SHARE = 3
"""The open rotate step takes a third of the view's height (at least its minimum, at most ``STRIP_MAX_H``)."""
STRIP_MAX_H = 300
def shown_steps(steps: object) -> tuple[str, ...]:
    """The grid's maps for ``steps`` in reading order: the five, and each optional one that is on."""
    return tuple(n for n in READING_ORDER if n in STEPS or getattr(steps, n, None) is not None)


class PipelineView(RedrawWhenShown, QWidget):
    """Five heatmaps that reflow with the view's size (``best_columns``): one row, the 3 + 2 grid or 2 + 2 + 1,
    whichever gives the cells the most room; a map too small for its numbers says so under it."""

    cellHovered = Signal(str, int, int)
    cellClicked = Signal(str, int, int)

    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        # the maps live in a scroll area: with every option off it never scrolls (the body is never taller than
        # the view), and the view looks as it always did; with the rotate step open in a short window the maps
        # keep their minimum height and the view scrolls, instead of squashing them below their numbers
        root = QVBoxLayout(self)
        root.setContentsMargins(0, 0, 0, 0)
        self.scroller = QScrollArea(self)
        self.scroller.setFrameShape(QFrame.Shape.NoFrame)
        self.scroller.setWidgetResizable(False)  # sized by ``_fit_body``: resizable, the wrapping captions' height
        # for width made the body as tall as five maps stacked
        self.scroller.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body = QWidget()
        self.body.setObjectName("stepsBody")
        self.scroller.setWidget(self.body)
        # painted by what is behind them, as the view was (the scroll area fills both with the window colour)
        self.body.setAutoFillBackground(False)
        self.scroller.viewport().setAutoFillBackground(False)
        root.addWidget(self.scroller)
        self.rotary_folded: bool | None = None
        """The user's ▸ Show / ▾ Hide choice for the rotate step; None: folded while the view is too short to
        show it open above readable maps (``ROTARY_FOLD_H``), open otherwise."""
        self.outer = QVBoxLayout(self.body)
        self.outer.setContentsMargins(2, 2, 2, 2)
        self.outer.setSpacing(4)
        self.grid = grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(4)
        self.outer.addLayout(grid, 1)
        self.rotary: RotaryStep | None = None  # the rotate step, built the first time rotary is on
        self.export_extras_for: Callable[[str, HeatmapWidget], dict[str, Any]] | None = None
        # the maps shown now, in reading order (the five, and the optional steps that are on) ...
        self.heatmaps: dict[str, HeatmapWidget] = {}
        self.captions: dict[str, QLabel] = {}
        self.arrows: dict[str, FlowArrow] = {}
        self.boxes: list[QWidget] = []
        # ... and every map built so far: (box, map, arrow, caption)
        self._built: dict[str, tuple[QWidget, HeatmapWidget, FlowArrow, QLabel]] = {}
        self.shown: tuple[str, ...] = ()
        self.columns = 0
        self._placed_shape: tuple[int, int] = (0, 0)  # the maps' shape the layout was chosen for (``reflow``)
        self.small: set[str] = set()  # the maps whose cells are too small for numbers just now
        self._words: tuple[str, ...] = ()  # the arrows' and captions' texts the rows were last aligned for
        self._notes_timer = QTimer(self)
        self._notes_timer.setSingleShot(True)
        self._notes_timer.timeout.connect(self._update_notes)
        self._show_steps(STEPS)
        # fixed, not the grid's: one row of five would otherwise raise the window's minimum width, and three
        # rows its minimum height, so the window could never shrink back to where the reflow gives them up
        box_h = max(b.minimumSizeHint().height() for b in self.boxes) + 2 * self.fontMetrics().lineSpacing()
        self._minimum = (3 * MAP_MIN[0] + 2 * 4 + 4, 2 * box_h + 4 + 4)  # (+ a two-line caption each)
        self.setMinimumSize(*self._minimum)
        self.body.setMinimumSize(self._minimum[0], 0)  # set, so its grid's larger minimum is not taken; its height:
        # the view's, or more while the open rotate step needs more (``grid_height``)
        model.events.result.connect(self.request_redraw)
        model.events.colours.connect(self.request_redraw)
        model.events.explanation.connect(self._on_explanation)
        model.events.pinned.connect(self._on_pinned)
        self.redraw()

    # ---------------------------------------------------------------- the maps shown
    def _build_map(self, name: str) -> tuple[QWidget, HeatmapWidget, FlowArrow, QLabel]:
        """One step's box: the arrow into it, its map, its caption."""
        hm = HeatmapWidget(title=TITLES[name] if name in TITLES else optional_title(name))
        hm.setMinimumSize(*MAP_MIN)
        hm.cellHovered.connect(lambda i, j, v=name: self.cellHovered.emit(v, i, j))
        hm.cellClicked.connect(lambda i, j, v=name: self.cellClicked.emit(v, i, j))
        self._give_exports(name, hm)
        # the "too small" notes depend on the cells' size in pixels, known once pyqtgraph has laid a map out
        # (after the first show, a colour bar coming or going, a reflow): work them out again then
        vb = hm.plot.getViewBox()
        vb.sigResized.connect(lambda *_: self._notes_timer.start(0))
        vb.sigTransformChanged.connect(lambda *_: self._notes_timer.start(0))
        cap = QLabel()
        cap.setObjectName("stepCaption")
        cap.setWordWrap(True)
        cap.setAlignment(Qt.AlignmentFlag.AlignCenter)
        box = QWidget(self.body)
        v = QVBoxLayout(box)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(0)
        arrow = FlowArrow(name)  # the arrow into this map, with its operation
        v.addWidget(arrow)
        v.addWidget(hm, 1)
        v.addWidget(cap)
        return box, hm, arrow, cap

    def set_export_extras(self, extras: Callable[[str, HeatmapWidget], dict[str, Any]]) -> None:
        """What every map's Export adds (its title, the setting, the colour bar's unit), asked of ``extras(name,
        map)`` at export time: for the maps built so far and for those built later (the optional steps' maps and
        the rotate step's are built the first time their option is on, after the window wired its exports)."""
        self.export_extras_for = extras
        for name, (_box, hm, _arrow, _cap) in self._built.items():
            self._give_exports(name, hm)
        if self.rotary is not None:
            for name, hm in self.rotary.maps.items():
                self._give_exports(name, hm)

    def _give_exports(self, name: str, hm: HeatmapWidget) -> None:
        extras = self.export_extras_for
        if extras is not None:
            hm.export_extras = lambda: extras(name, hm)

    def _show_steps(self, names: tuple[str, ...]) -> None:
        """Show the maps ``names`` (in reading order), building the optional ones on first need."""
        if names == self.shown:
            return
        for name in names:
            if name not in self._built:
                self._built[name] = self._build_map(name)
        for name, (box, *_rest) in self._built.items():
            if name not in names:
                self.grid.removeWidget(box)
                box.hide()
        self.shown = names
        self.boxes = [self._built[n][0] for n in names]
        self.heatmaps = {n: self._built[n][1] for n in names}
        self.arrows = {n: self._built[n][2] for n in names}
        self.captions = {n: self._built[n][3] for n in names}
        self._words = ()
        self.place(self.columns or 3, force=True)  # laid out again, whatever the column count

    def _show_rotary(self, on: bool) -> None:
        """The rotate step above the maps while rotary is on (built the first time), hidden while it is off."""
        if on and self.rotary is None:
            from app.playground.qt.rotary_step import RotaryStep

            self.rotary = RotaryStep(self.model)
            self.rotary.cellHovered.connect(self.cellHovered)
            self.rotary.cellClicked.connect(self.cellClicked)
            self.rotary.collapseToggled.connect(self.fold_rotary)
            for name, hm in self.rotary.maps.items():
                self._give_exports(name, hm)
            self.outer.insertWidget(0, self.rotary)
        if self.rotary is None or self.rotary.isHidden() != on:
            return
        self.rotary.setVisible(on)
        self._placed_shape = (0, 0)  # the maps have less height: choose their layout again
        if not on:
            self.body.setMinimumHeight(0)

    def fold_rotary(self, folded: bool) -> None:
        """The user's ▸ Show / ▾ Hide: kept for the session (a resize no longer folds or opens it)."""
        self.rotary_folded = folded
        self.reflow()

    def grid_height(self) -> int:
        """The height left to the maps' grid: all of the body's, less the rotate step while it is shown (folded to
        its caption line, or open). Sets the step's height and the body's minimum height: open above maps that
        would no longer fit, the body grows past the view and the view scrolls."""
        view_h = self.height()  # the scroll area's viewport: it has no frame and never scrolls sideways
        if self.rotary is None or self.rotary.isHidden():
            return view_h
        rot = self.rotary
        width = self.width()
        maps_h = self._minimum[1]  # the maps' grid at its minimum: two rows of readable maps
        share = min(view_h // STRIP_SHARE, STRIP_MAX_H)
        folded = self.rotary_folded
        if folded is None:  # automatic: open only where it fits above readable maps
            folded = rot.open_height(width, share) + self.outer.spacing() + maps_h > view_h
        rot.arrange(width)
        if rot.collapsed != folded:
            rot.set_collapsed(folded)
        strip = rot.header_height(width) if folded else rot.open_height(width, share)
        if rot.height() != strip or rot.minimumHeight() != strip:
            rot.setFixedHeight(strip)
        need = strip + self.outer.spacing() + maps_h
        body_h = need if need > view_h and not folded else 0  # folded: a line, never a scroll
        if self.body.minimumHeight() != body_h:
            self.body.setMinimumHeight(body_h)
            self._fit_body()
        return max(view_h, need) - strip - self.outer.spacing()

    # ---------------------------------------------------------------- reflow
    def place(self, columns: int, force: bool = False) -> None:
        """Lay the maps out ``columns`` to a row, in reading order. The grid has 6 (or 10, 15...) columns so
        a short last row's maps share the width evenly: 3 + 2 is 2 grid columns each above, 3 each below."""
        if columns == self.columns and not force:
            return
        self.columns = columns
        grid = self.grid
        for box in self.boxes:
            grid.removeWidget(box)
        lines = math.ceil(len(self.boxes) / columns)
        last = len(self.boxes) - (lines - 1) * columns
        units = math.lcm(columns, last)
        for n, box in enumerate(self.boxes):
            row, col = divmod(n, columns)
            span = units // (last if row == lines - 1 else columns)
            grid.addWidget(box, row, col * span, 1, span)
            if box.isHidden():
                box.show()
        for c in range(max(grid.columnCount(), units)):
            grid.setColumnStretch(c, 1 if c < units else 0)
        for r in range(max(grid.rowCount(), lines)):
            grid.setRowStretch(r, 1 if r < lines else 0)
        self._colour_bars()

    def _colour_bars(self) -> None:
        """Maps that share one colour range side by side show its bar once, on the last of them in the row: the
        bar is ~60 px, and at 1024 px wide that is what ① and ② needed to keep their numbers."""
        shared = self.model.colours.shared
        names = list(self.shown)
        changed = False
        for first in range(0, len(names), self.columns):
            row = names[first:first + self.columns]
            sharers = [n for n in row if shared and n in SHARED_STEPS]
            for n in row:
                changed |= self.heatmaps[n].set_colorbar_shown(n not in sharers or n == sharers[-1])
        if changed:  # the cells grew or shrank: say again which maps hold their numbers, once laid out
            self._notes_timer.start(0)

    # the sizes the window lays itself out by are the maps' layout's, as before the scroll area wrapped it (the
    # scroll area's own hints differ, and the window's splitter then placed its columns a few pixels apart)
    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return self.outer.totalSizeHint()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return self.outer.totalMinimumSize()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        return self.outer.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt API)
        return self.outer.totalHeightForWidth(width)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit_body()
        self.reflow()

    def _fit_body(self) -> None:
        """The body fills the view, or is as tall as its minimum (then the view scrolls, less the scroll bar's
        width)."""
        height = max(self.height(), self.body.minimumHeight())
        bar = self.scroller.verticalScrollBar().sizeHint().width() if height > self.height() else 0
        if (self.body.width(), self.body.height()) != (self.width() - bar, height):
            self.body.resize(self.width() - bar, height)

    def reflow(self) -> None:
        """The layout ``best_columns`` gives the view's size and the maps' shape. On a resize and when the shape
        changes: chosen on resizes alone, the layout depended on the shapes shown before (a 16 x 64 setting got the
        3 + 2 grid or one row of five depending on history, and its cells half or twice the area)."""
        rows, cols = self.model.result.weights.shape
        self._placed_shape = (rows, cols)
        # what a map's box adds to the map: its arrow line and room for a two-line caption, whatever the captions
        # say now (they follow the layout: "too small for numbers" comes and goes with it, and a layout chosen by
        # them flipped with the notes, or kept whichever the last resize had found)
        extra = max(a.sizeHint().height() for a in self.arrows.values()) + 2 * self.fontMetrics().lineSpacing()
        self.place(best_columns(self.width(), self.grid_height(), self._placed_shape, extra, len(self.shown)))
        self._notes_timer.start(0)  # after the layout has given the maps their new sizes

    def _update_notes(self) -> None:
        """Under a map whose cells cannot hold its numbers: say so, and that hovering shows them."""
        small = {name for name, hm in self.heatmaps.items() if not numbers_fit(hm)}
        if small != self.small:
            self.small = small
            self._show_captions()
        self._align_rows()

    def _align_rows(self) -> None:
        """Maps side by side start and end at the same height: the arrows (and the captions) of one row are as
        tall as the tallest of them. Without it, at 1024 px ③'s arrow wrapped to two lines and pushed ③ lower
        and smaller than ① and ② beside it."""
        self.grid.activate()  # the boxes' widths for the current size, not the ones before the last resize
        names = list(self.shown)
        for first in range(0, len(names), self.columns):
            row = names[first:first + self.columns]
            for labels in (self.arrows, self.captions):
                items = [labels[n] for n in row]
                # measured at the box's width (the label fills it: its own width can still be the old one), and
                # without the minimum set last time (QLabel.heightForWidth never answers less than its minimum)
                height = max(natural_height(lab) for lab in items)
                for lab in items:
                    if lab.minimumHeight() != height:
                        lab.setMinimumHeight(height)

    def _show_captions(self) -> None:
        for name, cap in self.captions.items():
            text = self.model.captions.get(name, "")
            if name in self.small:
                text = f"{text} · {SMALL_NOTE}" if text else SMALL_NOTE
            cap.setText(text)

    # ---------------------------------------------------------------- model events
    def redraw(self) -> None:
        """Draw the model's current result and captions."""
        self._stale = False
        m = self.model
        s = m.result
        names = shown_steps(s)
        relayout = names != self.shown
        self._show_steps(names)
        rotary = getattr(s, "q_rotated", None) is not None
        relayout |= self.rotary is not None and self.rotary.isHidden() == rotary
        self._show_rotary(rotary)
        if rotary and self.rotary is not None:
            self.rotary.redraw()
        q, k = m.state.query_tokens, m.state.key_tokens
        blocked = None if s.mask is None else ~s.mask
        hm = self.heatmaps
        lv = m.colours.levels  # the model's ranges: ①–③ shared (by default) and stable across edits
        # axis titles on few maps: the others share their axes, and the space goes to cells. ① names only its
        # keys: a "query" title beside it made ① the narrowest map of its row, the one that lost its numbers
        # first (its rows are Q's, as the arrow into it says); ④ names both
        hm["scores"].set_data(s.scores, q, k, kind="signed", col_title="key", levels=lv["scores"])
        hm["scaled"].set_data(s.scaled, q, k, kind="signed", levels=lv["scaled"])
        for name in OPTIONAL_MAPS:
            if name in hm:  # (Lq, Lk), or one head's (1, Lq, Lk) of a bias made for every head
                values = getattr(s, name)
                hm[name].set_data(values.reshape(values.shape[-2:]), q, k, kind="signed", levels=lv.get(name))
        hm["masked"].set_data(s.masked, q, k, blocked=blocked, kind="signed", levels=lv["masked"])
        hm["weights"].set_data(s.weights, q, k, blocked=blocked, kind="weights", row_title="query",
                               col_title="key")
        hm["output"].set_data(s.output, q, [f"v{j}" for j in range(s.output.shape[1])], kind="signed",
                              col_title="value dimension", levels=lv["output"])
        self._colour_bars()
        for name in self.shown:
            hm[name].set_range_note(m.colours.notes.get(name, ""))
            default = OPTIONAL_MAPS[name][2] if name in OPTIONAL_MAPS else ""
            self.arrows[name].set_html(with_marks(m.flow.get(name, default)))
        self.small = {name for name, hm in self.heatmaps.items() if not numbers_fit(hm)}  # at today's sizes
        self._show_captions()
        words = tuple(lab.text() for lab in (*self.arrows.values(), *self.captions.values()))
        if words != self._words:  # new words may wrap differently: align the rows once laid out
            self._words = words
            self._notes_timer.start(0)
        self._on_explanation()
        self._on_pinned()
        if s.weights.shape != self._placed_shape or relayout:
            self.reflow()  # with the new captions (their lines count in ``extra``)

    def _on_explanation(self) -> None:
        for name, hm in self.heatmaps.items():
            rows, cols, cells = self.model.highlights.get(name, ((), (), ()))
            hm.set_highlight(rows, cols, cells)

    def _on_pinned(self) -> None:
        pinned = self.model.pinned
        for name, hm in self.heatmaps.items():
            hm.set_selected(pinned[1:] if pinned is not None and pinned[0] == name else None)
