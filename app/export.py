"""Export heatmaps and widgets to PNG, SVG or CSV, with or without a display.

Images are rendered from a real, laid-out ``HeatmapWidget`` (title, token labels on both axes, colour bar,
numbers in cells when they fit), so an exported figure looks like the view. SVG goes through QtSvg's
``QSvgGenerator`` because pyqtgraph's SVGExporter crashes with PySide6 >= 6.11 (pyqtgraph issue #3495).
"""

from __future__ import annotations

import csv
import io
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

FORMATS = (".png", ".svg", ".csv")


def ensure_application() -> Any:
    """Return the QApplication, creating one (offscreen when no display is set) if none exists yet."""
    from PySide6.QtWidgets import QApplication

    from .qt_compat import protect_singletons

    protect_singletons()
    from .qt_compat import protect_singletons

    protect_singletons()  # shiboken6 6.12.0 on Python 3.11: see app/qt_compat.py
    app = QApplication.instance()
    if app is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and sys.platform.startswith(
                "linux"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QApplication(sys.argv[:1] or ["attention-playground"])
    return app


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    from attention_core.fileio import atomic_write

    atomic_write(path, lambda fh: fh.write(data))
    umask = os.umask(0)
    os.umask(umask)
    try:  # mkstemp makes the file 0600; an exported figure should be readable like any other file
        os.chmod(path, 0o666 & ~umask)
    except OSError:
        pass


def _csv_text(values: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str],
              blocked: np.ndarray | None, kind: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["", *[str(c) for c in col_labels]])
    for i, label in enumerate(row_labels):
        row = []
        for j, v in enumerate(values[i].tolist()):
            if blocked is not None and blocked[i, j] and kind != "weights" and math.isfinite(v):
                row.append("-inf")  # a blocked score is -inf whatever number sits under it
            else:
                row.append(repr(float(v)))
        w.writerow([str(label), *row])
    return buf.getvalue()


def export_size(rows: int, cols: int, max_label: int = 6) -> tuple[int, int]:
    """Pixel size of an exported heatmap: ~56 px cells when small, shrinking so big matrices stay < ~2000 px."""
    cell = 56 if max(rows, cols) <= 12 else 40 if max(rows, cols) <= 20 else 26 if max(rows, cols) <= 40 else 18
    label_w = 30 + 7 * min(max_label, 12)
    width = label_w + cols * cell + 190
    height = 90 + rows * cell + 70
    return int(min(max(width, 520), 2400)), int(min(max(height, 300), 2000))


def export_heatmap(path: str | Path, values: Any, row_labels: Sequence[str], col_labels: Sequence[str],
                   title: str, *, blocked: Any = None, kind: str = "signed", row_title: str = "",
                   col_title: str = "", col_groups: int = 1) -> None:
    """Write one heatmap to ``path``; the suffix chooses the format (.png, .svg or .csv).

    CSV: a corner cell then the column labels; one row per query, label then numbers in full precision
    (``repr``); blocked cells of scores as ``-inf``. PNG/SVG: the rendered heatmap with title, labels and
    colour bar. ``kind``: "weights" (levels [0, 1]) or "signed" (symmetric around 0). Works headless.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"export: unsupported file type {suffix or '(none)'!r}; use .png, .svg or .csv")
    vals = np.asarray(values, dtype=np.float64)
    if vals.ndim != 2:
        raise ValueError(f"export: values must be 2-D, got shape {vals.shape}")
    if len(row_labels) != vals.shape[0] or len(col_labels) != vals.shape[1]:
        raise ValueError(f"export: {len(row_labels)} row / {len(col_labels)} column labels for shape {vals.shape}")
    blk = None if blocked is None else np.broadcast_to(np.asarray(blocked, dtype=bool), vals.shape)
    if suffix == ".csv":
        text = _csv_text(vals, row_labels, col_labels, blk, kind)
        _atomic_write_bytes(path, text.encode("utf-8"))
        return

    ensure_application()
    from .views.heatmap import HeatmapWidget

    widget = HeatmapWidget(title=title, context_menu=False)
    try:
        longest = max((len(str(s)) for s in [*row_labels, *col_labels]), default=4)
        widget.resize(*export_size(*vals.shape, max_label=longest))
        widget.set_data(vals, list(row_labels), list(col_labels), blocked=blk, kind=kind, title=title,
                        row_title=row_title or "query", col_title=col_title or "key")
        widget.set_column_groups(col_groups)
        _render_widget(widget, path, title=title)
    finally:
        from .qt_compat import delete_now

        delete_now(widget)  # deleteLater never runs without an event loop (the CLI), leaving it for the exit hook


def _lay_out(widget: Any) -> None:
    """Show a parentless widget off-screen once so pyqtgraph lays it out (a never-shown plot exports cropped)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    if widget.parent() is None and not widget.isVisible():
        widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        widget.show()
    for _ in range(3):
        QApplication.processEvents()
    # the heatmap recomputes its tick strides from the final size
    from .views.heatmap import HeatmapWidget

    for hm in [widget, *widget.findChildren(HeatmapWidget)]:
        if isinstance(hm, HeatmapWidget) and hm.row_labels():
            hm._update_ticks()
            if hm._row_sums:
                hm._update_row_sums()
    QApplication.processEvents()


def _render_widget(widget: Any, path: Path, title: str = "") -> None:
    from PySide6.QtCore import QPoint, QRect, QSize
    from PySide6.QtGui import QColor, QImage, QPainter

    _lay_out(widget)
    w, h = widget.width(), widget.height()
    suffix = path.suffix.lower()
    if suffix == ".png":
        ratio = 2
        img = QImage(w * ratio, h * ratio, QImage.Format.Format_ARGB32)
        img.setDevicePixelRatio(ratio)
        img.fill(QColor("white"))
        painter = QPainter(img)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
            widget.render(painter, QPoint(0, 0))
        finally:
            painter.end()
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice

        data = QByteArray()
        buf = QBuffer(data)
        buf.open(QIODevice.OpenModeFlag.WriteOnly)
        if not img.save(buf, "PNG"):
            raise OSError(f"export: could not encode PNG for {path}")
        buf.close()
        _atomic_write_bytes(path, bytes(data.data()))
    elif suffix == ".svg":
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice
        from PySide6.QtSvg import QSvgGenerator

        data = QByteArray()
        buf = QBuffer(data)
        buf.open(QIODevice.OpenModeFlag.WriteOnly)
        gen = QSvgGenerator()
        gen.setOutputDevice(buf)
        gen.setResolution(round(widget.logicalDpiX()))  # same px-per-pt as on screen, or text shifts and shrinks
        gen.setSize(QSize(w, h))
        gen.setViewBox(QRect(0, 0, w, h))
        gen.setTitle(title or "Attention Playground")
        gen.setDescription("Exported from Attention Playground")
        painter = QPainter(gen)
        try:
            painter.fillRect(QRect(0, 0, w, h), QColor("white"))
            widget.render(painter, QPoint(0, 0))
        finally:
            painter.end()
        buf.close()
        _atomic_write_bytes(path, bytes(data.data()))
    else:
        raise ValueError(f"export: images must be .png or .svg, got {suffix!r}")


def export_widget_image(widget: Any, path: str | Path) -> None:
    """Render any widget to PNG (2x device pixel ratio) or SVG (QSvgGenerator), chosen by suffix."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"export: images must be .png or .svg, got {path.suffix!r}")
    ensure_application()
    title = widget.windowTitle() if hasattr(widget, "windowTitle") else ""
    _render_widget(widget, path, title=title)
