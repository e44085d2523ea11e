"""One labelled heatmap: token labels on both axes, numbers in cells, a fixed colour bar, blocked cells hatched.

Used for every step of the pipeline, the multi-head view and the training panel's head grid, and (through
``write_heatmap_file``, which ``app.widgets.file_export`` calls) for exported files, so what you export is what you saw.
The widget lays things out; its parts live beside it: ``cells`` (the numbers, hatching and highlights painted over
the cells), ``style`` (colour maps, levels, theme), ``axes`` (labels and row sums), ``pointer`` (the mouse and
keys), ``title`` (the title over the cells), ``export`` (menu and dialog); files are written by
``app.widgets.rendering``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtWidgets import QGraphicsItem, QMenu, QVBoxLayout, QWidget

from app.widgets.heatmap import file as heatmap_file
from app.widgets.heatmap.axes import update_row_sums, update_ticks
from app.widgets.heatmap.cells import CellOverlay
from app.widgets.heatmap.export import ask_export_path, export_menu, heatmap_export_button, suggested_filename
from app.widgets.heatmap.image import MapImage
from app.widgets.heatmap.plot import MapColorBar, MapPlot
from app.widgets.heatmap.pointer import PointerAndKeys
from app.widgets.heatmap.style import (
    KINDS,
    apply_plot_theme,
    colormap,
    let_title_overflow,
    levels_for,
    show_range_note,
    text_scale,
)
from app.widgets.heatmap.title import MapTitle
from app.widgets.theme import AXES, ThemeColors, colors_for, follow_theme

__all__ = ["HeatmapWidget", "write_heatmap_file"]


class HeatmapWidget(PointerAndKeys, MapTitle, QWidget):
    """A matrix as a labelled heatmap. ``values()`` returns exactly the array shown (tests compare it).

    Signals: ``cellHovered(row, col)`` ((-1, -1) when the pointer leaves the cells) and ``cellClicked(row,
    col)`` (left click, or Enter/arrow keys when the widget has focus). Right-click offers Export PNG/SVG/CSV.
    """

    cellHovered = Signal(int, int)
    cellClicked = Signal(int, int)
    doubleClicked = Signal()
    """A left double-click on the map (presentation mode shows the map alone: ``app.shell.presentation``)."""
    exported = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, title: str = "", dark: bool | None = None,
                 context_menu: bool = True) -> None:
        """``dark``: None follows the application's theme (``follow_theme``); True or False is fixed (a map made
        for a file is light)."""
        super().__init__(parent)
        self._values = np.zeros((0, 0))
        self._row_labels: list[str] = []
        self._col_labels: list[str] = []
        self._blocked: np.ndarray | None = None
        self._kind = "signed"
        self._title = title
        self._drawn_title: tuple[str, float, bool] | None = None  # what the title label shows (text, pt, dark)
        self._colorbar_width: tuple[float, float, float] | None = None  # the colour bar's own, while it is hidden
        self._row_title = ""
        self._col_title = ""
        self._row_sums = False
        self._tick_pts: tuple[float, float] | None = None  # the key and query labels' sizes (``update_ticks``)
        self._levels: tuple[float, float] | None = None
        self._range_note = ""
        self._stride_r = 1
        self._tick_size: tuple[int, int] | None = None
        self._hover = (-1, -1)
        self._current: tuple[int, int] | None = None
        self._dark = bool(dark)
        self._themed: bool | None = None  # the theme the plot was last styled for
        self.export_dir = ""  # where the export dialog starts; the window sets it from the settings
        self._on_screen = context_menu  # False: a widget made to render a file (``write_heatmap_file``)
        self.export_extras: Callable[[], dict[str, Any]] | None = None
        """Keyword overrides for ``write_heatmap_file`` at export time (``title``, ``context``, ``colorbar_label``):
        the view that owns the map knows the setting a file must name (``app.widgets.export_button``)."""

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        layout.addWidget(self.graphics)
        self.plot = MapPlot()  # a PlotItem's layout without its menus (app/widgets/heatmap/plot.py)
        self.graphics.addItem(self.plot)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.invertY(True)
        self.plot.showAxis("right")
        self.plot.getAxis("right").setStyle(showValues=False)
        vb = self.plot.getViewBox()
        vb.setDefaultPadding(0.0)
        vb.enableAutoRange(enable=False)
        self.image = MapImage(axisOrder="row-major")  # its colours in one numpy lookup (app/widgets/heatmap/image.py)
        self.plot.addItem(self.image)
        self.overlay = CellOverlay()
        self.plot.addItem(self.overlay)
        self.colorbar = MapColorBar(values=(-1.0, 1.0), colorMap=colormap("signed"), width=14)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        for name in AXES:
            self.plot.getAxis(name).setStyle(tickLength=0, autoExpandTextSpace=True, hideOverlappingLabels=True)
        self.plot.getAxis("right").setStyle(tickLength=0)
        for name in ("left", "bottom"):  # no matrix yet: no numbers along its sides (0.1 … 0.9 meant nothing)
            self.plot.getAxis(name).setTicks([[]])
        # an edit repaints the cells, and the axes beside them with them; their labels rarely change, so on screen
        # they paint from a pixmap (pyqtgraph's update() on a new tick or pen refreshes it): ~15-20 % of an edit's
        # repaint at 16 x 64 in alternating runs (benchmarks/bench_gui_edit.py). Not in the widgets made for a file
        # (context_menu False): an SVG or PDF would get the axes' text as a bitmap
        if context_menu:
            for axis in (*(self.plot.getAxis(n) for n in ("left", "bottom", "right", "top")),
                         self.colorbar.getAxis("left"), self.colorbar.getAxis("right")):
                axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        vb.sigResized.connect(self._on_view_resized)
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.graphics.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        if context_menu:
            self.graphics.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            self.graphics.customContextMenuRequested.connect(self._show_context_menu)
        let_title_overflow(self.plot.titleLabel)
        if dark is None:
            follow_theme(self._restyle)
        else:
            self._restyle(colors_for(dark))
        if title:
            self.set_title(title)
        self.export_button = heatmap_export_button(self) if context_menu else None

    # ---------------------------------------------------------------- data
    def set_data(self, values: Any, row_labels: Sequence[str], col_labels: Sequence[str], *,
                 blocked: Any = None, kind: str = "signed", title: str = "", row_title: str | None = None,
                 col_title: str | None = None, row_sums: bool | None = None,
                 levels: tuple[float, float] | None = None) -> None:
        """Show ``values`` (rows x cols). ``blocked``: optional bool array, True = blocked cell (hatched).

        ``kind="weights"`` fixes levels to [0, 1] and shows row sums on the right; ``"signed"`` uses
        symmetric levels around 0. ``levels``: the colour range a model decided (the Steps view's shared,
        stable ranges); None: ``levels_for`` this map alone. Cheap enough to call on every edit.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        vals = np.asarray(values, dtype=np.float64)
        if vals.ndim != 2:
            raise ValueError(f"values: expected a 2-D array, got shape {vals.shape}")
        rows, cols = vals.shape
        if len(row_labels) != rows or len(col_labels) != cols:
            raise ValueError(f"labels: {len(row_labels)} row and {len(col_labels)} column labels for a "
                             f"{rows}x{cols} matrix")
        blk = None
        if blocked is not None:
            blk = np.asarray(blocked, dtype=bool)
            if blk.shape != vals.shape:
                blk = np.broadcast_to(blk, vals.shape)
            if not blk.any():
                blk = None
        shape_changed = vals.shape != self._values.shape
        self._values = vals.copy()
        self._blocked = None if blk is None else blk.copy()
        if kind != self._kind:
            self._kind = kind
            self.colorbar.setColorMap(colormap(kind))
        levels = levels_for(vals, kind) if levels is None else (float(levels[0]), float(levels[1]))
        if levels != self._levels:
            self._levels = levels
            self.colorbar.setLevels(values=levels)
        img = np.where(np.isfinite(vals), vals, 0.0)
        self.image.setImage(img, autoLevels=False, levels=levels)
        self.image.setRect(QRectF(0, 0, cols, rows))
        if shape_changed:
            self.plot.getViewBox().setRange(xRange=(0, max(cols, 1)), yRange=(0, max(rows, 1)), padding=0)
            self._current = None
        self.overlay.set_content(self._values, img, levels, kind, self._blocked)
        labels_changed = list(row_labels) != self._row_labels or list(col_labels) != self._col_labels
        rs = (kind == "weights") if row_sums is None else row_sums
        if labels_changed or shape_changed or rs != self._row_sums:
            self._row_labels = [str(s) for s in row_labels]
            self._col_labels = [str(s) for s in col_labels]
            self._row_sums = rs
            self._update_ticks()
        if rs:
            self._update_row_sums()
        if title and title != self._title:
            self.set_title(title)
        if row_title is not None and row_title != self._row_title:
            self._row_title = row_title
            self.plot.setLabel("left", row_title)
        if col_title is not None and col_title != self._col_title:
            self._col_title = col_title
            self.plot.setLabel("bottom", col_title)

    def values(self) -> np.ndarray:
        """The array currently displayed (a copy)."""
        return self._values.copy()

    def row_labels(self) -> list[str]:
        return list(self._row_labels)

    def col_labels(self) -> list[str]:
        return list(self._col_labels)

    def blocked(self) -> np.ndarray | None:
        return None if self._blocked is None else self._blocked.copy()

    def kind(self) -> str:
        return self._kind

    def title(self) -> str:
        return self._title

    def levels(self) -> tuple[float, float]:
        return self._levels or (0.0, 1.0)

    def range_note(self) -> str:
        return self._range_note

    def set_range_note(self, note: str) -> None:
        """The words along the colour bar about its range ("shared ①②③ ±2", "⚠ range changed")."""
        if note != self._range_note:
            self._range_note = note
            show_range_note(self.colorbar, note, self._dark)

    def set_colorbar_shown(self, shown: bool) -> bool:
        """Show or drop the colour bar, giving its width to the cells. Maps that share one range side by side
        need it once: ``PipelineView`` keeps it on the last of them in each row. True when it changed (the
        cells' size changes once laid out)."""
        cb = self.colorbar
        if cb.isVisible() == shown and self._colorbar_width is not None:
            return False
        if self._colorbar_width is None:
            self._colorbar_width = (cb.minimumWidth(), cb.maximumWidth(), self.plot.layout.columnMinimumWidth(4))
        lo, hi, gap = self._colorbar_width
        cb.setVisible(shown)
        cb.setMinimumWidth(lo if shown else 0)
        cb.setMaximumWidth(hi if shown else 0)
        self.plot.layout.setColumnFixedWidth(4, gap if shown else 0)
        return True

    def set_column_groups(self, n: int) -> None:
        """Draw separators between ``n`` equal column groups (heads)."""
        self.overlay.col_groups = max(1, int(n))
        self.overlay.update()

    def set_show_numbers(self, show: bool) -> None:
        self.overlay.show_numbers = bool(show)
        self.overlay.update()

    # ---------------------------------------------------------------- highlight
    def set_highlight(self, rows: Sequence[int] = (), cols: Sequence[int] = (),
                      cells: Sequence[tuple[int, int]] = ()) -> None:
        """Outline rows, columns or cells (the explain panel uses this to show where a number comes from)."""
        new = (tuple(rows), tuple(cols), tuple(cells))
        old = (self.overlay.highlight_rows, self.overlay.highlight_cols, self.overlay.highlight_cells)
        if new != old:
            self.overlay.highlight_rows, self.overlay.highlight_cols, self.overlay.highlight_cells = new
            self.overlay.update()

    def set_selected(self, cell: tuple[int, int] | None) -> None:
        if cell != self.overlay.selected:
            self.overlay.selected = cell
            self.overlay.update()

    @property
    def paint_count(self) -> int:
        """How many times the cells were painted (the benchmark waits on it)."""
        return self.overlay.paint_count

    # ---------------------------------------------------------------- theme
    def _restyle(self, c: ThemeColors) -> None:
        dark = c.dark
        if dark == self._themed:
            return
        self._themed = self._dark = dark
        apply_plot_theme(self.graphics, self.plot, self.colorbar, dark)
        if self._title:
            self.set_title(self._title)
        if self._range_note:
            show_range_note(self.colorbar, self._range_note, dark)
        if self._row_title:
            self.plot.setLabel("left", self._row_title)
        if self._col_title:
            self.plot.setLabel("bottom", self._col_title)

    # ---------------------------------------------------------------- ticks
    def _update_ticks(self) -> None:
        *pts, self._stride_r = update_ticks(self.plot, self._row_labels, self._col_labels, self._row_sums,
                                            self.overlay.text_scale, self._tick_pts, self.graphics.height())
        self._tick_pts = (pts[0], pts[1])

    def _update_row_sums(self) -> None:
        update_row_sums(self.plot, self._values, self._blocked, self._stride_r)

    def refresh_labels(self) -> None:
        """Lay the axis labels and row sums out again for the current size (``app.widgets.rendering`` calls it before
        rendering a file, once the widget has its final size)."""
        scale = text_scale(self.font().pointSizeF())
        if scale != self.overlay.text_scale:  # the zoom changed: the numbers follow it
            self.overlay.text_scale = scale
            self.overlay.update()
        self._draw_title()
        if self._row_labels or self._col_labels:
            self._update_ticks()
            if self._row_sums:
                self._update_row_sums()

    def _on_view_resized(self, *_args: Any) -> None:
        """Tick strides and the title's room follow the cells' size and place, known once the plot is laid out."""
        size = (round(self.plot.getViewBox().width()), round(self.plot.getViewBox().height()))
        if size != self._tick_size and (self._row_labels or self._col_labels):
            self._tick_size = size
            self.refresh_labels()
        else:
            self._draw_title()

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self.refresh_labels()  # (the title too)

    def changeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "overlay"):  # the zoom (a style sheet's font)
            self.refresh_labels()

    # ---------------------------------------------------------------- export
    def context_menu(self) -> QMenu:
        """The right-click menu (built on demand; tests trigger its actions)."""
        return export_menu(self, self.export_dialog)

    def _show_context_menu(self, pos: Any) -> None:
        if self._values.size == 0:
            return
        self.context_menu().exec(self.graphics.mapToGlobal(pos))

    def suggested_filename(self, fmt: str) -> str:
        return suggested_filename(self._title, fmt)

    def export_dialog(self, fmt: str) -> str | None:
        """Ask for a file name and export; returns the path written (None if cancelled)."""
        path = ask_export_path(self, fmt, self._title, self.export_dir)
        if path is not None:
            self.export(path)
        return path

    def export(self, path: str | Path) -> None:
        """Write this heatmap's data as PNG, SVG, PDF or CSV (by suffix), as ``app.widgets.file_export.export_heatmap``
        does, titled with the context ``export_extras`` gives."""
        extras = dict(self.export_extras()) if self.export_extras is not None else {}
        write_heatmap_file(path, self._values, self._row_labels, self._col_labels,
                           extras.pop("title", None) or self._title or "heatmap", blocked=self._blocked,
                           kind=self._kind, row_title=self._row_title, col_title=self._col_title,
                           col_groups=self.overlay.col_groups, **extras)
        self.exported.emit(str(path))


def write_heatmap_file(path: str | Path, values: Any, row_labels: Sequence[str], col_labels: Sequence[str],
                       title: str, **options: Any) -> str:
    """Write one heatmap to ``path`` by suffix (``app.widgets.heatmap.file.write_heatmap_file``) with a fresh
    ``HeatmapWidget`` as the image; the implementation of ``app.widgets.file_export.export_heatmap``."""
    return heatmap_file.write_heatmap_file(path, values, row_labels, col_labels, title, widget_class=HeatmapWidget,
                                           **options)
