"""The Playground's "3D" tab: one step's map (choose ① – ⑤) as a rotatable surface (pyqtgraph.opengl).

Each cell is a flat tile at the height of its number (tiles joined by slopes), so a 1 × N map — one query — still
has a surface, and a tile's height *is* the cell's value (``GLSurfacePlotItem``'s z; the height is stretched for
the eye by the item's transform, never by changing the numbers). Colours are the Steps view's maps (weights 0…1,
signed steps symmetric around 0). The heights come from ``app.playground.views.three_d.model.surface_of``.

OpenGL may be missing (no PyOpenGL, a remote session, Qt's offscreen platform): pyqtgraph.opengl is imported only
when the tab is first shown, a context is tried first, and any failure leaves a message in the tab instead of the
surface; the rest of the app never touches OpenGL. Export: a PNG of the framebuffer (with its title) where OpenGL
works; there is no vector (SVG) form of a 3D rendering.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QVector3D
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QMenu, QVBoxLayout, QWidget

from app.playground.model.concealment import Concealment
from app.playground.model.export_context import playground_context
from app.playground.model.playground import PlaygroundModel
from app.playground.views.three_d.model import STEP_LABELS, Surface, surface_of
from app.widgets.export_button import attach_export_button, export_with_dialog
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.style import colormap, levels_for
from app.widgets.theme import ThemeColors, colors_for, follow_theme
from attention_core import STEP_NAMES, STEP_TITLES

if TYPE_CHECKING:
    from app.playground.qt.commands import UndoableEdits

TILE = 0.42  # half a tile's width: tiles at i ± 0.42, slopes between them
MASKED_RGBA = (0.55, 0.55, 0.55, 1.0)


def opengl_problem() -> str:
    """Why OpenGL cannot be used here ("" when it can): the import of pyqtgraph.opengl, or no context."""
    try:
        importlib.import_module("pyqtgraph.opengl")
    except Exception as exc:  # ImportError without PyOpenGL; other errors from a broken GL library
        return f"pyqtgraph.opengl could not be imported ({type(exc).__name__}: {exc})"
    from PySide6.QtGui import QOpenGLContext

    app = QGuiApplication.instance()
    platform = app.platformName() if isinstance(app, QGuiApplication) else ""
    ctx = QOpenGLContext()
    if not ctx.create():
        return f"no OpenGL context could be created (Qt platform '{platform}')"
    return ""


class ThreeDView(RedrawWhenShown, QWidget):
    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.dark = False
        self.export_dir = ""
        self.gl: Any = None
        self.item: Any = None
        self.base: Any = None
        self._height = 1.0
        self._range = (0.0, 1.0)
        self.labels: list[Any] = []
        self.problem: str | None = None  # None: not tried yet; "": OpenGL works
        self._building = False  # the OpenGL widget is being added (see ensure_gl)
        self._gl_module: Any = None
        self.surface: Surface | None = None
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Step:"))
        self.step_combo = QComboBox()
        for name in STEP_NAMES:
            self.step_combo.addItem(STEP_LABELS[name], name)
        self.step_combo.setCurrentIndex(STEP_NAMES.index("weights"))
        self.step_combo.currentIndexChanged.connect(lambda _i: self.request_redraw())
        bar.addWidget(self.step_combo)
        bar.addStretch(1)
        outer.addLayout(bar)
        self.note = QLabel("Drag to rotate, scroll to zoom.")
        self.note.setObjectName("surfaceNote")
        self.note.setWordWrap(True)
        outer.addWidget(self.note)
        self.body = QVBoxLayout()
        outer.addLayout(self.body, 1)
        self.message = QLabel()
        self.message.setObjectName("surfaceMessage")
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.hide()
        self.body.addWidget(self.message)
        self.export_button = attach_export_button(self, self._fill_export_menu, "Export this view (PNG)…")
        self.concealment = Concealment.of(model)
        model.events.result.connect(self.request_redraw)
        self.concealment.events.changed.connect(self.request_redraw)
        follow_theme(self._restyle)

    @property
    def step(self) -> str:
        return str(self.step_combo.currentData())

    def set_step(self, step: str) -> None:
        self.step_combo.setCurrentIndex(STEP_NAMES.index(step))

    # ------------------------------------------------------------------ OpenGL, created on first show
    def ensure_gl(self) -> bool:
        """Create the 3D widget once; on any failure show why instead. True when the surface can be drawn.

        Adding the first OpenGL widget to a window makes Qt recreate the window: everything in it is hidden and
        shown again before ``addWidget`` returns (the Learn dock too, which lifts a lesson's cover while hidden),
        and this view's ``showEvent`` asks for a redraw in the middle of the build. ``_building`` turns that
        redraw away; the caller draws once the build is done, with the cover as it is then."""
        if self.problem is None:
            self.problem = opengl_problem()
            if not self.problem:
                self._building = True
                try:
                    gl = self._gl_module = importlib.import_module("pyqtgraph.opengl")
                    self.gl = gl.GLViewWidget()
                    self.item = gl.GLSurfacePlotItem(shader=None, smooth=False, drawEdges=False, showGrid=True,
                                                     lineColor=(0.2, 0.2, 0.2, 0.6), lineWidth=1.0)
                    self.base = gl.GLGridItem()
                    self.gl.addItem(self.base)
                    self.gl.addItem(self.item)
                    self.body.addWidget(self.gl, 1)
                except Exception as exc:  # a GL library that imports but cannot build the widget
                    self.problem = f"the 3D widget could not be created ({type(exc).__name__}: {exc})"
                    self.gl = self.item = None
                finally:
                    self._building = False
            if self.problem:
                self.message.setText(f"The 3D surface needs OpenGL, which is not available here: {self.problem}. "
                                     "Every other tab works without it; the Steps tab shows the same numbers.")
                self.message.show()
                self.note.hide()
            self._style_gl()
        return not self.problem

    def gl_failed_after_show(self) -> bool:
        """A context that failed only when the widget was shown: switch to the message (True if so)."""
        if self.gl is not None and self.gl.isVisible() and not self.gl.isValid():
            self.gl.hide()
            self.problem = "the OpenGL context failed when the view was shown"
            self.message.setText(f"The 3D surface needs OpenGL, which is not available here: {self.problem}.")
            self.message.show()
            return True
        return False

    # ------------------------------------------------------------------ drawing
    def redraw(self) -> None:
        if self._building:  # a show event in the middle of the OpenGL build: drawn when the build is done
            self._stale = True
            return
        withheld = self._show_withheld()
        if not self.isVisible():  # OpenGL only once the tab is shown (never at start-up, never for a script)
            self._stale = True
            return
        self._stale = False
        if not self.ensure_gl():  # no OpenGL here: that is what the tab says, covered or not
            return
        withheld = self._show_withheld()  # asked again: the build hid and showed the window (and the Learn dock)
        if withheld:
            return
        self.message.hide()  # a cover lifted
        self.gl.show()
        s = self.surface
        if s is None:  # nothing computed yet
            return
        rows, cols = s.z.shape
        x, y = _tile_edges(rows), _tile_edges(cols)
        z = np.repeat(np.repeat(s.z, 2, axis=0), 2, axis=1)
        kind = "weights" if s.step == "weights" else "signed"
        lo, hi = levels_for(s.z, kind)
        rgba = colormap(kind).map(np.clip((s.z - lo) / (hi - lo), 0.0, 1.0).ravel(), mode="float")
        rgba = np.asarray(rgba, dtype=np.float64).reshape(rows, cols, 4)
        rgba[s.masked] = MASKED_RGBA
        colors = np.repeat(np.repeat(rgba, 2, axis=0), 2, axis=1).reshape(-1, 4)  # one per vertex, row-major
        self.item.setData(x=x, y=y, z=z, colors=colors)
        # the height axis always contains 0 (a tile's height is proportional to its number, never a stretched
        # difference); the grid lies at 0, so signed steps show their sign
        lo, hi = min(float(s.z.min()), 0.0), max(float(s.z.max()), 0.0)
        span = max(hi - lo, 1e-12)
        height = 0.6 * max(rows, cols, 2)
        k = height / span
        self.item.resetTransform()
        self.item.scale(1.0, 1.0, k)
        self.item.translate(0.0, 0.0, -lo * k)
        self.base.resetTransform()
        self.base.setSize(rows, cols, 1)
        self.base.setSpacing(1, 1, 1)
        self.base.translate(rows / 2 - 0.5, cols / 2 - 0.5, -lo * k)
        self._height, self._range = height, (lo, hi)
        self._labels(s)
        self.gl.setCameraPosition(pos=QVector3D(rows / 2 - 0.5, cols / 2 - 0.5, height / 2),
                                  distance=1.8 * max(rows, cols, 2) + 3.0, elevation=28, azimuth=-55)
        self.note.setText(f"{s.title}: {s.note}. Drag to rotate, scroll to zoom.")
        self.note.show()

    def _show_withheld(self) -> str:
        """The cover's message when a lesson's question covers this step ("" when not): the tab then says so
        instead of the surface (no heights, no numbers)."""
        withheld = self.concealment.withheld_message(self.step)
        self.surface = None if withheld else surface_of(self.model, self.step)
        if withheld and not self.problem:
            self.message.setText(f"{withheld}. The other steps can be shown meanwhile.")
            self.message.show()
            self.note.hide()
            if self.gl is not None:
                self.gl.hide()
        return withheld

    def drawn_heights(self) -> np.ndarray:
        """The z of each tile as the GL item holds it (before the display stretch): one per cell."""
        return np.asarray(self.item._z)[::2, ::2]

    def _style_gl(self) -> None:
        if self.gl is not None:
            self.gl.setBackgroundColor(QColor(colors_for(self.dark).plot_bg))
            self.base.setColor((255, 255, 255, 70) if self.dark else (0, 0, 0, 50))

    def _restyle(self, c: ThemeColors) -> None:
        self.dark = c.dark
        self._style_gl()
        self.request_redraw()

    def _labels(self, s: Surface) -> None:
        for item in self.labels:
            self.gl.removeItem(item)
        color = QColor(colors_for(self.dark).text)
        font = QFont()
        font.setPointSize(10)
        text = self._gl_module.GLTextItem
        rows, cols = s.z.shape
        items = [text(pos=(i, -0.9, 0.0), text=t, color=color, font=font) for i, t in enumerate(s.row_labels)]
        items += [text(pos=(rows - 0.2, j, 0.0), text=t, color=color, font=font) for j, t in enumerate(s.col_labels)]
        items.append(text(pos=(rows / 2 - 0.5, -1.8, 0.0), text="queries", color=color, font=font))
        items.append(text(pos=(rows + 0.6, cols / 2 - 0.5, 0.0), text="keys" if s.step != "output" else "columns",
                          color=color, font=font))
        (lo, hi), k = self._range, self._height / max(self._range[1] - self._range[0], 1e-12)
        for value in sorted({lo, 0.0, hi}):
            items.append(text(pos=(-0.6, -0.6, (value - lo) * k), text=f"{value:.3g}", color=color, font=font))
        for item in items:
            self.gl.addItem(item)
        self.labels = items

    # ------------------------------------------------------------------ export
    def _fill_export_menu(self, menu: QMenu) -> None:
        act = menu.addAction("Export PNG image…")
        act.triggered.connect(lambda: export_with_dialog(self, "png", f"attention-3d-{self.step}.png", self.export,
                                                         self.export_dir))
        if not self.ensure_gl():
            act.setEnabled(False)
            act.setText("Export PNG image… (needs OpenGL, not available here)")

    def export(self, path: str | Path) -> str:
        """The surface as PNG (light background, the title and context above it); returns the plain title.
        ``RuntimeError`` where OpenGL is not available or the suffix is not .png (no vector form of 3D)."""
        from app.common.heatmap_files import atomic_write_bytes
        from app.common.titles import full_title

        path = Path(path)
        if path.suffix.lower() != ".png":
            raise ValueError("the 3D view exports PNG only (a 3D rendering has no vector form)")
        if self.concealment.withheld_message(self.step):
            raise ValueError(self.concealment.withheld_message(self.step))
        if not self.ensure_gl() or self.surface is None:
            raise RuntimeError(f"the 3D view needs OpenGL: {self.problem or 'not drawn yet'}")
        title = full_title(f"3D surface of {STEP_TITLES[self.surface.step]}", playground_context(self.model))
        was_dark = self.dark
        self.dark = False
        self._style_gl()
        self._labels(self.surface)
        try:
            shot = self.gl.grabFramebuffer()
        finally:
            self.dark = was_dark
            self._style_gl()
            self._labels(self.surface)
        if shot.isNull():
            raise RuntimeError("the 3D view could not be read back from OpenGL")
        img = _with_title(shot, title)
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice

        data = QByteArray()
        buf = QBuffer(data)
        buf.open(QIODevice.OpenModeFlag.WriteOnly)
        img.setText("Title", title)
        img.setText("Software", "Attention Playground")
        # the format as str: PySide6 refuses bytes here at run time (ValueError), whatever its stubs say
        if not img.save(buf, "PNG"):  # type: ignore[call-overload]
            raise OSError(f"export: could not encode PNG for {path}")
        buf.close()
        atomic_write_bytes(path, bytes(data.data()))
        return title


    def self_test(self, out_dir: Path) -> list[Path]:
        """``--self-test``: ``surface-3d.png`` where OpenGL works (the tab must be shown), else nothing."""
        self.redraw()
        if self.problem or not self.isVisible():
            return []
        path = Path(out_dir) / "surface-3d.png"
        self.export(path)
        return [path]


def _tile_edges(n: int) -> np.ndarray:
    return (np.repeat(np.arange(n, dtype=np.float64), 2) + np.tile([-TILE, TILE], n)).astype(np.float64)


def _with_title(shot: QImage, title: str) -> QImage:
    top = 44
    img = QImage(shot.width(), shot.height() + top, QImage.Format.Format_ARGB32)
    img.fill(QColor("white"))
    painter = QPainter(img)
    try:
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.setPen(QColor("#111111"))
        font = QFont()
        font.setPointSize(11)
        painter.setFont(font)
        painter.drawText(8, 0, img.width() - 16, top, Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, title)
        painter.drawImage(0, top, shot)
    finally:
        painter.end()
    return img


def build(model: PlaygroundModel, edits: UndoableEdits) -> QWidget:
    """The view for the Playground's tab (``app/playground/views/registry.py``)."""
    return ThreeDView(model)
