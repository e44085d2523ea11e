"""What a window shows, as a multiset of strings: the currency oracle's eyes (tests/shell/test_currency_oracle.py).

Every visible widget contributes what a user reads off it: labels, buttons (and whether they are checked or
enabled), line edits, combo boxes, spin boxes, progress bars, text views, every cell of every item view, tab
titles, tooltips, the status bar's message; every pyqtgraph scene contributes its text items, axis labels and
tick texts, the digest of every image and curve; every heatmap its title and its numbers as the app formats them.
Two windows in the same state must give the same multiset.

Timings are excluded by rule, not by case: durations (``12 ms``, ``3.4 s``, ``2 min``), rates (``140 steps/s``),
ETAs and clock times are replaced by a placeholder before comparing, wherever they appear.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QGraphicsTextItem,
    QGraphicsView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QStatusBar,
    QTabBar,
    QTextEdit,
    QWidget,
)

from app.widgets.heatmap.cells import format_value
from app.widgets.heatmap.view import HeatmapWidget

HEATMAP_TYPES = (HeatmapWidget,)

NOTES = re.compile(r"^scene\.text:(⚠ ra.*|shared ①.*|fixed 0.*|±\S+|0…1) ?$")  # whole or shortened to fit
"""A colour bar's note says what the last edit did to the range (an event, by design until the next edit) and is
shortened or left out to fit the bar: the range itself is compared through the map's levels instead."""

LAYOUT = re.compile(r" · too small for numbers: hover a cell")
"""Words that follow the map's size in pixels (a matter of layout, like thinned tick labels), not the state."""

TIMING = [
    (re.compile(r"ETA[^·|\n]*"), "ETA ‹t›"),
    (re.compile(r"\d+(?:[.,]\d+)?\s*(?:steps|it|runs|tokens|samples|frames)\s*/\s*s\b"), "‹rate›"),
    (re.compile(r"\d+(?:[.,]\d+)?\s*(?:µs|us|ms|sec|s|min|h)\b(?!\w)"), "‹t›"),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b"), "‹clock›"),
    (re.compile(r"elapsed[^·|\n]*"), "elapsed ‹t›"),
]
"""Timings: what changes with the clock and the machine's load, not with the state."""

MAX_CELLS = 4000  # an item view's cells read at most (a vocabulary list can be long: its head is enough)


def untimed(text: str) -> str:
    for pattern, repl in TIMING:
        text = pattern.sub(repl, text)
    return text


def digest(a: object) -> str:
    arr = np.asarray(a)
    if arr.dtype.kind == "f":
        arr = np.round(arr.astype(np.float64), 9)
    return hashlib.blake2b(np.ascontiguousarray(arr).tobytes() + str(arr.shape).encode(), digest_size=8).hexdigest()


def _shown(w: QWidget, root: QWidget) -> bool:
    return w.isVisible() and w.width() > 0 and w.height() > 0 and (w is root or root.isAncestorOf(w)
                                                                    or w.window() is not root.window())


def widget_texts(w: QWidget) -> Iterable[str]:
    kind = type(w).__name__
    if w.toolTip():
        yield f"{kind}.tip:{w.toolTip()}"
    if isinstance(w, QLabel):
        if w.text():
            yield f"{kind}:{w.text()}"
    elif isinstance(w, QAbstractButton):
        if not w.text():  # an icon (a tab bar's scroll arrow): where the layout ran out of room, not a state
            return
        state = ("✓" if w.isChecked() else "☐") if w.isCheckable() else ""
        yield f"{kind}:{w.text()}{state}{'' if w.isEnabled() else ' (off)'}"
    elif isinstance(w, QLineEdit):
        yield f"{kind}:{w.text()}|{w.placeholderText()}"
    elif isinstance(w, QComboBox):
        yield f"{kind}:{w.currentText()}"
    elif isinstance(w, QAbstractSpinBox):
        yield f"{kind}:{w.text()}{'' if w.isEnabled() else ' (off)'}"
    elif isinstance(w, QProgressBar):
        yield f"{kind}:{w.value()}/{w.maximum()} {w.text()}"
    elif isinstance(w, (QTextEdit, QPlainTextEdit)):
        yield f"{kind}:{w.toPlainText()}"
    elif isinstance(w, QStatusBar):
        yield f"{kind}:{w.currentMessage()}"
    elif isinstance(w, QTabBar):
        yield f"{kind}:" + " | ".join(w.tabText(i) for i in range(w.count())) + f" @{w.currentIndex()}"
    if isinstance(w, QAbstractItemView) and w.model() is not None:
        yield from _item_view(w)
    if isinstance(w, QGraphicsView) and w.scene() is not None:
        yield from _scene(w)
    values = getattr(w, "values", None)
    title = getattr(w, "title", None)
    if callable(values) and callable(title) and hasattr(w, "overlay"):  # a HeatmapView
        yield from _heatmap(w)


def _item_view(view: QAbstractItemView) -> Iterable[str]:
    m, n = view.model(), 0
    root = view.rootIndex()
    rows = m.rowCount(root)
    try:
        cols = m.columnCount(root)
    except TypeError:  # a list model keeps columnCount private: one column
        cols = 1
    heads = [str(m.headerData(c, pg.QtCore.Qt.Orientation.Horizontal)) for c in range(cols)]
    yield f"{type(view).__name__}.header:{'|'.join(heads)}"
    for r in range(rows):
        cells = []
        for c in range(cols):
            cells.append(str(m.data(m.index(r, c, root))))
            n += 1
        yield f"{type(view).__name__}.row:{'|'.join(cells)}"
        if n > MAX_CELLS:
            break


def _heatmap(hm: QWidget) -> Iterable[str]:
    title = hm.title()
    yield f"heatmap.title:{title}"
    vals = hm.values()
    if vals is None:
        return
    vals = np.asarray(vals)
    overlay = hm.overlay
    if getattr(overlay, "show_numbers", True) and vals.ndim == 2:
        yield f"heatmap.numbers:{title}:" + ";".join(",".join(format_value(v) for v in row) for row in vals.tolist())
    yield f"heatmap.values:{title}:{digest(vals)}"
    # its token labels as set, not its axes' ticks: those are thinned to fit the map's size (a matter of layout)
    yield f"heatmap.labels:{title}:{getattr(hm, '_row_labels', '')}:{getattr(hm, '_col_labels', '')}"
    levels = getattr(overlay, "_levels", None)
    if levels is not None:
        yield f"heatmap.levels:{title}:{tuple(round(float(x), 9) for x in levels)}"


def _in_legend(item) -> bool:
    p = item.parentItem()
    while p is not None:
        if isinstance(p, pg.LegendItem):
            return True
        p = p.parentItem()
    return False


def _scene(view: QGraphicsView) -> Iterable[str]:
    for item in view.scene().items():
        if not item.isVisible() or _in_legend(item):  # a legend's names: shortened to the plot's width
            continue
        if isinstance(item, pg.TextItem):
            yield f"scene.text:{item.textItem.toPlainText()}"
        elif isinstance(item, QGraphicsTextItem):
            if item.toPlainText():
                yield f"scene.text:{item.toPlainText()}"
        elif isinstance(item, pg.LabelItem):
            if item.text:
                yield f"scene.label:{item.text}"
        elif isinstance(item, pg.AxisItem):
            ticks = getattr(item, "_tickLevels", None)
            if ticks and not isinstance(view.parent(), HEATMAP_TYPES):  # a heatmap's labels: from the heatmap
                yield f"axis.ticks:{item.orientation}:" + "|".join(str(s) for level in ticks for _, s in level)
        elif isinstance(item, pg.ImageItem):
            if item.image is not None:
                yield f"scene.image:{digest(item.image)}"
        elif isinstance(item, pg.PlotDataItem):
            x, y = item.getData()
            if x is not None and len(x):
                yield f"scene.curve:{item.name()}:{digest(x)}:{digest(y)}"
        elif isinstance(item, (pg.ScatterPlotItem, pg.BarGraphItem)):
            data = getattr(item, "data", None)
            if data is not None and hasattr(data, "dtype") and data.dtype.names and "x" in data.dtype.names:
                yield f"scene.points:{digest(data['x'])}:{digest(data['y'])}"


def harvest(root: QWidget, skip: Iterable[QWidget] = ()) -> Counter[str]:
    """Everything ``root`` shows now (its visible descendants, itself, and its floating children)."""
    skipped = list(skip)
    out: Counter[str] = Counter()
    for w in [root, *root.findChildren(QWidget)]:
        if not _shown(w, root) or any(s is w or s.isAncestorOf(w) for s in skipped):
            continue
        for text in widget_texts(w):
            text = LAYOUT.sub("", untimed(text))
            if not NOTES.match(text):
                out[text] += 1
    return out


def difference(live: Counter[str], fresh: Counter[str], limit: int = 12) -> str:
    """What one shows and the other does not, both ways, readable; empty when they agree."""
    stale, missing = live - fresh, fresh - live
    if not stale and not missing:
        return ""
    lines = ["shown by the live window, not by a fresh one in the same state:"]
    lines += [f"  {t[:300]!r} ×{n}" for t, n in list(stale.items())[:limit]]
    lines += ["shown by the fresh window, not by the live one:"]
    lines += [f"  {t[:300]!r} ×{n}" for t, n in list(missing.items())[:limit]]
    return "\n".join(lines)
