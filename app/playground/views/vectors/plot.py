"""The Vector view's picture: queries and keys as arrows from the origin in a pyqtgraph plot, drawn from a
``VectorSpace`` (model.py beside it) and nothing else. The window's view (``view.VectorView``) and its export
both draw through ``VectorPlot.draw``; the interaction lives in the view.

Arrow heads are ``pg.ArrowItem`` in pixel mode (the same size at any zoom); the aspect ratio is locked, so an
angle on screen is the angle in the plane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt

from app.playground.views.vectors.model import VectorSpace
from app.widgets.theme import ThemeColors, colors_for, follow_theme, style_plot, style_view


@dataclass
class DrawOptions:
    values: bool = False
    thickness: bool = True


@dataclass
class Arrow:
    kind: str  # "q", "k", "v" or "out"
    index: int
    tip: np.ndarray
    line: Any
    head: Any
    label: Any


class VectorPlot(pg.PlotWidget):
    """The arrows; ``arrows`` lists what is drawn (tests and hit-testing read it)."""

    def __init__(self, parent: Any = None, view_box: Any = None, dark: bool | None = None) -> None:
        """``dark``: None follows the application's theme; True or False is fixed (a plot made for a file)."""
        super().__init__(parent, viewBox=view_box)
        self.plot_item = self.getPlotItem()
        self.plot_item.setAspectLocked(True)
        self.plot_item.showGrid(x=True, y=True, alpha=0.25)
        self.plot_item.setMenuEnabled(False)
        self.plot_item.hideButtons()
        for axis in ("bottom", "left"):
            self.plot_item.getAxis(axis).enableAutoSIPrefix(False)  # a "(x0.001)" on an axis reads as a unit
        self.colors: ThemeColors = colors_for(bool(dark))
        self.arrows: list[Arrow] = []
        self._extra: list[Any] = []
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(self.colors)

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        style_view(self, self.colors)
        style_plot(self.plot_item, self.colors)

    def kind_color(self, kind: str) -> str:
        c = self.colors
        return {"q": c.blue, "k": c.orange, "v": c.good, "out": c.magenta}[kind]

    def draw(self, space: VectorSpace, options: DrawOptions, hovered: tuple[str, int] | None = None) -> None:
        """Everything again, from ``space`` (cheap: a handful of items)."""
        for item in [*(x for a in self.arrows for x in (a.line, a.head, a.label)), *self._extra]:
            self.plot_item.removeItem(item)
        self.arrows, self._extra = [], []
        c = self.colors
        w = space.weights
        sel = space.selected
        bottom, left = space.axis_labels
        if options.values:  # V shares the axes, not the space: say which of its coordinates they are
            v_axes = ("v0", "v1") if space.values.exact else ("V's PC1", "V's PC2")
            bottom, left = f"{bottom}; {v_axes[0]} for values", f"{left}; {v_axes[1]} for values"
        self.plot_item.setLabel("bottom", bottom)
        self.plot_item.setLabel("left", left)
        # the selected query's projection onto each key: dashed drop from the query's tip to the key's line
        q_tip = space.queries[sel]
        for foot in space.feet:
            self._add_extra(pg.PlotDataItem([q_tip[0], foot[0]], [q_tip[1], foot[1]],
                                            pen=pg.mkPen(c.muted, width=1.2, style=Qt.PenStyle.DashLine)))
            self._add_extra(pg.PlotDataItem([0.0, foot[0]], [0.0, foot[1]],
                                            pen=pg.mkPen(c.blue, width=5, style=Qt.PenStyle.SolidLine)),
                            z=-1, opacity=0.25)
        for j, tip in enumerate(space.keys):
            text = space.key_tokens[j]
            if options.thickness and not space.weights_hidden:  # the weight as a band under the key, in its label
                self._add_extra(pg.PlotDataItem([0.0, float(tip[0])], [0.0, float(tip[1])],
                                                pen=pg.mkPen(c.orange, width=1.0 + 16.0 * float(w[j]))),
                                z=0.5, opacity=0.3)
                text += f" ({float(w[j]):.0%})"
            self._arrow("k", j, tip, text, 2.0, hovered)
        for i, tip in enumerate(space.queries):
            self._arrow("q", i, tip, space.query_tokens[i], 2.6 if i == sel else 1.6, hovered, bold=i == sel)
        if options.values:
            for j, tip in enumerate(space.value_tips):
                self._arrow("v", j, tip, f"v {space.key_tokens[j]}", 1.4, hovered, dash=True)
            if not (space.output_hidden or space.weights_hidden):  # where it lands gives them away
                self._arrow("out", sel, space.output_tip, f"output {space.query_tokens[sel]}", 2.4, hovered)
        self._add_extra(pg.ScatterPlotItem([0.0], [0.0], size=6, brush=pg.mkBrush(c.text), pen=None))

    def fit(self) -> None:
        """Show the origin and every tip, with room for the labels."""
        tips = np.asarray([np.zeros(2), *(a.tip for a in self.arrows)])
        lo, hi = tips.min(axis=0), tips.max(axis=0)
        pad = max(float((hi - lo).max()), 1e-9) * 0.18
        self.plot_item.setRange(xRange=(lo[0] - pad, hi[0] + 2 * pad), yRange=(lo[1] - pad, hi[1] + pad), padding=0)

    def tip_pixels(self) -> list[tuple[Arrow, QPointF]]:
        """Each arrow with its tip in the widget's pixel coordinates."""
        vb = self.plot_item.getViewBox()
        return [(a, self.mapFromScene(vb.mapViewToScene(QPointF(float(a.tip[0]), float(a.tip[1])))))
                for a in self.arrows]

    def data_at(self, pixel: QPointF) -> np.ndarray:
        """The plane coordinates under a widget pixel."""
        p = self.plot_item.getViewBox().mapSceneToView(self.mapToScene(pixel.toPoint()))
        return np.array([p.x(), p.y()])

    # ------------------------------------------------------------------ internals
    def _add_extra(self, item: Any, z: float = 0.0, opacity: float = 1.0) -> None:
        item.setZValue(z)
        item.setOpacity(opacity)
        self.plot_item.addItem(item)
        self._extra.append(item)

    def _arrow(self, kind: str, index: int, tip: np.ndarray, text: str, width: float,
               hovered: tuple[str, int] | None, bold: bool = False, dash: bool = False) -> None:
        color = self.kind_color(kind)
        hot = hovered == (kind, index)
        style = Qt.PenStyle.DashLine if dash else Qt.PenStyle.SolidLine
        line = pg.PlotDataItem([0.0, float(tip[0])], [0.0, float(tip[1])],
                               pen=pg.mkPen(color, width=width + (1.5 if hot else 0.0), style=style))
        length = math.hypot(float(tip[0]), float(tip[1]))
        angle = 180.0 - math.degrees(math.atan2(float(tip[1]), float(tip[0])))  # ArrowItem: 0 points left
        head = pg.ArrowItem(pos=(float(tip[0]), float(tip[1])), angle=angle, headLen=14 if hot else 11,
                            tipAngle=32, brush=pg.mkBrush(color), pen=pg.mkPen(color))
        head.setVisible(length > 0)
        weight = "bold" if bold or hot else "normal"
        label = pg.TextItem(html=f"<span style='color:{color}; font-weight:{weight}'>{_esc(text)}</span>",
                            anchor=_anchor(tip, kind))
        label.setPos(float(tip[0]), float(tip[1]))
        z = {"k": 2, "q": 3, "v": 1, "out": 4}[kind]
        for item in (line, head, label):
            item.setZValue(z + (5 if hot else 0))
            self.plot_item.addItem(item)
        self.arrows.append(Arrow(kind, index, np.asarray(tip, dtype=np.float64), line, head, label))


def _anchor(tip: np.ndarray, kind: str) -> tuple[float, float]:
    """A label beside its arrow's tip, on the outer side; keys above the tip and queries below it, so a query
    equal to a key (lesson 004's 'it' and 'animal') keeps both labels readable."""
    x = float(tip[0])
    return (0.0 if x >= 0 else 1.0, 1.0 if kind in ("k", "v") else 0.0)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
