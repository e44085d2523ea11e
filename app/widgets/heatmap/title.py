"""A heatmap's title: in the widget's font size times ``TITLE_SCALE``, elided ("…") to the room centred over the
cells, the full title in the tooltip. A mixin of ``HeatmapWidget`` (before ``QWidget`` in its bases), like
``pointer``'s: it reads the widget's ``plot``, ``graphics``, ``_title``, ``_dark`` and ``_on_screen`` and keeps
``_drawn_title`` so an unchanged title is not set again (setting it lays the plot out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QFont

from app.widgets.heatmap.style import elided_title, title_color

if TYPE_CHECKING:  # a mixin of HeatmapWidget (a QWidget): the type checker sees the widget it is mixed into
    from PySide6.QtWidgets import QWidget as _Widget
else:
    _Widget = object


class MapTitle(_Widget):
    """The title of ``HeatmapWidget`` (see the module docstring)."""

    plot: Any
    graphics: Any
    _title: str
    _dark: bool
    _on_screen: bool
    _drawn_title: tuple[str, float, bool] | None

    def set_title(self, title: str) -> None:
        self._title = title
        self._drawn_title = None
        self._draw_title()

    TITLE_SCALE = 1.1
    """A map's title is 1.1 × the widget's font: 11 pt at the theme's 10 pt, and larger with the zoom (Ctrl+=,
    presentation mode), like the labels and numbers."""

    def _draw_title(self) -> None:
        """The title in the current font size, elided ("…") to the map's width, the full one in the tooltip: a
        centred title wider than a narrow map overflowed both edges ("ayer 2 · head 4, per output ste")."""
        if not self._title:
            return
        pt = self.TITLE_SCALE * (self.font().pointSizeF() if self.font().pointSizeF() > 0 else 10.0)
        font = QFont(self.font())
        font.setPointSizeF(pt)
        width = self._title_room()
        rich = "<" in self._title  # an export's two-line title: the figure is made wide enough for it
        text = self._title if rich else elided_title(self._title, font, width)
        key = (text, round(pt, 2), self._dark)
        if key == self._drawn_title:
            return
        self._drawn_title = key
        self.plot.setTitle(text, color=title_color(self._dark), size=f"{pt:.2f}pt")
        self.graphics.setToolTip(self._title if text != self._title else "")

    def _title_room(self) -> float:
        """The width a title centred over the cells may take (one elided to the widget's width ran past its edge)."""
        width = self.graphics.width()
        centre = self.plot.getViewBox().sceneBoundingRect().center().x()
        if not 0 < centre < width or not self._on_screen:  # not laid out yet; a file's figure fits its title
            centre = width / 2
        return 2 * min(centre, width - centre) - 12

