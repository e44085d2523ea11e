"""A heatmap's way out to a file: the right-click menu, the file dialog, the suggested file name, and the image.

``HeatmapWidget.export`` (a heatmap's own export) and ``app.widgets.file_export.export_heatmap`` (scripts,
the CLI) both end in ``app.widgets.heatmap.file.write_heatmap_image``, so what you export from the menu is what a script
exports: a title that says what the map is and in which setting (``app.common.titles.ExportContext``), no "①" step
numbers (they mean something only next to the other steps), a labelled colour bar.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from app.common.titles import ExportContext, plain_title
from app.widgets.export_button import (
    HEATMAP_FORMATS,
    CornerButton,
    add_format_actions,
    attach_export_button,
    export_with_dialog,
)
from app.widgets.settings import dialog_dir, remember_dialog_path

MENU_ITEMS = (("png", "Export PNG image…"), ("svg", "Export SVG image…"), ("csv", "Export CSV numbers…"))
FILTERS = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "csv": "CSV numbers (*.csv)"}


def export_menu(parent: QWidget, choose: Callable[[str], object]) -> QMenu:
    """The right-click menu: one action per format (its data is the format), calling ``choose(fmt)``."""
    menu = QMenu(parent)
    for fmt, text in MENU_ITEMS:
        act = menu.addAction(text)
        act.setData(fmt)
        act.triggered.connect(lambda _checked=False, f=fmt: choose(f))
    return menu


def suggested_filename(title: str, fmt: str) -> str:
    """A file name from the title's part before a double space ("Raw scores  Q·Kᵀ" -> "raw-scores.png")."""
    base = "".join(ch if ch.isalnum() else "-" for ch in plain_title((title or "heatmap").split("  ")[0]).lower())
    base = "-".join(part for part in base.split("-") if part) or "heatmap"
    return f"{base}.{fmt}"


def ask_export_path(parent: QWidget, fmt: str, title: str, export_dir: str) -> str | None:
    """Ask where to export (starting in ``export_dir``); the path with the format's suffix, or None if cancelled."""
    name = suggested_filename(title, fmt)
    start = str(Path(dialog_dir(export_dir)) / name)  # the folder the user last chose (first time: Documents)
    path, _ = QFileDialog.getSaveFileName(parent, f"Export {fmt.upper()}", start, FILTERS[fmt])
    if not path:
        return None
    remember_dialog_path(path)
    if not path.lower().endswith("." + fmt):
        path += "." + fmt
    return path


# ---------------------------------------------------------------- the file itself
COLORBAR_LABELS = {"weights": "weight", "signed": "value"}
"""A colour bar's label when the caller names none: what one unit of colour stands for."""


def label_colorbar(colorbar: Any, label: str, color: str = "#333333") -> None:
    """Name what a pyqtgraph ``ColorBarItem``'s colours stand for (e.g. "weight", "score"): the text runs along
    the bar, on the side away from its numbers."""
    colorbar.getAxis("left").setLabel(label, color=color)
    colorbar.getAxis("left").setStyle(showValues=False)


def title_width(title: str, context: ExportContext | str | None, title_pt: float = 11.0,
                context_pt: float = 9.0) -> int:
    """Pixels the two-line export title needs (the title at ``title_pt``, the context at ``context_pt``)."""
    from PySide6.QtGui import QFont, QFontMetricsF

    def advance(text: str, pt: float) -> float:
        font = QFont()
        font.setPointSizeF(pt)
        return QFontMetricsF(font).horizontalAdvance(text)

    line = context.line() if isinstance(context, ExportContext) else (context or "")
    return round(max(advance(plain_title(title), title_pt), advance(plain_title(line), context_pt)))


class ExportableMap(Protocol):
    """What a map's Export button needs of it (``HeatmapWidget`` is one): a widget with a title, values, the folder
    exports start in, and its own ``export(path)``."""

    export_dir: str

    def title(self) -> str: ...

    def values(self) -> Any: ...

    def export(self, path: str | Path) -> None: ...


def heatmap_export_button(hm: Any) -> CornerButton:
    """The Export button of one map (an ``ExportableMap`` widget): PNG, SVG, PDF or CSV through the map's own
    ``export`` (which adds the context its ``export_extras`` provides)."""

    def choose(fmt: str) -> None:
        export_with_dialog(hm, fmt, suggested_filename(hm.title(), fmt), hm.export, hm.export_dir)

    def fill(menu: QMenu) -> None:
        add_format_actions(menu, HEATMAP_FORMATS, choose)
        for act in menu.actions():
            act.setEnabled(hm.values().size > 0)

    return attach_export_button(hm, fill, "Export this map (PNG, SVG, PDF or CSV)…")
