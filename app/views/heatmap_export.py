"""A heatmap's way out to a file: the right-click menu, the file dialog and the suggested file name.

The writing itself is ``app.views.heatmap.write_heatmap_file`` (through ``app.rendering``), the same path that
``app.export.export_heatmap`` takes, so what you export from the menu is what a script exports.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

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
    base = "".join(ch if ch.isalnum() else "-" for ch in (title or "heatmap").split("  ")[0].lower())
    base = "-".join(part for part in base.split("-") if part) or "heatmap"
    return f"{base}.{fmt}"


def ask_export_path(parent: QWidget, fmt: str, title: str, export_dir: str) -> str | None:
    """Ask where to export (starting in ``export_dir``); the path with the format's suffix, or None if cancelled."""
    name = suggested_filename(title, fmt)
    start = str(Path(export_dir) / name) if export_dir else name
    path, _ = QFileDialog.getSaveFileName(parent, f"Export {fmt.upper()}", start, FILTERS[fmt])
    if not path:
        return None
    if not path.lower().endswith("." + fmt):
        path += "." + fmt
    return path
