"""A heatmap's plot and colour bar, laid out as pyqtgraph's ``PlotItem`` and ``ColorBarItem`` lay theirs out, without
their menus.

Why: the first frame builds five step maps (launch within 1.6 x a bare pyqtgraph window). A ``PlotItem``
builds its "Plot Options" form (a Designer form of ~40 widgets) and its view box's menu whatever ``setMenuEnabled``
says afterwards, and a ``ColorBarItem`` is a whole ``PlotItem`` again: ~11 ms of the ~13 ms a map's items took,
for menus a heatmap never shows (its right-click menu is the export menu, ``app.widgets.heatmap.export``).
``MapPlot`` keeps the parts a map uses, with the same names (``getViewBox``, ``getAxis``, ``addItem``, ``setTitle``,
``setLabel``, ``showAxis``, ``titleLabel``, ``layout``) and the same grid; ``MapColorBar`` keeps
``ColorBarItem``'s (``setImageItem(insert_in=)``, ``setColorMap``, ``setLevels``, ``levels``, ``colorMap``) and
paints the same bar. The methods are written out rather than borrowed from ``PlotItem`` (``getAxis`` there goes
through private helpers such as ``_checkScaleKey``): each only reads what ``MapPlot`` lays out.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pyqtgraph as pg
from pyqtgraph import functions as fn
from PySide6.QtGui import QFontMetricsF, QImage, QPixmap
from PySide6.QtWidgets import QGraphicsGridLayout, QGraphicsItem, QGraphicsPixmapItem, QSizePolicy

AXIS_CELLS = {"top": (1, 1), "bottom": (3, 1), "left": (2, 0), "right": (2, 2)}
"""Where each axis sits in the plot's grid: the title in row 0, the view box at (2, 1), as ``PlotItem`` has it."""


class LevelAxis(pg.AxisItem):
    """The colour bar's levels: no more labels than its height holds.

    Why: pyqtgraph always draws its first level of ticks, whatever the room. A 40 px bar (the Model tab's picked head
    at 1024 x 640) drew 0, 0.2 … 1.0 on top of each other. Where the room is short this asks pyqtgraph for the
    coarser ticks of a shorter axis (0, 0.5, 1.0), then keeps the two ends, and below two lines' height no label."""

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:  # noqa: N802, N803
        levels = super().tickValues(minVal, maxVal, size)
        line = QFontMetricsF(self.style.get("tickFont") or self.font()).height() * 1.2
        if not levels or line <= 0:
            return levels
        room = int(size // line) + 1  # labels centre on their ticks: the two ends stand half out
        spacing, values = levels[0]
        if len(values) <= room:
            return levels  # (pyqtgraph draws the finer levels' labels only where they fit)
        for shrink in (0.5, 0.25, 0.1, 0.01):
            coarse = super().tickValues(minVal, maxVal, size * shrink)
            if coarse and 2 <= len(coarse[0][1]) <= room:
                return [coarse[0]]
        return [(spacing, [values[0], values[-1]] if room >= 2 else [])]


class MapPlot(pg.GraphicsWidget):
    """A view box with four axes (left and bottom shown) and a hidden title, in ``PlotItem``'s grid."""

    def __init__(self, parent: Any = None, axis_types: dict[str, type[pg.AxisItem]] | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.layout = layout = QGraphicsGridLayout()
        layout.setContentsMargins(1, 1, 1, 1)
        layout.setHorizontalSpacing(0)
        layout.setVerticalSpacing(0)
        self.setLayout(layout)
        self.vb = pg.ViewBox(parent=self, enableMenu=False)
        layout.addItem(self.vb, 2, 1)
        self.axes: dict[str, dict[str, Any]] = {}
        for name, cell in AXIS_CELLS.items():
            axis = (axis_types or {}).get(name, pg.AxisItem)(orientation=name, parent=self)
            # no SI prefix: the axes show token labels and the colour bar its levels as they are, and a prefixed
            # axis writes its title's HTML again on every change of range (~90 QGraphicsTextItem.setHtml a map)
            axis.autoSIPrefix = False
            axis.linkToView(self.vb)
            self.axes[name] = {"item": axis, "pos": cell}
            layout.addItem(axis, *cell)
            axis.setZValue(0.5)  # above the image (z 0), below what draws over the axes (z >= 1)
            axis.setFlag(QGraphicsItem.GraphicsItemFlag.ItemNegativeZStacksBehindParent)
            axis.setVisible(name in ("left", "bottom"))
        self.titleLabel = pg.LabelItem("", size="11pt", parent=self)
        layout.addItem(self.titleLabel, 0, 1)
        self.setTitle(None)
        for i in range(4):
            layout.setRowPreferredHeight(i, 0)
            layout.setRowMinimumHeight(i, 0)
            layout.setRowSpacing(i, 0)
            layout.setRowStretchFactor(i, 1)
        for i in range(3):
            layout.setColumnPreferredWidth(i, 0)
            layout.setColumnMinimumWidth(i, 0)
            layout.setColumnSpacing(i, 0)
            layout.setColumnStretchFactor(i, 1)
        layout.setRowStretchFactor(2, 100)
        layout.setColumnStretchFactor(1, 100)

    def getViewBox(self) -> pg.ViewBox:  # noqa: N802 (pyqtgraph's names)
        return self.vb

    def getAxis(self, name: str) -> pg.AxisItem:  # noqa: N802
        return self.axes[name]["item"]

    def addItem(self, item: Any) -> None:  # noqa: N802
        self.vb.addItem(item)

    def showAxis(self, name: str, show: bool = True) -> None:  # noqa: N802
        self.getAxis(name).setVisible(show)

    def hideAxis(self, name: str) -> None:  # noqa: N802
        self.showAxis(name, False)

    def setLabel(self, name: str, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        self.getAxis(name).setLabel(*args, **kwargs)
        self.showAxis(name)

    def setTitle(self, title: str | None = None, **args: Any) -> None:  # noqa: N802
        """As ``PlotItem.setTitle``: None hides the title's row."""
        if title is None:
            self.titleLabel.setVisible(False)
            self.layout.setRowFixedHeight(0, 0)
            self.titleLabel.setMaximumHeight(0)
        else:
            self.titleLabel.setMaximumHeight(30)
            self.layout.setRowFixedHeight(0, 30)
            self.titleLabel.setVisible(True)
            self.titleLabel.setText(title, **args)

    def invertY(self, invert: bool = True) -> None:  # noqa: N802
        self.vb.invertY(invert)

    def setMouseEnabled(self, x: bool | None = None, y: bool | None = None) -> None:  # noqa: N802
        self.vb.setMouseEnabled(x=x, y=y)


class MapColorBar(MapPlot):
    """A vertical colour bar: the colour map's 256 colours from the low level (bottom) to the high one (top), the
    levels on the right axis; the other three axes frame it (the left one carries its label or range note)."""

    def __init__(self, values: tuple[float, float] = (0.0, 1.0), colorMap: Any = None,  # noqa: N803
                 width: float = 25) -> None:
        super().__init__(axis_types={"right": LevelAxis})
        self.values = (float(values[0]), float(values[1]))
        self._colorMap: Any = None
        self.img_list: list[weakref.ref[Any]] = []
        self.vb.setMouseEnabled(x=False, y=False)
        self.vb.enableAutoRange(enable=False)
        self.vb.setRange(xRange=(0, 1), yRange=(0, 256), padding=0)
        self.layout.setColumnFixedWidth(1, width)
        for name in AXIS_CELLS:
            axis = self.getAxis(name)
            axis.setVisible(True)
            axis.setZValue(0.5)
            if name != "right":  # a frame around the bar
                axis.setTicks([])
                axis.setStyle(showValues=False)
        self.axis = self.getAxis("right")
        self.axis.setWidth(45)
        self.axis.unlinkFromView()
        self.axis.setRange(*self.values)
        self.bar = QGraphicsPixmapItem()
        self.bar.setShapeMode(QGraphicsPixmapItem.ShapeMode.BoundingRectShape)
        self.addItem(self.bar)
        if colorMap is not None:
            self.setColorMap(colorMap)

    def setImageItem(self, img: Any, insert_in: MapPlot | None = None) -> None:  # noqa: N802
        """Colour ``img`` with this bar's map and levels; ``insert_in``: stand right of that plot's right axis."""
        self.img_list = [weakref.ref(img)]
        if insert_in is not None:
            insert_in.layout.addItem(self, 2, 5)
            insert_in.layout.setColumnFixedWidth(4, 5)  # a little room after the plot's right axis
        self._update_items(update_cmap=True)

    def setColorMap(self, colorMap: Any) -> None:  # noqa: N802, N803
        self._colorMap = colorMap
        self._update_items(update_cmap=True)

    def colorMap(self) -> Any:  # noqa: N802
        return self._colorMap

    def setLevels(self, values: tuple[float, float]) -> None:  # noqa: N802
        self.values = (float(values[0]), float(values[1]))
        self._update_items()

    def levels(self) -> tuple[float, float]:
        return self.values

    def _update_items(self, update_cmap: bool = False) -> None:
        self.axis.setRange(*self.values)
        if update_cmap and self._colorMap is not None:
            lut = np.expand_dims(self._colorMap.getLookupTable(nPts=256, alpha=True), axis=1)
            # a copy: the QImage wraps ``lut``'s memory, which is freed when this method returns
            self.bar.setPixmap(QPixmap.fromImage(fn.ndarray_to_qimage(lut, QImage.Format.Format_RGBA8888).copy()))
        for ref in self.img_list:
            img = ref()
            if img is not None:
                img.setLevels(self.values)
                if update_cmap and self._colorMap is not None:
                    img.setColorMap(self._colorMap)
