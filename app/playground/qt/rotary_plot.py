"""Why rotary attention is relative, as a picture: the score of one fixed q·k pair as the offset m − n moves.

One curve per frequency pair (its share of the score), their sum dashed, and a vertical line at the offset the pair
sits at now. Wherever the query and the key are, only m − n moves the curves: that is the whole claim of rotary
positions. The numbers are ``app.playground.model.rotary.RelativeCurves``; this draws them and computes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.playground.model.rotary import RelativeCurves
from app.widgets.theme import ThemeColors, colors_for, follow_theme, style_plot, style_view

MAX_KEY = 4
"""Pairs named in the key under the plot: the first (fastest) ones; the rest are coloured along the same hues."""


class RotaryPlot(pg.PlotWidget):
    """The relative-score plot. ``curves`` is what is drawn now (tests read it); ``items`` its plot items."""

    def __init__(self, parent: Any = None, dark: bool | None = None) -> None:
        super().__init__(parent)
        self.plot_item = self.getPlotItem()
        self.plot_item.setMenuEnabled(False)
        self.plot_item.hideButtons()
        self.plot_item.setMouseEnabled(x=False, y=False)
        self.plot_item.showGrid(x=True, y=True, alpha=0.2)
        self.plot_item.setLabel("bottom", "offset m − n")
        self.plot_item.setLabel("left", "score")
        for axis in ("bottom", "left"):
            self.plot_item.getAxis(axis).enableAutoSIPrefix(False)
        self.setMinimumSize(120, 90)
        self.colors: ThemeColors = colors_for(bool(dark))
        self.curves: RelativeCurves | None = None
        self.items: list[Any] = []
        self.key_html = ""
        self._title = ""
        """Which colour is which pair (rich text, for a label under the plot: a legend inside covered the curves)."""
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(self.colors)

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        style_view(self, c)
        style_plot(self.plot_item, c)
        if self.curves is not None:
            self.draw(self.curves, self._title, restyle=True)

    def pair_color(self, p: int, n: int) -> Any:
        """Pair ``p`` of ``n``: hues from the fastest pair to the slowest, the same in both themes."""
        return pg.intColor(p, hues=max(n, 1), values=1, maxValue=230 if self.colors.dark else 190)

    def draw(self, curves: RelativeCurves, title: str = "", restyle: bool = False) -> None:
        """Draw ``curves``. The same pairs as before (an edit of a number): the curves' data is replaced in place,
        which costs a tenth of making the items again (an edit's budget); new pairs or a new theme: made again."""
        if curves is self.curves and not restyle:
            return
        old = self.curves
        if (not restyle and old is not None and title == self._title and old.offset == curves.offset
                and np.array_equal(old.per_pair, curves.per_pair) and np.array_equal(old.offsets, curves.offsets)):
            return  # an edit elsewhere: the plotted pair's curves are the same
        n = len(curves.labels)
        x = curves.offsets.astype(float)
        same = (not restyle and self.curves is not None and len(self.curves.labels) == n
                and len(self.items) == n + 2)
        self.curves = curves
        if same:
            for p in range(n):
                self.items[p].setData(x, curves.per_pair[p])
            self.items[n].setData(x, curves.total)
            self.items[n + 1].setPos(float(curves.offset))
        else:
            self.plot_item.clear()
            self.items = [self.plot_item.plot(x, curves.per_pair[p], pen=pg.mkPen(self.pair_color(p, n), width=1.6))
                          for p in range(n)]
            self.items.append(self.plot_item.plot(x, curves.total, pen=pg.mkPen(self.colors.text, width=2.0,
                                                                                 style=Qt.PenStyle.DashLine)))
            now = pg.InfiniteLine(pos=float(curves.offset), angle=90,
                                  pen=pg.mkPen(self.colors.magenta, width=1.2, style=Qt.PenStyle.DotLine))
            self.plot_item.addItem(now)
            self.items.append(now)
        keys = [f"<span style='color:{self.pair_color(p, n).name()}'>━ {label} θ={curves.thetas[p]:.3g}</span>"
                for p, label in enumerate(curves.labels[:MAX_KEY])]
        more = f" … {n - MAX_KEY} more" if n > MAX_KEY else ""
        self.key_html = "  ".join(keys) + more + f"  <span style='color:{self.colors.text}'>╍ sum (the score)</span>"
        if restyle or title != self._title:
            self._title = title
            self.plot_item.setTitle(title, size="8pt", color=self.colors.text)
