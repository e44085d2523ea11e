"""The flow between the Steps view's maps: the arrow that leads into each map, with its operation.

Each step's box carries, above its map, the arrow that makes it: "① ⟶ × 0.5 = 1/√4", with Q and K named where
they enter ① and V where it enters ⑤, and ③ saying "no mask: same as ②" or how many cells the mask blocks. The
arrow belongs to its map rather than to the gaps of a grid, so it stays right however ``PipelineView`` places its
maps (one row, a 3 + 2 grid, a column). The words come from the model (``PlaygroundModel.flow``, built from
``app.playground.model.texts.STEP_OPERATIONS``, which the exported pipeline figure uses too); this only shows them.

And the sizes the maps are laid out by: each map's minimum, how many maps to a row (``best_columns``), whether a
map's cells hold its numbers (``numbers_fit``) and a label's height at its width (``natural_height``); the
optional steps' marks, titles and arrows (``OPTIONAL_MAPS``, ``optional_title``).
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from app.playground.model.shown import STEP_VIEWS
from app.widgets.heatmap.view import HeatmapWidget
from attention_core import STEP_TITLES

MAP_MIN = (150, 130)
"""Each step map's minimum size (w, h): small enough that the Playground fits a 1000 px window, large enough for
a 3 × 3 map's numbers. Smaller cells than the numbers need get the ``SMALL_NOTE`` under the map instead."""
SMALL_NOTE = "too small for numbers: hover a cell"
MAP_CHROME_W = 100
"""What a map's width spends outside its cells: query labels and the colour bar with its label (px)."""
COLUMN_CHOICES = (5, 3, 2)
"""How many maps per row the reflow may pick (5: one row; 3: the 3 + 2 grid; 2: 2 + 2 + 1)."""



def mark(preferred: str, fallback: str) -> str:
    """``preferred`` (a circled letter, as ①–⑤ number the steps) where the application's font can draw it, else
    ``fallback``: DejaVu, the only font of many Linux desktops, has ①–⑤ but no circled letters (a box was drawn)."""
    from PySide6.QtGui import QFontMetrics, QGuiApplication

    app = QGuiApplication.instance()
    if not isinstance(app, QGuiApplication):
        return preferred
    return preferred if QFontMetrics(app.font()).inFontUcs4(ord(preferred)) else fallback


OPTIONAL_MAPS = {"capped": (("ⓒ", "∿"), "Capped = c·tanh(x / c)", "② ⟶ <b>c·tanh(x / c)</b>"),
                 "biased": (("ⓑ", "⊕"), "Biased (+ bias)", "⟶ <b>+ bias</b>")}
"""The optional step maps of the grid, in the order computed (the soft-cap, then the bias: ``OPTIONAL_STEPS``): their
mark (and its stand-in where the font lacks circled letters), the title when the library has none, and the arrow's
words when the model gives none."""


def with_marks(html: str) -> str:
    """The model's words (``app.playground.model.texts.OPTIONAL_MARKS``: "ⓒ ⟶ + bias") with each optional map's
    mark as this font draws it (its stand-in where the font lacks circled letters)."""
    for marks, _title, _arrow in OPTIONAL_MAPS.values():
        if marks[0] in html:
            html = html.replace(marks[0], mark(*marks))
    return html


def optional_title(name: str) -> str:
    marks, fallback, _ = OPTIONAL_MAPS[name]
    return f"{mark(*marks)} {STEP_TITLES.get(name, fallback)}"


def column_choices(count: int) -> tuple[int, ...]:
    """One row, the reading layout (3 for five or six maps: 3 + 2, 3 + 3; half of more), two to a row."""
    reading = 3 if count <= 6 else math.ceil(count / 2)
    return tuple(dict.fromkeys((count, reading, 2)))


def best_columns(width: int, height: int, shape: tuple[int, int] = (1, 1), extra: int = 0,
                 count: int = len(STEP_VIEWS)) -> int:
    """The number of maps per row that gives the cells the most room: one row when the view is wide and short,
    the 3 + 2 grid on most screens, 2 + 2 + 1 when it is tall and narrow. Only layouts whose maps keep their
    minimum size take part (3 always does: the view's minimum width is three maps); ``extra`` is the height each
    map's box adds (arrow line, caption); ``count`` the maps shown (more with the optional steps on)."""
    rows_n, cols_n = max(shape[0], 1), max(shape[1], 1)
    choices = column_choices(count)
    reading = choices[1] if len(choices) > 1 else choices[0]

    def cell(columns: int) -> float:
        lines = math.ceil(count / columns)
        w, h = width / columns, height / lines
        if columns != reading and (w < MAP_MIN[0] or h < MAP_MIN[1] + extra):
            return -math.inf
        return min((w - MAP_CHROME_W) / cols_n, (h - extra) / rows_n)  # the side of a square cell that fits

    # the 3 + 2 grid is the reading layout the lessons show: leave it only for cells clearly (15 %) bigger
    return max(choices, key=lambda c: (cell(c) * (1.15 if c == reading else 1.0), c == reading))


def numbers_fit(hm: HeatmapWidget) -> bool:
    """Whether ``hm``'s cells are big enough for its numbers, by the rule its overlay paints them with
    (``app.widgets.heatmap.cells.fit_number_font``)."""
    vals = hm.values()
    if vals.size == 0:
        return True
    rect = hm.overlay.sceneBoundingRect()  # the cells themselves, as the overlay's paint maps them
    return hm.overlay.number_font(rect.width() / vals.shape[1], rect.height() / vals.shape[0]) is not None


def natural_height(label: QLabel) -> int:
    """The height ``label``'s words need at its box's width, whatever minimum height it has now."""
    if not label.text():
        return 0
    kept = label.minimumHeight()
    label.setMinimumHeight(0)
    parent = label.parentWidget()
    height = label.heightForWidth(max(parent.width() if parent is not None else 0, 1))
    label.setMinimumHeight(kept)
    return height




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
