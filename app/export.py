"""Export heatmaps and widgets to PNG, SVG or CSV, with or without a display: the public export functions.

Images are rendered from a real, laid-out ``HeatmapWidget`` (title, token labels on both axes, colour bar,
numbers in cells when they fit), so an exported figure looks like the view. The machinery is in
``app.rendering`` (CSV, rendering, atomic writes) and ``app.views.heatmap.write_heatmap_file``; this module only
depends on them (never the other way round), and loads Qt only for images.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .rendering import FORMATS, check_heatmap, ensure_application, export_size, render_widget, write_heatmap_csv

__all__ = ["FORMATS", "ensure_application", "export_heatmap", "export_size", "export_widget_image"]


def export_heatmap(path: str | Path, values: Any, row_labels: Sequence[str], col_labels: Sequence[str],
                   title: str, *, blocked: Any = None, kind: str = "signed", row_title: str = "",
                   col_title: str = "", col_groups: int = 1) -> None:
    """Write one heatmap to ``path``; the suffix chooses the format (.png, .svg or .csv).

    CSV: a corner cell then the column labels; one row per query, label then numbers in full precision
    (``repr``); blocked cells of scores as ``-inf``. PNG/SVG: the rendered heatmap with title, labels and
    colour bar. ``kind``: "weights" (levels [0, 1]) or "signed" (symmetric around 0). Works headless.
    """
    target, vals, blk = check_heatmap(path, values, row_labels, col_labels, blocked)
    if target.suffix.lower() == ".csv":  # numbers only: no Qt needed
        write_heatmap_csv(target, vals, row_labels, col_labels, blk, kind)
        return
    from .views.heatmap import write_heatmap_file

    write_heatmap_file(target, vals, row_labels, col_labels, title, blocked=blk, kind=kind, row_title=row_title,
                       col_title=col_title, col_groups=col_groups)


def export_widget_image(widget: Any, path: str | Path) -> None:
    """Render any widget to PNG (2x device pixel ratio) or SVG (QSvgGenerator), chosen by suffix."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"export: images must be .png or .svg, got {path.suffix!r}")
    ensure_application()
    title = widget.windowTitle() if hasattr(widget, "windowTitle") else ""
    render_widget(widget, path, title=title)
