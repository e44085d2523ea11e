"""The Detect view's pattern with its window controls: the picked head's map (``PatternView``), a scroll bar for
its queries (right) and one for its keys (below), under it the caption (what the map is, then which queries and keys
of how many positions it shows: always the model's ``window_text``) beside zoom out / in and "Centre on ○" (the keys
moved to where the detector's ideal cells run through the window). Layout and wiring only: every control calls
``heads.probe`` (``DetectProbe``), which holds the window; the bars follow it."""

from __future__ import annotations

from contextlib import ExitStack

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QPushButton, QScrollBar, QVBoxLayout, QWidget

from app.model_tab.model.detect_probe import WINDOW_MAX, WINDOW_MIN
from app.model_tab.model.detect_views import shown_window, window_text
from app.model_tab.model.session import InspectSession
from app.model_tab.qt.detect_maps import PatternView, caption_label


class PatternWindow(QWidget):
    """See the module docstring. ``pattern``: the map; ``query_bar``, ``key_bar``; ``caption``."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.analysis = session.heads
        probe = self.analysis.probe
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        grid = QGridLayout()
        grid.setSpacing(0)
        self.pattern = PatternView(session)
        grid.addWidget(self.pattern, 0, 0)
        self.query_bar = QScrollBar(Qt.Orientation.Vertical)
        self.query_bar.setToolTip("Which queries (rows) the map shows: the first one at the top")
        self.query_bar.valueChanged.connect(lambda value: probe.set_window(query=value))
        grid.addWidget(self.query_bar, 0, 1)
        self.key_bar = QScrollBar(Qt.Orientation.Horizontal)
        self.key_bar.setToolTip("Which keys (columns) the map shows: the first one at the left")
        self.key_bar.valueChanged.connect(lambda value: probe.set_window(key=value))
        grid.setRowStretch(0, 1)
        grid.setColumnStretch(0, 1)
        v.addLayout(grid, 1)
        row = QHBoxLayout()  # the keys' bar, then zoom and centre (one row under the map)
        row.setSpacing(3)
        row.addWidget(self.key_bar, 1)
        self.zoom_out = QPushButton("−")
        self.zoom_out.setToolTip(f"Show more positions (Ctrl+wheel down), up to {WINDOW_MAX} a side")
        self.zoom_out.clicked.connect(lambda: probe.zoom(-1))
        self.zoom_in = QPushButton("+")
        self.zoom_in.setToolTip(f"Show fewer positions, larger (Ctrl+wheel up), down to {WINDOW_MIN} a side")
        self.zoom_in.clicked.connect(lambda: probe.zoom(1))
        self.centre_button = QPushButton("Centre on ○")
        self.centre_button.setToolTip("Move the keys so that the detector's ideal cells (circled) for the middle "
                                      "query run through the middle of the map")
        self.centre_button.clicked.connect(lambda: probe.centre_on(self.analysis.kind))
        for button in (self.zoom_out, self.zoom_in):
            button.setFixedWidth(26)
        self.buttons = (self.zoom_out, self.zoom_in, self.centre_button)
        for button in self.buttons:
            row.addWidget(button)
        v.addLayout(row)
        self.caption = caption_label()
        v.addWidget(self.caption)
        ev = self.analysis.events
        for sig in (ev.detection, ev.kind, ev.cover, probe.events.window, session.events.selected):
            sig.connect(self.redraw)
        self.redraw()

    def redraw(self) -> None:
        a = self.analysis
        d = a.detection
        n = d.positions if d is not None else 0
        query, key, side = shown_window(a)
        with ExitStack() as stack:
            for bar, value in ((self.query_bar, query), (self.key_bar, key)):
                stack.enter_context(QSignalBlocker(bar))
                bar.setRange(0, max(0, n - side))
                bar.setPageStep(max(1, side))
                bar.setSingleStep(max(1, side // 8))
                bar.setValue(value)
                bar.setVisible(n > side)
        # a window of a longer probe: its caption is where the window is (what the map is stays in its tooltip)
        self.caption.setText("" if d is None else window_text(a) if side < n else
                             f"{self.pattern.caption} {window_text(a)}")
        size = a.probe.window[2]
        self.zoom_in.setEnabled(d is not None and size > WINDOW_MIN and n > WINDOW_MIN)
        self.zoom_out.setEnabled(d is not None and size < WINDOW_MAX and side < n)
        self.centre_button.setEnabled(d is not None and side < n)
        for button in self.buttons:  # a probe shown whole keeps the room (Ctrl+wheel zooms in, its caption says)
            button.setVisible(side < n)
