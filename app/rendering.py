"""Turning numbers and widgets into files: heatmap CSV, PNG/SVG renders of any widget, atomic writes. Headless.

Knows no view, so both sides use it without an import cycle: ``app.views.heatmap`` (a heatmap's own export)
and ``app.export`` (the public export functions) build on it. Qt is imported only where an image is rendered,
so a CSV export never loads Qt. SVG goes through QtSvg's ``QSvgGenerator`` because pyqtgraph's SVGExporter
crashes with PySide6 >= 6.11 (pyqtgraph issue #3495).
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
LAYOUT_HOOK = "refresh_labels"
"""A widget (or child) with a method of this name re-lays out its text for its final size before rendering."""


def ensure_application() -> Any:
    """Return the QApplication, creating one (offscreen when no display is set) if none exists yet."""
    from PySide6.QtWidgets import QApplication

    from .qt_compat import protect_singletons

    protect_singletons()  # shiboken6 6.12.0 on Python 3.11: see app/qt_compat.py
    app = QApplication.instance()
    if app is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and sys.platform.startswith(
                "linux"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QApplication(sys.argv[:1] or ["attention-playground"])
    return app


def atomic_write_bytes(path: Path, data: bytes) -> None:
    from attention_core.fileio import atomic_write

    atomic_write(path, lambda fh: fh.write(data))
    umask = os.umask(0)
    os.umask(umask)
    try:  # mkstemp makes the file 0600; an exported figure should be readable like any other file
        os.chmod(path, 0o666 & ~umask)
    except OSError:
        pass


def check_heatmap(path: str | Path, values: Any, row_labels: Sequence[str], col_labels: Sequence[str],
                  blocked: Any = None) -> tuple[Path, np.ndarray, np.ndarray | None]:
    """Validate an export: a known suffix, 2-D values, one label per row and column. Returns them as arrays."""
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
    return path, vals, blk


def write_heatmap_csv(path: Path, values: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str],
                      blocked: np.ndarray | None, kind: str) -> None:
    """A corner cell then the column labels; one row per query, label then numbers in full precision (``repr``);
    blocked cells of scores as ``-inf``."""
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
    atomic_write_bytes(path, buf.getvalue().encode("utf-8"))


def export_size(rows: int, cols: int, max_label: int = 6) -> tuple[int, int]:
    """Pixel size of an exported heatmap: ~56 px cells when small, shrinking so big matrices stay < ~2000 px."""
    cell = 56 if max(rows, cols) <= 12 else 40 if max(rows, cols) <= 20 else 26 if max(rows, cols) <= 40 else 18
    label_w = 30 + 7 * min(max_label, 12)
    width = label_w + cols * cell + 190
    height = 90 + rows * cell + 70
    return int(min(max(width, 520), 2400)), int(min(max(height, 300), 2000))


def lay_out(widget: Any) -> None:
    """Show a parentless widget off-screen once so pyqtgraph lays it out (a never-shown plot exports cropped)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QWidget

    if widget.parent() is None and not widget.isVisible():
        widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        widget.show()
    for _ in range(3):
        QApplication.processEvents()
    for w in [widget, *widget.findChildren(QWidget)]:  # e.g. heatmaps recompute their tick strides
        refresh = getattr(w, LAYOUT_HOOK, None)
        if callable(refresh):
            refresh()
    QApplication.processEvents()


def render_widget(widget: Any, path: Path, title: str = "") -> None:
    """Render a widget to PNG (2x device pixel ratio) or SVG, chosen by ``path``'s suffix; atomic write."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect, QSize
    from PySide6.QtGui import QColor, QImage, QPainter

    lay_out(widget)
    w, h = widget.width(), widget.height()
    suffix = path.suffix.lower()
    data = QByteArray()
    buf = QBuffer(data)
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
        buf.open(QIODevice.OpenModeFlag.WriteOnly)
        if not img.save(buf, "PNG"):
            raise OSError(f"export: could not encode PNG for {path}")
        buf.close()
    elif suffix == ".svg":
        from PySide6.QtSvg import QSvgGenerator

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
    else:
        raise ValueError(f"export: images must be .png or .svg, got {suffix!r}")
    atomic_write_bytes(path, bytes(data.data()))
