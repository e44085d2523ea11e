"""The Flow view (the bertviz idea, drawn natively with QPainter): query tokens on the left, key tokens on the right,
one line per (query, key) pair and head; width and opacity are the weight (``app.common.flow.flow_line_style``),
one colour per head. Hovering a token isolates its lines and the read-out under the lines says their weights.

``FlowView`` is the frame (the Heads menu, the canvas of ``app.widgets.flow.canvas``, the read-out, an Export button);
the features subclass it: ``app.playground.views.flow.view.PlaygroundFlowView`` follows the Playground's result
(every head of the multi-head split when Heads > 1), ``app.training.qt.flow.TrainingFlowView`` the training
session's shown step with a layer picker (as the head grid does), the Model tab's ``LayerFlowView`` a real model's
layer. The numbers come from the models; the canvas only draws them, and records what it drew
(``FlowCanvas.drawn``) so tests read the lines back.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QColor, QIcon, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QToolButton, QVBoxLayout, QWidget

from app.common.flow import FlowData
from app.common.titles import ExportContext
from app.widgets.export_button import (
    IMAGE_FORMATS,
    add_format_actions,
    attach_export_button,
    export_with_dialog,
)
from app.widgets.flow.canvas import FlowCanvas, head_colour
from app.widgets.theme import LIGHT, ThemeColors, follow_theme

__all__ = ["FlowView"]


class FlowView(QWidget):
    """The Heads menu (one checkable, coloured entry per head), the canvas, the hover read-out and an Export button.
    Subclasses say where the data come from (``current_data``) and what an export names (``export_context``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.colors = LIGHT
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(3)
        self.title_label = QLabel()
        self.title_label.setObjectName("flowTitle")
        self.title_label.setWordWrap(True)
        self.title_label.setContentsMargins(0, 0, 30, 0)  # the Export button sits in the top-right corner
        lay.addWidget(self.title_label)
        self.controls = QHBoxLayout()
        self.controls.setSpacing(8)
        lay.addLayout(self.controls)
        # heads on and off from a menu (check boxes in a row made the Training tab's column ~400 px wide)
        self.heads_button = QToolButton()
        self.heads_button.setText("Heads")
        self.heads_button.setToolTip("Show or hide each head's lines")
        self.heads_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.heads_button.setMenu(QMenu(self.heads_button))
        self.heads_button.hide()
        self.controls.addWidget(self.heads_button)
        self.controls.addStretch(1)
        self.head_checks: list[QAction] = []
        self.canvas = FlowCanvas()
        lay.addWidget(self.canvas, 1)
        self.hover_label = QLabel(" ")
        self.hover_label.setObjectName("hoverLabel")
        self.hover_label.setWordWrap(True)
        lay.addWidget(self.hover_label)
        self.data: FlowData | None = None
        self.canvas.hovered.connect(lambda _s, _i: self._show_hover())
        self.export_button = attach_export_button(self, self._fill_export_menu, "Export the flow (PNG or SVG)…")
        follow_theme(self._restyle)

    # ------------------------------------------------------------------ to override
    def current_data(self) -> FlowData | None:
        raise NotImplementedError

    def export_context(self) -> ExportContext | str:
        return ""

    def empty_text(self) -> str:
        return self.withheld() or "Nothing to show yet."

    def withheld(self) -> str:
        """Why the lines are withheld now ("" when they are not): a lesson's question covers the weights."""
        return ""

    # ------------------------------------------------------------------ drawing
    def shown_heads(self) -> list[int]:
        return [h for h, act in enumerate(self.head_checks) if act.isChecked()]

    def redraw(self) -> None:
        self._stale = False
        self.data = data = self.current_data()
        if data is None:
            self.title_label.setText(self.empty_text())
            self.canvas.set_data(None, [])
            self._ensure_heads(0)
            self._show_hover()
            return
        self._ensure_heads(data.num_heads)
        self.canvas.set_data(data, [0] if data.num_heads == 1 else self.shown_heads())
        self.title_label.setText(data.title + (f" — {data.note}" if data.note else "")
                                 + ". Line width and opacity = weight; hover a token to isolate its lines."
                                 + self._thinned_note())
        self._show_hover()

    def _thinned_note(self) -> str:
        """What a long text's drawing leaves out, said in the title (never cut silently)."""
        plan = self.canvas.plan()
        parts = []
        if plan.pool_q > 1 or plan.pool_k > 1:
            parts.append(f"every line pools {plan.pool_q} queries × {plan.pool_k} keys")
        if plan.weights.size < plan.total:
            parts.append(f"the strongest {plan.weights.size:,} of {plan.total:,} lines drawn")
        return f" Long text: {'; '.join(parts)}." if parts else ""

    def _ensure_heads(self, n: int) -> None:
        """One checkable entry per head in the Heads menu when there are several (a single head is always
        shown, without a switch)."""
        want = n if n > 1 else 0
        if len(self.head_checks) != want:
            menu = self.heads_button.menu()
            menu.clear()
            self.head_checks = []
            for h in range(want):
                act = menu.addAction(f"head {h + 1}")
                act.setCheckable(True)
                act.setChecked(True)
                act.toggled.connect(lambda _on: self.redraw())
                self.head_checks.append(act)
            self.heads_button.setVisible(want > 0)
        self._colour_checks()

    def _colour_checks(self) -> None:
        for h, act in enumerate(self.head_checks):
            pix = QPixmap(12, 12)
            pix.fill(QColor(head_colour(h, len(self.head_checks), self.colors)))
            act.setIcon(QIcon(pix))
        shown = len(self.shown_heads())
        self.heads_button.setText(f"heads {shown}/{len(self.head_checks)} ▾")

    def _show_hover(self) -> None:
        side, i = self.canvas.hover
        data = self.data
        if data is None or i < 0:
            self.hover_label.setText("Hover a token to see only its lines and their weights.")
            return
        heads = self.canvas.shown_heads
        self.hover_label.setText(data.query_text(i, heads) if side == "query" else data.key_text(i, heads))

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c  # (the canvas follows the theme itself)
        self._colour_checks()

    # ------------------------------------------------------------------ export
    def _fill_export_menu(self, menu: QMenu) -> None:
        add_format_actions(menu, [f for f in IMAGE_FORMATS if f in ("png", "svg")],
                           lambda f: export_with_dialog(self, f, f"attention-flow.{f}", self.export))
        for act in menu.actions():
            act.setEnabled(self.data is not None)

    def export(self, path: str | Path) -> str:
        """The flow as drawn now (same heads) in the light theme, titled with its context; PNG or SVG. Returns the
        plain title written into the file."""
        from PySide6.QtWidgets import QLabel as Label

        from app.common.titles import full_title, title_html
        from app.widgets.qt_compat import delete_now
        from app.widgets.rendering import light_figure, render_widget

        if getattr(self, "_stale", False):  # hidden behind another tab: catch up first
            self.redraw()
        if self.data is None:
            raise ValueError(self.withheld() or "nothing to export yet")
        if Path(path).suffix.lower() not in (".png", ".svg"):
            raise ValueError(f"the flow exports as .png or .svg, got {Path(path).suffix!r}")
        data, context = self.data, self.export_context()
        fig, box = light_figure()
        label = Label(title_html(data.title, context))
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        label.setWordWrap(True)
        canvas = FlowCanvas(dark=False)
        canvas.set_data(data, self.canvas.shown_heads)
        box.addWidget(label)
        box.addWidget(canvas, 1)
        try:
            n = max(len(data.query_tokens), len(data.key_tokens))
            fig.resize(640, int(120 + min(n * 40, 800)))
            plain = full_title(data.title, context)
            render_widget(fig, Path(path), title=plain)
        finally:
            delete_now(fig)
        return plain
