"""The Playground's "Vectors" tab: queries and keys as arrows (lesson 004's picture), dragged to edit Q and K.

Reading: keys orange, queries blue, labelled by token; the selected query's projection onto each key is dashed
(how far q reaches along k), and the key arrows' thickness is that query's softmax weight (a checkbox). Values and
the selected query's output row Σ wⱼ·vⱼ are optional (their own plane: they live in d_v, not d_k).

Editing: with d_k = 2 (the plane is exact) and Q, K edited directly, drag an arrow head; the row follows the
mouse, rounded to the nearest round number finer than one pixel. One drag is one undo step (its moves share a
merge key): drag → ``UndoableEdits.set_row`` → ``PlaygroundModel.set_block`` → events → every view. Elsewhere drag
is off and the note above the plot says why. Hover an arrow for q·k, |q|, |k|, the angle and the weight
(``VectorSpace.hover_html``); click a query (or use the combo) to select it.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QSignalBlocker, Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QMenu, QVBoxLayout, QWidget

from app.playground.model.export_context import playground_context
from app.playground.model.playground import PlaygroundModel
from app.playground.qt.commands import UndoableEdits
from app.playground.views.vectors.model import VectorSpace
from app.playground.views.vectors.plot import Arrow, DrawOptions, VectorPlot
from app.widgets.export_button import attach_export_button, export_with_dialog
from app.widgets.frame import RedrawWhenShown
from app.widgets.theme import ThemeColors, follow_theme, span

HIT_PX = 14.0
"""How close (pixels) the pointer must be to an arrow head to hover, select or drag it."""
EXPORT_FORMATS = ("png", "svg", "pdf")



HOVER_HINT = "Hover an arrow head for q·k, |q|, |k|, the angle and the weight; click a query to select it."

class DragBox(pg.ViewBox):
    """A ViewBox that offers each drag to ``drag_handler`` first (an arrow head), and pans otherwise."""

    def __init__(self) -> None:
        super().__init__()
        self.drag_handler: Any = None

    def mouseDragEvent(self, ev: Any, axis: Any = None) -> None:  # noqa: N802 (pyqtgraph API)
        if self.drag_handler is not None and self.drag_handler(ev):
            return
        super().mouseDragEvent(ev, axis)


class VectorView(RedrawWhenShown, QWidget):
    def __init__(self, model: PlaygroundModel, edits: UndoableEdits, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model, self.edits = model, edits
        self.space = VectorSpace(model)
        self.options = DrawOptions()
        self.export_dir = ""
        self._drag: tuple[str, int, np.ndarray, str] | None = None
        self._drags = 0
        self._refused = False
        self._fit_pending = True
        self._catching_up = False
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Query:"))
        self.query_combo = QComboBox()
        self.query_combo.setToolTip("The query whose projections, weights and output are drawn")
        self.query_combo.currentIndexChanged.connect(self._on_combo)
        bar.addWidget(self.query_combo)
        self.values_box = QCheckBox("Values and output")
        self.values_box.setToolTip("Draw V's rows and the selected query's output row Σ w·v (in d_v's own plane)")
        self.thick_box = QCheckBox("Weight as key thickness")
        self.thick_box.setChecked(self.options.thickness)
        self.thick_box.setToolTip("Each key arrow as thick as the selected query's softmax weight on it")
        for box in (self.values_box, self.thick_box):
            box.toggled.connect(self._on_options)
            bar.addWidget(box)
        bar.addStretch(1)
        outer.addLayout(bar)
        self.note = QLabel()
        self.note.setObjectName("vectorNote")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.RichText)
        outer.addWidget(self.note)
        self.box = DragBox()
        self.box.drag_handler = self._on_drag
        self.plot = VectorPlot(view_box=self.box)
        outer.addWidget(self.plot, 1)
        self.hover_label = QLabel()
        self.hover_label.setObjectName("vectorHover")
        self.hover_label.setWordWrap(True)
        self.hover_label.setTextFormat(Qt.TextFormat.RichText)
        self.hover_label.setMinimumHeight(40)
        self.hover_label.setText(HOVER_HINT)  # from the start: a view built later must read as one hovered and left
        outer.addWidget(self.hover_label)
        self.export_button = attach_export_button(self.plot, self._fill_export_menu,
                                                  "Export this picture (PNG, SVG or PDF)…")
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        self.space.events.geometry.connect(self._on_geometry)
        self.space.events.hovered.connect(self._on_hovered)
        follow_theme(self._restyle)  # draws now (the plot is dressed already), and again in each new theme

    # ------------------------------------------------------------------ drawing
    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self._catching_up = True  # the catch-up's two events (geometry, hovered) mark the plot stale, no more:
        try:  # RedrawWhenShown draws it once below (it drew twice, ~25 ms each, on every showing)
            self.space.set_live(True)
        finally:
            self._catching_up = False
        super().showEvent(event)

    def request_redraw(self, *_: object) -> None:
        if self._catching_up:
            self._stale = True
        else:
            super().request_redraw()

    def hideEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        if self.window().isVisible():  # behind another tab; a hidden or never-shown window stays live (scripts)
            self.space.set_live(False)
        super().hideEvent(event)

    def redraw(self) -> None:
        self.space.ensure_current()
        self._stale = False
        self.plot.draw(self.space, self.options, self.space.hovered)
        if self._fit_pending and self._drag is None:
            self._fit_pending = False
            self.plot.fit()

    def _restyle(self, _c: ThemeColors) -> None:
        self._on_geometry()  # the arrows' colours (the plot follows the theme itself)

    def _on_geometry(self) -> None:
        s = self.space
        names = s.query_tokens
        if [self.query_combo.itemText(i) for i in range(self.query_combo.count())] != names:
            with QSignalBlocker(self.query_combo):
                self.query_combo.clear()
                self.query_combo.addItems(names)
        if self.query_combo.currentIndex() != s.selected:
            with QSignalBlocker(self.query_combo):
                self.query_combo.setCurrentIndex(s.selected)
        extra = f" {html.escape(s.value_axis_note)}." if self.options.values and s.value_axis_note else ""
        if s.weights_hidden or s.output_hidden:  # why the thickness, the percentages or the output are missing
            extra += " <i>The weights and the output are covered until you answer the lesson's question.</i>"
        c = self.plot.colors
        legend = f"{span('queries', c.blue, True)} and {span('keys', c.orange, True)} from the origin. "
        self.note.setText(legend + html.escape(f"{s.plane_note} {s.drag_note}") + extra)
        self._fit_pending = True
        self.request_redraw()

    def _on_hovered(self) -> None:
        self.hover_label.setText(self.space.hover_html or HOVER_HINT)
        self.request_redraw()

    def _on_options(self) -> None:
        self.options = DrawOptions(values=self.values_box.isChecked(), thickness=self.thick_box.isChecked())
        self._on_geometry()

    def _on_combo(self, index: int) -> None:
        if index >= 0:
            self.space.select(index)

    # ------------------------------------------------------------------ pointer
    def hit(self, pixel: QPointF) -> Arrow | None:
        """The query or key arrow whose head is nearest ``pixel`` (widget pixels of the plot), within ``HIT_PX``."""
        best: tuple[float, int, Arrow] | None = None
        for arrow, tip in self.plot.tip_pixels():
            if arrow.kind not in ("q", "k"):
                continue
            dist = math.hypot(tip.x() - pixel.x(), tip.y() - pixel.y())
            rank = (dist, 0 if arrow.kind == "q" else 1)
            if dist <= HIT_PX and (best is None or rank < best[:2]):
                best = (*rank, arrow)
        return None if best is None else best[2]

    def _on_mouse_moved(self, scene_pos: Any) -> None:
        if self._drag is not None or self._refused:
            return
        arrow = self.hit(self.plot.mapFromScene(scene_pos))
        self.space.hover(arrow.kind if arrow else None, arrow.index if arrow else -1)

    def _on_click(self, ev: Any) -> None:
        if ev.button() != Qt.MouseButton.LeftButton:
            return
        arrow = self.hit(self.plot.mapFromScene(ev.scenePos()))
        if arrow is not None and arrow.kind == "q":
            self.space.select(arrow.index)

    def _on_drag(self, ev: Any) -> bool:
        """A drag that starts on a query or key head edits that row (returns True: handled, no panning)."""
        if ev.button() != Qt.MouseButton.LeftButton:
            return False
        if ev.isStart():
            arrow = self.hit(self.plot.mapFromScene(ev.buttonDownScenePos()))
            if arrow is None:
                return False
            ev.accept()
            if not self.space.draggable:  # held for the whole drag: no panning, and the reason stays in view
                self._refused = True
                self.hover_label.setText(self.space.drag_note)
                return True
            press = self._data(ev.buttonDownScenePos())
            self._drags += 1
            self._drag = (arrow.kind, arrow.index, arrow.tip - press, f"vector-drag{self._drags}")
        if self._refused:
            ev.accept()
            self._refused = not ev.isFinish()
            return True
        if self._drag is None:
            return False
        ev.accept()
        kind, index, offset, key = self._drag
        name, row = self.space.drag_row(kind, index, tuple(self._data(ev.scenePos()) + offset), self.drag_decimals())
        token = (self.space.query_tokens if kind == "q" else self.space.key_tokens)[index]
        self.edits.set_row(name, index, row, merge_key=key, text=f"Drag {name} row '{token}'")
        if ev.isFinish():
            self._drag = None
            self._fit_if_outside()  # the view stays put under the hand unless an arrow left it
            self._fit_pending = False
        return True

    def _data(self, scene_pos: Any) -> np.ndarray:
        p = self.box.mapSceneToView(scene_pos)
        return np.array([p.x(), p.y()])

    def drag_decimals(self) -> int:
        """The decimals of the nearest round step no coarser than one pixel (0.01 at the usual zoom)."""
        px = float(min(self.box.viewPixelSize()))
        return int(min(6, max(0, math.ceil(-math.log10(px))))) if px > 0 else 2

    def _fit_if_outside(self) -> None:
        (x0, x1), (y0, y1) = self.box.viewRange()
        if any(not (x0 <= a.tip[0] <= x1 and y0 <= a.tip[1] <= y1) for a in self.plot.arrows):
            self.plot.fit()

    # ------------------------------------------------------------------ export
    def _fill_export_menu(self, menu: QMenu) -> None:
        for fmt in EXPORT_FORMATS:
            act = menu.addAction(f"Export {fmt.upper()} image…")
            act.triggered.connect(lambda _c=False, f=fmt: export_with_dialog(
                self, f, f"attention-vectors.{f}", self.export, self.export_dir))

    def export(self, path: str | Path) -> str:
        """This picture as a file (PNG, SVG or PDF), light, with its title and context; returns the title."""
        return write_vectors(path, self.space, self.options, self.model)

    def self_test(self, out_dir: Path) -> list[Path]:
        """``--self-test``: this picture as ``vectors.png`` in ``out_dir``."""
        path = Path(out_dir) / "vectors.png"
        self.export(path)
        return [path]


def export_title(space: VectorSpace) -> str:
    q = space.query_tokens[space.selected]
    plane = "exact plane" if space.qk.exact else f"PCA plane keeping {space.qk.kept:.0%}"
    return f"Queries (blue) and keys (orange) as arrows (query '{q}' selected; {plane})"


def write_vectors(path: str | Path, space: VectorSpace, options: DrawOptions, model: PlaygroundModel) -> str:
    """A fresh light ``VectorPlot`` of ``space`` under a title naming the setting (preset, mask, scale), rendered
    to ``path``; the window's own plot is left alone. Returns the plain title (also in the file's metadata)."""
    from app.common.titles import full_title, title_html
    from app.widgets.qt_compat import delete_now
    from app.widgets.rendering import ensure_application, light_figure, render_widget

    ensure_application()
    space.ensure_current()
    context = playground_context(model)
    title = export_title(space)
    fig, box = light_figure()
    label = QLabel(title_html(title, context, size_pt=9.0))
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    label.setWordWrap(True)
    plot = VectorPlot(dark=False)
    box.addWidget(label)
    box.addWidget(plot, 1)
    try:
        fig.resize(760, 720)
        plot.draw(space, options)
        plot.fit()
        plain = full_title(title, context)
        render_widget(fig, Path(path), title=plain)
    finally:
        delete_now(fig)
    return plain


def build(model: PlaygroundModel, edits: UndoableEdits) -> QWidget:
    """The view for the Playground's tab (``app/playground/views/registry.py``)."""
    return VectorView(model, edits)
