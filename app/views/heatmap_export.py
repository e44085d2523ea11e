"""A heatmap's way out to a file: the right-click menu, the file dialog, the suggested file name, and the image.

``app.views.heatmap.write_heatmap_file`` (a heatmap's own export) and ``app.export.export_heatmap`` (scripts, the
CLI) both end in ``write_heatmap_image``, so what you export from the menu is what a script exports: a title that
says what the map is and in which setting (``app.rendering.ExportContext``), no "①" step numbers (they mean
something only next to the other steps), a labelled colour bar.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from ..rendering import ExportContext, full_title, plain_title

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
    start = str(Path(export_dir) / name) if export_dir else name
    path, _ = QFileDialog.getSaveFileName(parent, f"Export {fmt.upper()}", start, FILTERS[fmt])
    if not path:
        return None
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


def write_heatmap_image(target: Path, values: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str],
                        title: str, *, blocked: np.ndarray | None = None, kind: str = "signed", row_title: str = "",
                        col_title: str = "", col_groups: int = 1, context: ExportContext | str | None = None,
                        colorbar_label: str | None = None, levels: tuple[float, float] | None = None) -> str:
    """Render one heatmap to PNG, SVG or PDF: a fresh ``HeatmapWidget`` at export size (light theme, every label),
    its title on two lines (what the map is, then ``context``), its colour bar labelled, wide enough for the
    title. Returns the plain one-line title, which is also written into the file."""
    from ..qt_compat import delete_now
    from ..rendering import ensure_application, export_size, render_widget, title_html
    from .heatmap import HeatmapWidget  # here, not at the top: heatmap.py imports this module

    ensure_application()
    shown = title_html(title, context)
    plain = full_title(title, context)
    widget = HeatmapWidget(title=shown, context_menu=False)
    try:
        longest = max((len(str(s)) for s in [*row_labels, *col_labels]), default=4)
        width, height = export_size(*values.shape, max_label=longest)
        width = max(width, title_width(title, context) + 60)  # never clip the title
        widget.resize(width, height + (18 if "<br>" in shown else 0))
        widget.set_data(values, list(row_labels), list(col_labels), blocked=blocked, kind=kind, title=shown,
                        row_title=row_title or "query", col_title=col_title or "key", levels=levels)
        label_colorbar(widget.colorbar, colorbar_label or COLORBAR_LABELS.get(kind, "value"))
        widget.set_column_groups(col_groups)
        render_widget(widget, target, title=plain)
    finally:
        delete_now(widget)  # deleteLater never runs without an event loop (the CLI), leaving it for the exit hook
    return plain
