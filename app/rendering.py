"""Turning numbers and widgets into files: heatmap CSV, PNG/SVG/PDF renders of any widget, atomic writes, and the
titles that say what an exported figure shows. Headless.

Knows no view, so both sides use it without an import cycle: ``app.views.heatmap`` (a heatmap's own export),
``app.views.pipeline_figure``, ``app.animation`` and ``app.export`` (the public export functions) build on it. Qt
is imported only where an image is rendered, so a CSV export never loads Qt. SVG goes through QtSvg's
``QSvgGenerator`` because pyqtgraph's SVGExporter crashes with PySide6 >= 6.11 (pyqtgraph issue #3495).

Titles: a figure that leaves the app loses the window around it (the preset picker, the mask box, the scale
slider, the training status), so its title carries that context (``ExportContext``). The plain one-line title is
also written into the file (PNG text chunk "Title", SVG ``<title>``, PDF document title), where scripts and tests
read it back without OCR.
"""

from __future__ import annotations

import csv
import html
import io
import math
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attention_core.steps import STEP_TITLES, default_scale

FORMATS = (".png", ".svg", ".pdf", ".csv")
IMAGE_FORMATS = (".png", ".svg", ".pdf")
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
        if app.platformName() == "offscreen":
            _hide_offscreen_notices()
    return app


OFFSCREEN_NOTICES = ("propagateSizeHints",)
"""Qt messages of the offscreen platform that say nothing about the figure ("This plugin does not support
propagateSizeHints()", printed whenever a hidden widget's size hint changes: once per frame of a film)."""


def _hide_offscreen_notices() -> None:
    """Drop ``OFFSCREEN_NOTICES`` from stderr in an application made here for rendering files (the CLI, scripts), so
    a log shows the progress lines and real warnings; every other message still reaches stderr."""
    from PySide6.QtCore import qInstallMessageHandler

    previous = None

    def handler(mode: Any, context: Any, message: str) -> None:
        if any(notice in message for notice in OFFSCREEN_NOTICES):
            return
        if previous is not None:
            previous(mode, context, message)
        else:
            sys.stderr.write(message + "\n")

    previous = qInstallMessageHandler(handler)


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
        raise ValueError(f"export: unsupported file type {suffix or '(none)'!r}; use .png, .svg, .pdf or .csv")
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

    from .qt_compat import delete_now

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


# ---------------------------------------------------------------- titles with context
_CIRCLED = re.compile("[\u2460-\u2473\u24ea-\u24ff\u2776-\u2793]\\s*")
_TAG = re.compile(r"<[^>]+>")


def plain_title(text: str) -> str:
    """A title as plain text for a file: no HTML tags or entities, no "①"-style step numbers (they mean something
    only next to the other steps of the window), single spaces."""
    text = html.unescape(_TAG.sub(" ", text.replace("<br>", " — ")))
    return " ".join(_CIRCLED.sub("", text).split())


def scale_text(scale: float | None, d_k: int | None = None) -> str:
    """The scale in words: "1 (unscaled)", "0.5 = 1/√4", "1/√4 = 0.5" (the default), "0.3"."""
    if scale is None:
        if d_k is None:
            return "default 1/√d_k"
        return f"1/√{d_k} = {default_scale(d_k):.3g}"
    if scale == 1.0:
        return "1 (unscaled)"
    if d_k and math.isclose(scale, default_scale(d_k)):
        return f"{scale:.3g} = 1/√{d_k}"
    return f"{scale:.3g}"


def step_title(view: str, scale: float | None = None) -> str:
    """A step's title for an export: ``STEP_TITLES``, except that a scale of exactly 1 never calls the map
    "scaled" (nothing was scaled: the map equals the raw scores)."""
    if view == "scaled" and scale == 1.0:
        return "Scores Q·Kᵀ × 1 (unscaled)"
    return STEP_TITLES.get(view, view)


def colorbar_label(view: str, scale: float | None = None) -> str:
    """What one unit of colour stands for in a step's map ("score", "weight", …); with a scale of exactly 1 the
    second map is the raw scores, so it is labelled "score", not "scaled score"."""
    if view == "scaled" and scale == 1.0:
        return "score"
    return STEP_COLORBAR_LABELS.get(view, "value")


STEP_COLORBAR_LABELS = {"scores": "score", "scaled": "scaled score", "masked": "masked score", "weights": "weight",
                        "output": "output value"}
MASK_WORDS = {"none": "no mask", "causal": "causal mask", "padding": "padding mask", "custom": "custom mask"}


@dataclass(frozen=True)
class ExportContext:
    """What the window shows around a map and a file would lose: for the playground the preset ("edited" once
    the matrices were changed), the mask and the scale (the value used; ``d_k`` lets it say "= 1/√d_k"); for
    training the task, the step and the accuracy. Fields left None are not mentioned."""

    preset: str | None = None
    mask: str | None = None
    scale: float | None = None
    d_k: int | None = None
    task: str | None = None
    step: int | None = None
    total_steps: int | None = None
    accuracy: float | None = None
    accuracy_step: int | None = None
    """The step the accuracy was measured at, when older than ``step`` (evaluation runs every few steps)."""
    causal: bool | None = None
    positional: str | None = None
    """The run's position encoding: named unless it is the default (learned)."""
    attention_dropout: float | None = None
    """Dropout on the attention weights in training: named when above 0."""

    def parts(self) -> list[str]:
        out = []
        if self.preset is not None:
            out.append(f"preset {self.preset}" if self.preset != "edited" else "edited matrices")
        if self.mask is not None:
            out.append(MASK_WORDS.get(self.mask, f"{self.mask} mask"))
        if self.scale is not None:
            out.append(f"scale {scale_text(self.scale, self.d_k)}")
        if self.task is not None:
            out.append(f"{self.task} task")
        if self.step is not None:
            out.append(f"step {self.step}" + (f" / {self.total_steps}" if self.total_steps is not None else ""))
        if self.accuracy is not None and math.isfinite(self.accuracy):
            when = (f" (at step {self.accuracy_step})" if self.accuracy_step is not None
                    and self.accuracy_step != self.step else "")
            out.append(f"test sequence accuracy {self.accuracy:.0%}{when}")
        if self.causal is False:
            out.append("no causal mask")
        if self.positional is not None and self.positional != "learned":
            out.append("no positions" if self.positional == "none" else f"{self.positional} positions")
        if self.attention_dropout:
            out.append(f"attention dropout {self.attention_dropout:g}")
        return out

    def line(self) -> str:
        """The context as one line: "preset cat-sat-mat · causal mask · scale 1 (unscaled)"."""
        return " · ".join(self.parts())


def full_title(title: str, context: ExportContext | str | None = None) -> str:
    """The one-line plain title written into a file: "Weights = softmax — preset cat-sat-mat · causal mask · …"."""
    line = context.line() if isinstance(context, ExportContext) else (context or "")
    head = plain_title(title)
    line = plain_title(line)
    return f"{head} — {line}" if head and line else head or line


def title_html(title: str, context: ExportContext | str | None = None, *, size_pt: float = 9.0,
               color: str = "#444444") -> str:
    """The shown title: the (plain) title, then the context on a second, smaller line (HTML for pyqtgraph and
    QLabel), so a long context never widens the figure the way one long line would."""
    line = context.line() if isinstance(context, ExportContext) else (context or "")
    head = html.escape(plain_title(title))
    if not line:
        return head
    return f"{head}<br><span style='font-size:{size_pt:g}pt; color:{color}'>{html.escape(plain_title(line))}</span>"
