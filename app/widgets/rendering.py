"""Turning widgets into files: PNG/SVG/PDF renders of any widget, laid out and titled. Headless (offscreen).

Its Qt-free halves live in ``app.common``: the titles (``app.common.titles``) and the heatmap CSV, validation and
atomic writes (``app.common.heatmap_files``).

Knows no view, so both sides use it without an import cycle: ``app.widgets.heatmap.view`` (a heatmap's own export),
``app.playground.qt.pipeline_figure``, ``app.training.film`` and ``app.widgets.file_export`` (the public export
functions) build on it. Qt is imported only where an image is rendered, so a CSV export never loads Qt. SVG goes through
QtSvg's
``QSvgGenerator`` because pyqtgraph's SVGExporter crashes with PySide6 >= 6.11 (pyqtgraph issue #3495).

"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from app.common.heatmap_files import IMAGE_FORMATS, atomic_write_bytes
from app.common.titles import ExportContext, full_title, plain_title, title_html

LAYOUT_HOOK = "refresh_labels"
"""A widget (or child) with a method of this name re-lays out its text for its final size before rendering."""


def ensure_application() -> Any:
    """Return the QApplication, creating one (offscreen when no display is set) if none exists yet."""
    from PySide6.QtWidgets import QApplication

    from app.widgets.qt_compat import protect_singletons

    protect_singletons()  # shiboken6 6.12.0 on Python 3.11: see app/widgets/qt_compat.py
    app = QApplication.instance()
    if app is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and sys.platform.startswith(
                "linux"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from app.widgets.application import prefer_utf8_locale

        prefer_utf8_locale()  # Qt's four-line warning under LANG=C
        app = QApplication(sys.argv[:1] or ["attention-playground"])
        if app.platformName() == "offscreen":
            _hide_offscreen_notices()
    return app


def _hide_offscreen_notices() -> None:
    from app.widgets.application import hide_offscreen_notices

    hide_offscreen_notices()


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


def grab_image(widget: Any, ratio: float = 2.0, background: str = "white", *, prepare: bool = True) -> Any:
    """The widget painted into a QImage at ``ratio`` device pixels per pixel, on ``background``. ``prepare``: lay
    it out first (``lay_out``); an animation does that once and then only lets Qt process its events per frame."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QColor, QImage, QPainter

    if prepare:
        lay_out(widget)
    w, h = widget.width(), widget.height()
    img = QImage(round(w * ratio), round(h * ratio), QImage.Format.Format_ARGB32)
    img.setDevicePixelRatio(ratio)
    img.fill(QColor(background))
    painter = QPainter(img)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        widget.render(painter, QPoint(0, 0))
    finally:
        painter.end()
    return img


def image_to_rgb(img: Any) -> np.ndarray:
    """A QImage as an (h, w, 3) uint8 RGB array (a copy): what imageio and ffmpeg take as a video frame."""
    from PySide6.QtGui import QImage

    rgb = img.convertToFormat(QImage.Format.Format_RGB888)
    w, h, stride = rgb.width(), rgb.height(), rgb.bytesPerLine()
    raw = np.frombuffer(rgb.constBits(), dtype=np.uint8, count=stride * h).reshape(h, stride)
    return raw[:, : w * 3].reshape(h, w, 3).copy()


def light_figure() -> tuple[Any, Any]:
    """A white, light-text widget with a vertical layout: the frame of an exported figure (a title above a view),
    the same in either app theme. Returns (widget, its QVBoxLayout)."""
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    fig = QWidget()
    pal = fig.palette()
    pal.setColor(QPalette.ColorRole.Window, QColor("white"))
    pal.setColor(QPalette.ColorRole.WindowText, QColor("#111111"))
    fig.setPalette(pal)
    fig.setAutoFillBackground(True)
    return fig, QVBoxLayout(fig)


def write_titled_figure(path: str | Path, title: str, context: ExportContext | str | None, view: Any,
                        fill: Any = None, size: tuple[int, int] = (900, 640)) -> str:
    """An exported figure: ``view`` (a fresh widget, light theme) under a title naming what and when (``context``),
    rendered to ``path`` (PNG, SVG or PDF) and then deleted. ``fill(view)`` draws into it once it sits in the
    figure. Returns the plain title (also in the file's metadata). The one way every plot export builds its
    figure: the window's own widgets are left alone (their theme, their size)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel

    from app.widgets.qt_compat import delete_now

    ensure_application()
    fig, box = light_figure()
    label = QLabel(title_html(title, context, size_pt=9.0))
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    label.setWordWrap(True)
    box.addWidget(label)
    box.addWidget(view, 1)
    try:
        if fill is not None:
            fill(view)
        fig.resize(*size)
        plain = full_title(title, context)
        render_widget(fig, Path(path), title=plain)
    finally:
        delete_now(fig)
    return plain


def uncache_items(widget: Any) -> list[tuple[Any, Any]]:
    """Switch off the pixmap cache of every graphics item inside ``widget`` (the on-screen heatmaps cache their
    axes); returns (item, old mode) to restore. A cached item would reach an SVG or PDF as a bitmap."""
    from PySide6.QtWidgets import QGraphicsItem, QGraphicsView

    views = [widget] if isinstance(widget, QGraphicsView) else []
    changed = []
    for view in views + widget.findChildren(QGraphicsView):
        if view.scene() is None:
            continue
        for item in view.scene().items():
            mode = item.cacheMode()
            if mode != QGraphicsItem.CacheMode.NoCache:
                item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
                changed.append((item, mode))
    return changed


def render_widget(widget: Any, path: Path, title: str = "") -> None:
    """Render a widget to PNG (2x device pixel ratio), SVG or PDF (both vector), chosen by ``path``'s suffix;
    atomic write. ``title`` (plain text) goes into the file: PNG text chunk "Title", SVG ``<title>``, PDF title."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QPoint, QRect, QSize, QSizeF
    from PySide6.QtGui import QColor, QPageLayout, QPageSize, QPainter

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in IMAGE_FORMATS:
        raise ValueError(f"export: images must be .png, .svg or .pdf, got {suffix!r}")
    title = plain_title(title) or "Attention Playground"
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if suffix == ".png":
        img = grab_image(widget, 2.0)
        img.setText("Title", title)
        img.setText("Software", "Attention Playground")
        if not img.save(buf, "PNG"):
            raise OSError(f"export: could not encode PNG for {path}")
    else:
        lay_out(widget)
        w, h = widget.width(), widget.height()
        if suffix == ".svg":
            from PySide6.QtSvg import QSvgGenerator

            device: Any = QSvgGenerator()
            device.setOutputDevice(buf)
            device.setResolution(round(widget.logicalDpiX()))  # same px-per-pt as on screen, or text shifts
            device.setSize(QSize(w, h))
            device.setViewBox(QRect(0, 0, w, h))
            device.setTitle(title)
            device.setDescription("Exported from Attention Playground")
        else:
            from PySide6.QtGui import QPdfWriter

            device = QPdfWriter(buf)
            device.setTitle(title)
            device.setCreator("Attention Playground")
            dpi = max(round(widget.logicalDpiX()), 1)
            device.setResolution(dpi)  # one widget pixel = one device pixel: the page is exactly the figure
            device.setPageLayout(QPageLayout(QPageSize(QSizeF(w * 72 / dpi, h * 72 / dpi), QPageSize.Unit.Point,
                                                       "figure", QPageSize.SizeMatchPolicy.ExactMatch),
                                             QPageLayout.Orientation.Portrait, QMarginsF(0, 0, 0, 0)))
        painter = QPainter(device)
        cached = uncache_items(widget)  # vector output: items that paint from a pixmap on screen paint for real
        try:
            painter.fillRect(QRect(0, 0, w, h), QColor("white"))
            widget.render(painter, QPoint(0, 0))
        finally:
            painter.end()
            for item, mode in cached:
                item.setCacheMode(mode)
    buf.close()
    atomic_write_bytes(path, bytes(data.data()))
