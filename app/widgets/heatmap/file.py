"""A heatmap as a file: CSV numbers, or PNG/SVG/PDF rendered from a fresh widget at export size.

The widget class is handed in (``HeatmapWidget`` passes itself), so this module never imports the view that uses
it: the view, the file export functions and the CLI all end here without an import cycle."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.common.heatmap_files import check_heatmap, export_size, write_heatmap_csv
from app.common.titles import ExportContext, full_title, title_html
from app.widgets.heatmap.export import COLORBAR_LABELS, label_colorbar, title_width
from app.widgets.qt_compat import delete_now
from app.widgets.rendering import ensure_application, render_widget


def write_heatmap_file(path: str | Path, values: Any, row_labels: Sequence[str], col_labels: Sequence[str],
                       title: str, *, blocked: Any = None, kind: str = "signed", row_title: str = "",
                       col_title: str = "", col_groups: int = 1, context: Any = None,
                       colorbar_label: str | None = None, levels: tuple[float, float] | None = None,
                       widget_class: Callable[..., Any]) -> str:
    """Write one heatmap to ``path`` by suffix: CSV numbers, or a fresh ``HeatmapWidget`` at export size (light
    theme, every label) rendered to PNG/SVG/PDF by ``write_heatmap_image`` (title with ``context``, labelled
    colour bar); returns the title."""
    target, vals, blk = check_heatmap(path, values, row_labels, col_labels, blocked)
    if target.suffix.lower() == ".csv":
        write_heatmap_csv(target, vals, row_labels, col_labels, blk, kind, title, context, row_title, col_title)
        return full_title(title, context)
    return write_heatmap_image(target, vals, row_labels, col_labels, title, blocked=blk, kind=kind,
                               row_title=row_title, col_title=col_title, col_groups=col_groups, context=context,
                               colorbar_label=colorbar_label, levels=levels, widget_class=widget_class)


def write_heatmap_image(target: Path, values: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str],
                        title: str, *, blocked: np.ndarray | None = None, kind: str = "signed", row_title: str = "",
                        col_title: str = "", col_groups: int = 1, context: ExportContext | str | None = None,
                        colorbar_label: str | None = None, levels: tuple[float, float] | None = None,
                        widget_class: Callable[..., Any]) -> str:
    """Render one heatmap to PNG, SVG or PDF: a fresh ``widget_class`` (``HeatmapWidget``) at export size (light theme,
    every label),
    its title on two lines (what the map is, then ``context``), its colour bar labelled, wide enough for the
    title. Returns the plain one-line title, which is also written into the file."""

    ensure_application()
    shown = title_html(title, context)
    plain = full_title(title, context)
    widget = widget_class(title=shown, context_menu=False, dark=False)
    try:
        longest = max((len(str(s)) for s in [*row_labels, *col_labels]), default=4)
        rows, cols = values.shape
        width, height = export_size(rows, cols, max_label=longest)
        # never clip the title: it is centred over the map's column alone, so the colour bar's ~110 px are not its room
        width = max(width, title_width(title, context) + 170)
        widget.resize(width, height + (18 if "<br>" in shown else 0))
        widget.set_data(values, list(row_labels), list(col_labels), blocked=blocked, kind=kind, title=shown,
                        row_title=row_title or "query", col_title=col_title or "key", levels=levels)
        label_colorbar(widget.colorbar, colorbar_label or COLORBAR_LABELS.get(kind, "value"))
        widget.set_column_groups(col_groups)
        render_widget(widget, target, title=plain)
    finally:
        delete_now(widget)  # deleteLater never runs without an event loop (the CLI), leaving it for the exit hook
    return plain
