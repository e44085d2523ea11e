"""The Model tab: a real model (or one trained here) on your own text. Left: where the model comes from. Right:
the text and its tokens, then every head, one head large, or a layer's flow; under them what the pointer is on,
the next-token list, and "Open this head in the Playground". Layout and wiring only: the session computes, the
views draw (``app.model_tab.qt.views``), the host opens a head in the Playground through the window's undo stack."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.session import InspectSession
from app.model_tab.model.views import next_token_html
from app.model_tab.qt.cause_view import CauseView
from app.model_tab.qt.detect_view import DetectView
from app.model_tab.qt.generate_view import GenerateView
from app.model_tab.qt.sources import SourcesPanel
from app.model_tab.qt.tokens import TokenStrip
from app.model_tab.qt.views import HeadMapView, HeadsGridView, LayerFlowView
from app.widgets.theme import ThemeColors, colors_for, follow_theme, span


class ModelTab(QSplitter):
    """See the module docstring. ``open_head()`` is called by "Open this head in the Playground"."""

    def __init__(self, session: InspectSession, open_head: Callable[[], Any] | None = None, start_dir: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.session, self.open_head = session, open_head
        self.sources = SourcesPanel(session, start_dir)
        self.addWidget(self.sources)
        right = QWidget()
        v = QVBoxLayout(right)
        v.setContentsMargins(4, 4, 4, 4)
        row = QHBoxLayout()
        self.text_edit = QLineEdit(session.text)
        self.text_edit.setPlaceholderText("Type a text and press Enter")
        self.text_edit.setToolTip("Your text: it is split into tokens and run through the model (Enter)")
        self.text_edit.returnPressed.connect(lambda: session.set_text(self.text_edit.text()))
        row.addWidget(self.text_edit, 1)
        self.trace_button = QPushButton("Trace")
        self.trace_button.clicked.connect(lambda: session.set_text(self.text_edit.text()))
        row.addWidget(self.trace_button)
        v.addLayout(row)
        self.error_label = QLabel("")
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)
        v.addWidget(self.error_label)
        self.tokens = TokenStrip()
        self.tokens.hovered.connect(lambda i: session.hover(i if i >= 0 else None))
        v.addWidget(self.tokens)
        self.views = QTabWidget()
        self.grid = HeadsGridView(session)
        self.head_map = HeadMapView(session)
        self.flow = LayerFlowView(session)
        self.views.addTab(self.grid, "Heads")
        self.views.addTab(self.head_map, "Head")
        self.views.addTab(self.flow, "Flow")
        self.detect = DetectView(session)  # detectors, ablation scan, heads off
        self.views.addTab(self.detect, "Detect")
        self.generate = GenerateView(session, open_heads=lambda: self.views.setCurrentWidget(self.grid))
        self.views.addTab(self.generate, "Generate")  # the model writes token by token over its KV cache
        self.cause = CauseView(session, open_head=lambda: self.open_head() if self.open_head else None)
        self.views.addTab(self.cause, "Cause")  # lens, attribution, patching, knockout
        self.grid.headClicked.connect(lambda _l, _h: self.views.setCurrentWidget(self.head_map))
        v.addWidget(self.views, 1)
        bottom = QHBoxLayout()
        self.readout = QLabel(" ")
        self.readout.setWordWrap(True)
        bottom.addWidget(self.readout, 3)
        self.next_label = QLabel("")
        self.next_label.setTextFormat(Qt.TextFormat.RichText)
        bottom.addWidget(self.next_label, 2)
        self.open_button = QPushButton("Open this head\nin the Playground")
        self.open_button.setToolTip("The Playground receives this head's real q, k and v for your text, with the "
                                    "model's scale and mask (undo returns)")
        self.open_button.clicked.connect(lambda: self.open_head() if self.open_head else None)
        bottom.addWidget(self.open_button)
        v.addLayout(bottom)
        self.views.currentChanged.connect(self._follow_view)  # the Generate view has its own read-outs
        self.addWidget(right)
        self.setStretchFactor(1, 1)
        self.setChildrenCollapsible(True)  # drag the left column away for room (a 1024 px window needs it)
        self.setCollapsible(1, False)
        self.setSizes([240, 900])
        self.dark = False
        ev = session.events
        ev.text.connect(self._show_text)
        ev.trace.connect(self._show_trace)
        ev.selected.connect(self._show_selected)
        ev.hovered.connect(self._show_hover)
        ev.status.connect(self._show_error)
        session.refresh_sources()
        self._show_trace()
        follow_theme(self._restyle)

    def _restyle(self, c: ThemeColors) -> None:
        self.dark = c.dark
        self._show_error()

    def _follow_view(self) -> None:
        """The read-out, the traced text's next tokens and "Open … in the Playground" are the trace's: hidden while
        the Generate view (which shows its own, and opens its text in the Heads view) is in front."""
        traced = self.views.currentWidget() is not self.generate
        for w in (self.readout, self.next_label, self.open_button):
            w.setVisible(traced)

    # ------------------------------------------------------------------ following the session
    def _show_text(self) -> None:
        if self.text_edit.text() != self.session.text:
            with QSignalBlocker(self.text_edit):
                self.text_edit.setText(self.session.text)

    def _show_trace(self) -> None:
        s = self.session
        self.tokens.set_tokens(s.trace.tokens if s.trace is not None else [])
        self.trace_button.setEnabled(s.model is not None and s.load_state != "loading")
        self.open_button.setEnabled(s.trace is not None)
        self._show_selected()
        self._show_hover()
        self._show_error()

    def _show_selected(self) -> None:
        layer, head = self.session.selected
        # before a text is traced there is no head to name (the button said "layer 0 head 0" of no model)
        self.open_button.setText(f"Open layer {layer} head {head}\nin the Playground" if self.session.trace is not None
                                 else "Open this head\nin the Playground")

    def _show_hover(self) -> None:
        s = self.session
        self.tokens.set_highlight(s.hovered)
        focus = self.views.currentWidget()
        text = getattr(focus, "readout", "") if s.hovered is not None else ""
        self.readout.setText(text or "Hover a map (or a token) for its weights; click a head to enlarge it.")
        t = s.trace
        self.next_label.setText(next_token_html(t, s.shown_position, s.top_next()) if t is not None else "")

    def _show_error(self) -> None:
        s = self.session
        error = s.error if s.error and s.load_state != "loading" else ""
        self.error_label.setText(span("⚠ " + html.escape(error), colors_for(self.dark).bad) if error else "")
        self.error_label.setVisible(bool(error))
