"""The Model tab's Generate view: the open model writes one token at a time over its key/value cache.

Top: the prompt, Step, Run N (off the GUI thread) with Cancel, Undo (Ctrl+Z while this view is shown), Restart,
and "Open in the Heads view" (the prompt and the tokens made, traced there; from there any head opens in the
Playground as before). Left: sampling (greedy, temperature, top-k, top-p, seed) and the cache policy (full, window,
sinks), a bad value refused under its control with the old one kept; under them the distribution the newest token
was drawn from, before and after sampling's cut. Right: the text, each new token on its probability's colour; the
picked head's attention rows growing downwards, one a token; every head's newest row; the cache (layers × K/V heads
× positions) with its bytes, a standard multi-head cache's, and for a window or sinks what was evicted and how far
the next-token distribution moved from the full cache's. Layout and wiring only: ``GenerateSession`` (Qt-free) runs
the decoder; ``app.model_tab.model.generate_views`` derives every number drawn.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSignalBlocker, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.generate import CACHES, MAX_RUN, GenerateSession
from app.model_tab.model.generate_views import cache_grid, cache_text, distribution, grown_map, newest_rows, text_html
from app.model_tab.model.session import OWN_FAMILY, InspectSession
from app.model_tab.qt.detect_maps import caption_label
from app.model_tab.qt.generate_maps import DistributionChart, GeneratedText, probability_colors
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.theme import ThemeColors, colors_for, follow_theme, span

CONTROLS_WIDTH = 190
RUN_TIP = "Make this many tokens, one at a time (Cancel stops and keeps them)"


def error_label() -> QLabel:
    label = QLabel("")
    label.setObjectName("errorLabel")
    label.setWordWrap(True)
    label.setVisible(False)
    return label


class GenerateView(RedrawWhenShown, QWidget):
    """See the module docstring. ``model``: the ``GenerateSession``; ``open_heads()`` shows the Heads view."""

    def __init__(self, session: InspectSession, open_heads: Callable[[], Any] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.open_heads = session, open_heads
        self.model = GenerateSession(session)
        self.dark = False
        self.errors: dict[str, QLabel] = {}
        v = QVBoxLayout(self)
        v.setContentsMargins(2, 2, 2, 2)
        self.status_label = caption_label("")  # beside the second row of buttons
        v.addLayout(self._build_top())
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self._build_controls())
        body.addWidget(self._build_maps())
        body.setStretchFactor(1, 1)
        body.setSizes([CONTROLS_WIDTH, 700])
        v.addWidget(body, 1)
        self._undo_filter = _UndoKeys(self)
        ev = self.model.events
        ev.steps.connect(self.request_redraw)
        ev.running.connect(self._show_running)
        ev.settings.connect(self._show_settings)
        ev.status.connect(self._show_status)
        session.events.selected.connect(self.request_redraw)
        session.events.trace.connect(self._show_settings)  # the prompt shown follows the tab's text until typed
        session.events.load.connect(self._show_running)
        follow_theme(self._restyle)
        self._show_settings()
        self._show_running()
        self._show_status()
        self.request_redraw()

    # ------------------------------------------------------------------ building
    def _build_top(self) -> QVBoxLayout:
        rows = QVBoxLayout()
        rows.setSpacing(2)
        row = QHBoxLayout()
        self.prompt_edit = QLineEdit()
        self.prompt_edit.setPlaceholderText("The prompt (Enter: start again from it)")
        self.prompt_edit.setToolTip("What the model continues; a new prompt starts the generation again")
        self.prompt_edit.returnPressed.connect(self._set_prompt)
        self.prompt_edit.setMinimumWidth(120)
        row.addWidget(self.prompt_edit, 1)
        self.step_button = QPushButton("Step")
        self.step_button.setToolTip("Make one token")
        self.step_button.clicked.connect(self.model.step)
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip(RUN_TIP)
        self.count_spin: QSpinBox = QSpinBox()
        self.run_button.clicked.connect(lambda: self.model.run(self.count_spin.value()))
        self.count_spin.setRange(1, MAX_RUN)
        self.count_spin.setValue(20)
        self.count_spin.setToolTip("How many tokens Run makes")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.model.cancel)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setToolTip("Take the newest token back (Ctrl+Z while this view is shown)")
        self.undo_button.clicked.connect(self.model.undo)
        self.restart_button = QPushButton("Restart")
        self.restart_button.setToolTip("Start again from the prompt alone")
        self.restart_button.clicked.connect(lambda: self._refusable("prompt", self.model.restart))
        self.heads_button = QPushButton("Open in Heads")
        self.heads_button.setToolTip("Trace the prompt and the tokens made in the Heads view; from there any head "
                                     "opens in the Playground")
        self.heads_button.clicked.connect(self.open_in_heads)
        for w in (self.step_button, self.run_button, self.count_spin):
            row.addWidget(w)
        rows.addLayout(row)
        second = QHBoxLayout()
        for w in (self.cancel_button, self.undo_button, self.restart_button, self.heads_button):
            second.addWidget(w)
        self.status_label.setMinimumWidth(100)
        second.addWidget(self.status_label, 1)
        rows.addLayout(second)
        return rows

    def _line(self, name: str, tip: str, form: QFormLayout, label: str, apply: Callable[[str], Any]) -> QLineEdit:
        edit = QLineEdit()
        edit.setToolTip(tip)
        edit.editingFinished.connect(lambda: self._refusable(name, lambda: apply(edit.text())))
        form.addRow(label, edit)
        self.errors[name] = error_label()
        form.addRow(self.errors[name])
        return edit

    def _build_controls(self) -> QScrollArea:
        inner = QWidget()
        v = QVBoxLayout(inner)
        v.setContentsMargins(2, 0, 2, 0)
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        m = self.model
        self.greedy_check = QCheckBox("Greedy")
        self.greedy_check.setToolTip("Always the likeliest token (temperature 0); off: draw from the distribution")
        self.greedy_check.toggled.connect(lambda on: self._refusable("temperature", lambda: m.set_greedy(on)))
        form.addRow(self.greedy_check)
        self.temperature_edit = self._line("temperature", "Divides the logits before softmax: below 1 sharper, "
                                           "above 1 flatter (used when Greedy is off)", form, "Temperature",
                                           m.set_temperature)
        self.top_k_edit = self._line("top_k", "Keep only the k likeliest tokens (empty: off)", form, "Top-k",
                                     m.set_top_k)
        self.top_p_edit = self._line("top_p", "Keep the likeliest tokens until their probabilities reach p "
                                     "(empty: off)", form, "Top-p", m.set_top_p)
        self.seed_edit = self._line("seed", "The random draw's seed: the same seed draws the same tokens (a new one "
                                    "starts again from the prompt)", form, "Seed", m.set_seed)
        self.cache_combo = QComboBox()
        self.cache_combo.addItems(list(CACHES))
        self.cache_combo.setToolTip("full: every past key and value; window: the last W positions; sinks: the first "
                                    "S and the most recent W − S (StreamingLLM)")
        self.cache_combo.currentTextChanged.connect(
            lambda c: self._refusable("cache", lambda: m.set_cache(c)))
        form.addRow("Cache", self.cache_combo)
        self.window_edit = self._line("window", "Positions the cache keeps (window and sinks)", form, "Window",
                                      lambda t: m.set_cache(m.cache, window=t))
        self.sinks_edit = self._line("sinks", "The first positions a sinks cache always keeps", form, "Sinks",
                                     lambda t: m.set_cache(m.cache, sinks=t))
        self.errors["cache"] = error_label()
        form.addRow(self.errors["cache"])
        self.errors["prompt"] = error_label()
        v.addLayout(form)
        v.addWidget(self.errors["prompt"])
        v.addStretch(1)
        area = QScrollArea()
        area.setWidgetResizable(True)
        area.setWidget(inner)
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the fields narrow instead
        area.setMinimumWidth(150)
        return area

    def _build_maps(self) -> QSplitter:
        right = QSplitter(Qt.Orientation.Vertical)
        top = QSplitter(Qt.Orientation.Horizontal)
        text = QWidget()
        tv = QVBoxLayout(text)
        tv.setContentsMargins(0, 0, 0, 0)
        self.text_view = GeneratedText()
        tv.addWidget(self.text_view, 1)
        self.text_legend = caption_label("")
        tv.addWidget(self.text_legend)
        top.addWidget(text)
        self.chart = DistributionChart()
        top.addWidget(self.chart)
        top.setSizes([420, 250])
        right.addWidget(top)
        maps = QSplitter(Qt.Orientation.Horizontal)
        self.grown = HeatmapWidget(title="Step: one row a token")
        self.newest = HeatmapWidget(title="Every head's newest row")
        self.newest.cellClicked.connect(self._pick_row)
        maps.addWidget(self.grown)
        maps.addWidget(self.newest)
        right.addWidget(maps)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        self.cache_map = HeatmapWidget(title="The cache")
        bottom.addWidget(self.cache_map)
        self.cache_label = caption_label("")
        self.cache_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        cache_area = QScrollArea()
        cache_area.setWidgetResizable(True)
        cache_area.setWidget(self.cache_label)
        bottom.addWidget(cache_area)
        bottom.setSizes([400, 300])
        right.addWidget(bottom)
        right.setSizes([110, 300, 190])
        return right

    # ------------------------------------------------------------------ commands
    def _refusable(self, name: str, fn: Callable[[], Any]) -> bool:
        """Run a setting's change; a refusal is shown under its control and the control shows the value kept."""
        label = self.errors.get(name)
        try:
            fn()
        except ValueError as exc:
            if label is not None:
                label.setText(span("⚠ " + html.escape(str(exc)), colors_for(self.dark).bad))
                label.setVisible(True)
            self._show_settings(keep_errors=True)
            return False
        if label is not None:
            label.setText("")
            label.setVisible(False)
        return True

    def _set_prompt(self) -> None:
        text = self.prompt_edit.text()
        if text != self.model.effective_prompt or self.model.steps:
            self._refusable("prompt", lambda: self.model.set_prompt(text))

    def _pick_row(self, row: int, _col: int) -> None:
        layers, heads = self.session.shape
        if heads and 0 <= row < layers * heads:
            self.session.select_head(*divmod(row, heads))

    def open_in_heads(self) -> bool:
        """Trace the prompt and the tokens made in the Heads view (and show it)."""
        if self.session.model is None or not self.model.prompt_ids:  # (the button is off until then)
            return False
        self.session.set_text(self.model.text())
        if self.open_heads is not None:
            self.open_heads()
        return True

    # ------------------------------------------------------------------ following the model
    def _restyle(self, c: ThemeColors) -> None:
        self.dark = c.dark
        self.text_legend.setText(self._legend())
        self.request_redraw()

    def _legend(self) -> str:
        colors = probability_colors(self.dark)
        swatches = "".join(f"<span style='background-color:{c}'>&nbsp;&nbsp;</span>" for c in colors)
        return f"each new token's probability: 0 {swatches} 1"

    def _show_status(self) -> None:
        self.status_label.setText(html.escape(self.model.status))

    def _show_running(self) -> None:
        m = self.model
        has_model = self.session.model is not None and self.session.load_state != "loading"
        refusal = m.refusal if has_model else ""  # an encoder: the status beside the buttons says why
        for w in (self.step_button, self.run_button, self.count_spin):
            w.setEnabled(has_model and not m.running and not refusal)
        self.step_button.setToolTip(refusal or "Make one token")
        self.run_button.setToolTip(refusal or RUN_TIP)
        self.cancel_button.setEnabled(m.running and not m.cancelling)
        self.undo_button.setEnabled(bool(m.steps) and not m.running)
        self.restart_button.setEnabled(bool(m.steps) and not m.running)
        self.heads_button.setEnabled(bool(m.prompt_ids) and not m.running)
        self.prompt_edit.setEnabled(not m.running)
        self.seed_edit.setEnabled(not m.running)
        self.run_button.setText(f"Run ({m.run_done}/{m.run_total})" if m.running else "Run")

    def _show_settings(self, keep_errors: bool = False) -> None:
        m = self.model
        for edit, text in ((self.prompt_edit, m.effective_prompt), (self.temperature_edit, f"{m.temperature:g}"),
                           (self.top_k_edit, "" if m.top_k is None else str(m.top_k)),
                           (self.top_p_edit, "" if m.top_p is None else f"{m.top_p:g}"),
                           (self.seed_edit, str(m.seed)), (self.window_edit, str(m.window)),
                           (self.sinks_edit, str(m.sinks))):
            if edit.text() != text and not (edit is self.prompt_edit and edit.hasFocus()):
                with QSignalBlocker(edit):
                    edit.setText(text)
        with QSignalBlocker(self.greedy_check):
            self.greedy_check.setChecked(m.greedy)
        with QSignalBlocker(self.cache_combo):
            self.cache_combo.setCurrentText(m.cache)
        self.temperature_edit.setEnabled(not m.greedy)
        self.window_edit.setEnabled(m.cache != "full")
        self.sinks_edit.setEnabled(m.cache == "sinks")

    def redraw(self) -> None:
        self._stale = False
        m, s = self.model, self.session
        colors = probability_colors(self.dark)
        tokens = m.tokens()
        prompt_tokens = tokens[:len(m.prompt_ids)]
        joiner = " " if s.model is not None and s.model.family == OWN_FAMILY else ""  # its tokens are words
        self.text_view.show_html(text_html(prompt_tokens, m.steps, colors, joiner) if m.prompt_ids else
                                 html.escape(m.effective_prompt))
        self._show_running()
        if not m.steps or s.model is None:
            self.chart.set_rows([])
            self.cache_label.setText("Step: the cache's bytes, and what a window or sinks evict, are told here.")
            return
        newest = m.steps[-1]
        self.chart.set_rows(distribution(newest))
        layer, head = s.selected
        grown = grown_map(m.steps, tokens, layer, head)
        if grown is not None:
            self.grown.set_data(grown.values, grown.rows, grown.cols, blocked=grown.blocked, kind="weights",
                                title=grown.title, row_sums=False)
        rows = newest_rows(newest, tokens)
        self.newest.set_data(rows.values, rows.rows, rows.cols, kind="weights", row_sums=False,
                             title=rows.title)
        cache = cache_grid(newest, tokens, s.model.info.kv_heads)
        self.cache_map.set_data(cache.values, cache.rows, cache.cols, blocked=cache.blocked, kind="weights",
                                row_sums=False, title=cache.title)
        self.cache_label.setText(cache_text(newest, s.model.info))

    # ------------------------------------------------------------------ undo while shown
    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        self._undo_filter.attach(self.window())

    def hideEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self._undo_filter.detach()
        super().hideEvent(event)


class _UndoKeys(QObject):
    """While the Generate view is shown, Ctrl+Z (the platform's Undo key) in its window takes back the newest token
    instead of undoing the Playground's last edit (which Edit → Undo still does). A text field with focus keeps
    Ctrl+Z for its own text. The filter sits on the window and claims the key before the window's shortcut."""

    def __init__(self, view: GenerateView) -> None:
        super().__init__(view)
        self.view = view
        self._on: QObject | None = None

    def attach(self, window: QObject) -> None:
        if self._on is not window:
            self.detach()
            window.installEventFilter(self)
            self._on = window

    def detach(self) -> None:
        if self._on is not None:
            self._on.removeEventFilter(self)
            self._on = None

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) and isinstance(event, QKeyEvent) \
                and event.matches(QKeySequence.StandardKey.Undo) and self.view.isVisible():
            if event.type() == QEvent.Type.ShortcutOverride:
                event.accept()  # the key comes as a key press instead of triggering the window's Undo
            else:
                self.view.model.undo()
            return True
        return False
