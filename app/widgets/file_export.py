"""Export heatmaps and widgets to PNG, SVG, PDF or CSV, with or without a display: the public export functions.

Images are rendered from a real, laid-out ``HeatmapWidget`` (title, token labels on both axes, labelled colour bar,
numbers in cells when they fit), so an exported figure looks like the view. Its title says what it shows and in
which setting (``ExportContext``: preset or "edited", mask, scale; for training the task, step and accuracy),
because a file leaves the window that said so behind. The machinery is in ``app.widgets.rendering`` (CSV, rendering,
titles, atomic writes) and ``app.widgets.heatmap.export.write_heatmap_image``; this module only depends on them
(never the other way round), and loads Qt only for images.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.common.heatmap_files import IMAGE_FORMATS, check_heatmap, write_heatmap_csv
from app.common.titles import ExportContext, full_title
from app.widgets.rendering import ensure_application, render_widget

__all__ = ["export_heatmap", "export_widget_image"]


def export_heatmap(path: str | Path, values: Any, row_labels: Sequence[str], col_labels: Sequence[str],
                   title: str, *, blocked: Any = None, kind: str = "signed", row_title: str = "",
                   col_title: str = "", col_groups: int = 1, context: ExportContext | str | None = None,
                   colorbar_label: str | None = None) -> str:
    """Write one heatmap to ``path``; the suffix chooses the format (.png, .svg, .pdf or .csv).

    CSV: ``#`` lines naming the view and ``context`` (``app.common.heatmap_files.context_comments``) and the row
    and column labels (JSON lists), then the numbers alone in full precision (``repr``), blocked cells of scores as
    ``-inf``: ``numpy.genfromtxt(path, comments='#', delimiter=',')`` reads back the matrix. PNG/SVG/PDF: the
    rendered heatmap with title, labels and colour bar. ``kind``: "weights" (levels [0, 1]) or "signed"
    (symmetric around 0). ``context`` adds a second title line (an ``ExportContext`` or text);
    ``colorbar_label`` names the colours' unit (default "weight" or "value" by kind). Returns the plain one-line
    title, which images also carry in their metadata (PNG text "Title", SVG ``<title>``, PDF title). Works
    headless.
    """
    target, vals, blk = check_heatmap(path, values, row_labels, col_labels, blocked)
    if target.suffix.lower() == ".csv":  # numbers only: no Qt needed
        write_heatmap_csv(target, vals, row_labels, col_labels, blk, kind, title, context, row_title, col_title)
        return full_title(title, context)
    from app.widgets.heatmap.view import write_heatmap_file

    return write_heatmap_file(target, vals, row_labels, col_labels, title, blocked=blk, kind=kind,
                              row_title=row_title, col_title=col_title, col_groups=col_groups, context=context,
                              colorbar_label=colorbar_label)


def export_widget_image(widget: Any, path: str | Path, *, title: str | None = None) -> str:
    """Render any widget to PNG (2x device pixel ratio), SVG or PDF, chosen by suffix. ``title`` (default: the
    widget's window title) goes into the file's metadata; returns it as written."""
    path = Path(path)
    if path.suffix.lower() not in IMAGE_FORMATS:
        raise ValueError(f"export: images must be .png, .svg or .pdf, got {path.suffix!r}")
    ensure_application()
    if title is None:
        title = widget.windowTitle() if hasattr(widget, "windowTitle") else ""
    render_widget(widget, path, title=title)
    return full_title(title)
