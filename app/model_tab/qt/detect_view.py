"""The Model tab's Detect view: which heads do what, and the model with heads switched off.

Top: the detector (previous-token, duplicate-token, induction, first-token), the probe's length (random tokens a
copy; a refusal says why under it and the length kept stays), Run again / Cancel with the run's progress, what the
analysis is doing, and which heads are off. Left, in two tabs (each grid needs the height: 144 heads): the
detector's score for every head (above 0.4 outlined; click one for its pattern), and the ablation scan (each head
off alone, with progress and Cancel; click a head there to switch it off). Middle: the picked head on the probe
with the ideal pattern circled, through the probe's window (``detect_window``: scroll bars, zoom, the window's
caption), and the loss at every position of the window.
Right: every head with a check box (uncheck to switch it off), "Switch off the heads above 0.4", "Switch all back on";
in a narrow view (``NARROW``) this list is a third tab of the left column instead, so the middle gets the room; in
a short one (``SHORT``) the pattern and the loss curve take turns in two tabs instead of sharing the height.
Layout and wiring only: ``session.heads`` (``HeadsAnalysis``) runs everything off the GUI thread and the views in
``detect_maps`` draw what ``app.model_tab.model.detect_views`` derives. The theme follows the application's palette.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.detect_runs import KINDS, THRESHOLD
from app.model_tab.model.detect_views import head_rows, off_html, score_grid
from app.model_tab.model.session import InspectSession
from app.model_tab.qt.detect_maps import LossCurveView, ScanPanel, ScoreGridView, caption_label
from app.model_tab.qt.detect_window import PatternWindow
from app.widgets.theme import ThemeColors, colors_for, follow_theme, span

HEAD_ROLE = int(Qt.ItemDataRole.UserRole)
HEADS_WIDTH = 170
WIDGET_SIZE_MAX = (1 << 24) - 1  # Qt's QWIDGETSIZE_MAX (PySide6 does not export it)
NARROW = 900
"""Below this width (the Model tab at 1280 × 800 beside the Learn dock: ~660 px; at 1024 × 640: ~750 px) the heads
list joins the left column's tabs, so the pattern and the loss curve get the width its column took: three columns
left them ~150 px wide, the pattern ~70 px high and the curve's caption cut."""
SHORT = 420
"""Below this height (the Model tab at 1024 × 640: ~330 px) the pattern and the loss curve are two tabs: sharing it,
the pattern's map was ~30 px high, no cell of a window readable. Beside the Learn dock at 1280 × 800 (~510 px) they
still share it."""
PATTERN_TAB, CURVE_TAB = "Head's pattern", "Loss per position"


class HeadsList(QWidget):
    """Every head with a check box, best first by the shown detector (checked = on); unchecking one switches it off."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.analysis = session.heads
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(3)
        title = QLabel("<b>Heads</b> (uncheck to switch off)")
        title.setWordWrap(True)
        v.addWidget(title)
        self.list = QListWidget()
        self.list.setToolTip("Checked: the head is on. Uncheck a head to switch its output off; the text is traced "
                             "again and every view of this tab shows the model without it.")
        self.list.itemChanged.connect(self._item_changed)
        v.addWidget(self.list, 1)
        self.above_button = QPushButton(f"Switch off those\nabove {THRESHOLD:g}")
        self.above_button.setToolTip(f"Switch off every head whose score for the shown detector is above {THRESHOLD:g}")
        self.above_button.clicked.connect(self.analysis.switch_off_above)
        v.addWidget(self.above_button)
        self.all_on_button = QPushButton("Switch all\nback on")
        self.all_on_button.clicked.connect(self.analysis.switch_all_on)
        v.addWidget(self.all_on_button)
        self._keys: list[tuple[int, int]] = []
        ev = self.analysis.events
        for sig in (ev.detection, ev.kind, ev.off, ev.cover):
            sig.connect(self.redraw)
        session.events.load.connect(self.redraw)
        self.redraw()

    def rows(self) -> list[tuple[int, int, str, bool]]:
        """What the list shows: (layer, head, text, checked) in order."""
        out = []
        for i in range(self.list.count()):
            item = self.list.item(i)
            li, h = item.data(HEAD_ROLE)
            out.append((li, h, item.text(), item.checkState() == Qt.CheckState.Checked))
        return out

    def redraw(self) -> None:
        a = self.analysis
        rows = head_rows(a)
        keys = [(r.layer, r.head) for r in rows]
        with QSignalBlocker(self.list):
            if keys != self._keys:
                self.list.clear()
                for r in rows:
                    item = QListWidgetItem(r.text)
                    item.setData(HEAD_ROLE, (r.layer, r.head))
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    self.list.addItem(item)
                self._keys = keys
            for i, r in enumerate(rows):
                item = self.list.item(i)
                if item.text() != r.text:
                    item.setText(r.text)
                state = Qt.CheckState.Checked if r.on else Qt.CheckState.Unchecked
                if item.checkState() != state:
                    item.setCheckState(state)
        self.above_button.setEnabled(bool(a.heads_above()))
        self.all_on_button.setEnabled(bool(a.off))

    def _item_changed(self, item: QListWidgetItem) -> None:
        li, h = item.data(HEAD_ROLE)
        on = item.checkState() == Qt.CheckState.Checked
        if on == ((li, h) in self.analysis.off):
            self.analysis.toggle(li, h)


class DetectView(QWidget):
    """See the module docstring."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.analysis = session, session.heads
        v = QVBoxLayout(self)
        v.setContentsMargins(2, 2, 2, 2)
        v.setSpacing(3)
        top = QHBoxLayout()
        top.addWidget(QLabel("Detector:"))
        self.kind_box = QComboBox()
        self.kind_box.addItems(list(KINDS))
        self.kind_box.setToolTip("What to look for in every head, on random tokens repeated twice")
        self.kind_box.currentTextChanged.connect(self.analysis.set_kind)
        top.addWidget(self.kind_box)
        self.run_button = QPushButton("Run again")
        self.run_button.setToolTip("Run every detector again on the model as it is now (heads off included)")
        self.run_button.clicked.connect(self.analysis.detect)
        top.addWidget(self.run_button)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.analysis.cancel_detect)
        top.addWidget(self.cancel_button)
        self.busy = QProgressBar()
        self.busy.setMaximumWidth(90)
        self.busy.setTextVisible(False)
        self.busy.setRange(0, 0)  # Qt's "busy" bar while the detectors run; a long probe's layer runs as progress
        top.addWidget(self.busy)
        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        top.addWidget(self.status_label, 1)
        v.addLayout(top)
        second = QHBoxLayout()  # the probe's length, beside which heads are off
        second.addWidget(QLabel("Probe length:"))
        self.length_edit = QLineEdit()
        self.length_edit.setFixedWidth(56)
        self.length_edit.setToolTip("Random tokens in each copy of the probe (then the same again): 2 up to what the "
                                    "model's positions hold (at most 4,096 positions). Empty: the default, 50. "
                                    "Press Enter to run the detectors at that length.")
        self.length_edit.editingFinished.connect(self._set_length)
        second.addWidget(self.length_edit)
        self.length_note = QLabel("")  # "tokens × 2 = 101 positions"
        second.addWidget(self.length_note)
        second.addSpacing(12)
        self.off_label = caption_label()
        second.addWidget(self.off_label, 1)
        v.addLayout(second)
        self.length_error = QLabel("")  # a refused probe length: why (the length kept shows in the field)
        self.length_error.setObjectName("errorLabel")
        self.length_error.setWordWrap(True)
        self.length_error.setVisible(False)
        v.addWidget(self.length_error)
        columns = QHBoxLayout()
        columns.setSpacing(6)
        self.left = QTabWidget()  # the scores and the scan take turns: each grid needs the height (144 heads)
        self.left.setDocumentMode(True)
        score_box = QWidget()
        sv = QVBoxLayout(score_box)
        sv.setContentsMargins(0, 0, 0, 0)
        sv.setSpacing(2)
        self.scores = ScoreGridView(session)
        sv.addWidget(self.scores, 1)
        self.scores_withheld = QLabel("")  # instead of the grid while a lesson's question covers the scores
        self.scores_withheld.setWordWrap(True)
        self.scores_withheld.setAlignment(Qt.AlignmentFlag.AlignCenter)
        sv.addWidget(self.scores_withheld, 1)
        self.score_caption = caption_label()
        sv.addWidget(self.score_caption)
        self.left.addTab(score_box, "Scores")
        self.scan = ScanPanel(session)
        self.left.addTab(self.scan, "Ablation scan")
        middle = QSplitter(Qt.Orientation.Vertical)  # drag the line between them for the map's or the curve's room
        middle.setChildrenCollapsible(False)
        self.pattern_window = PatternWindow(session)  # the map, its scroll bars, zoom, its caption with the window's
        self.pattern, self.pattern_caption = self.pattern_window.pattern, self.pattern_window.caption
        middle.addWidget(self.pattern_window)
        self.curve = LossCurveView(session)
        middle.addWidget(self.curve)
        middle.setStretchFactor(0, 1)
        middle.setStretchFactor(1, 1)
        self.middle = middle
        self.middle_tabs = QTabWidget()  # the two in turns, in a short view (``set_short``)
        self.middle_tabs.setDocumentMode(True)
        self.middle_tabs.hide()
        self.heads = HeadsList(session)
        self.heads.setFixedWidth(HEADS_WIDTH)
        columns.addWidget(self.left, 1)
        columns.addWidget(middle, 1)
        columns.addWidget(self.middle_tabs, 1)
        columns.addWidget(self.heads)
        v.addLayout(columns, 1)
        self.columns = columns
        self.narrow = self.short = False
        self.dark = False
        ev = self.analysis.events
        for sig in (ev.detection, ev.kind, ev.off, ev.status, ev.cover, ev.progress, self.analysis.probe.events.length,
                    session.events.selected):
            sig.connect(self.redraw)
        session.events.load.connect(self.redraw)
        follow_theme(self._restyle)  # draws now, and again in each new theme

    # ------------------------------------------------------------------ following the analysis
    def redraw(self) -> None:
        a = self.analysis
        with QSignalBlocker(self.kind_box):
            self.kind_box.setCurrentText(a.kind)
        has_model = self.session.model is not None
        self.run_button.setEnabled(has_model and not a.detecting)
        self.cancel_button.setEnabled(a.detecting)
        self.busy.setVisible(a.detecting)
        done, total = a.detect_progress
        self.busy.setRange(0, total)  # (0, 0): Qt's busy bar
        self.busy.setValue(done)
        self.busy.setToolTip(f"{done} of {total} layer runs" if total else "")
        self._show_length()
        self.status_label.setText(a.status)
        c = colors_for(self.dark)
        self.off_label.setText(span(off_html(a), c.bad) if a.off else off_html(a))
        grid = score_grid(a)
        self.scores.setVisible(not a.withheld)
        self.scores_withheld.setVisible(bool(a.withheld))
        self.scores_withheld.setText(f"<b>Scores</b>: {html.escape(a.withheld)}." if a.withheld else "")
        self.score_caption.setText(grid.caption if grid is not None else "" if a.withheld else
                                   "Run the detectors: each head's score appears here.")

    def _show_length(self) -> None:
        a, model = self.analysis, self.session.model
        self.length_edit.setEnabled(model is not None)
        d = a.detection
        asked = a.probe.tokens if a.probe.tokens is not None else (a.probe.default(model) if model else None)
        text = "" if asked is None else str(asked)
        if self.length_edit.text() != text and not self.length_edit.hasFocus():
            with QSignalBlocker(self.length_edit):
                self.length_edit.setText(text)
        self.length_note.setText(f"tokens × 2 = {d.positions:,} positions" if d is not None else "tokens × 2")
        self.length_note.setToolTip(f"at most {a.probe.room(model):,} tokens a copy on {model.name}"
                                    if model is not None else "")

    def _set_length(self) -> None:
        """The probe length typed: run at it, or say why not under the field and show the length kept."""
        try:
            self.analysis.set_probe_length(self.length_edit.text())
        except ValueError as exc:
            self.length_error.setText(span("⚠ " + html.escape(str(exc)), colors_for(self.dark).bad))
            self.length_error.setVisible(True)
            with QSignalBlocker(self.length_edit):
                self.length_edit.clearFocus()
            self._show_length()
            return
        self.length_error.setText("")
        self.length_error.setVisible(False)

    # ------------------------------------------------------------------ layout
    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.set_narrow(self.width() < NARROW)
        self.set_short(self.height() < SHORT)

    def set_short(self, short: bool) -> None:
        """The pattern above the loss curve, the line between them draggable (tall), or the two as tabs (short)."""
        if short == self.short:
            return
        self.short = short
        parts = (self.pattern_window, PATTERN_TAB), (self.curve, CURVE_TAB)
        if short:
            for part, title in parts:
                self.middle_tabs.addTab(part, title)
        else:
            self.middle_tabs.clear()  # (the pages are kept: the splitter takes them back)
            for part, _title in parts:
                self.middle.addWidget(part)
                part.show()  # a tab page that was not current is hidden
        self.middle.setVisible(not short)
        self.middle_tabs.setVisible(short)

    def set_narrow(self, narrow: bool) -> None:
        """The heads list as a third column (wide), or as a tab beside the scores and the scan (narrow)."""
        if narrow == self.narrow:
            return
        self.narrow = narrow
        if narrow:
            self.columns.removeWidget(self.heads)
            self.heads.setMinimumWidth(0)
            self.heads.setMaximumWidth(WIDGET_SIZE_MAX)
            self.left.addTab(self.heads, "Heads on/off")
        else:
            self.left.removeTab(self.left.indexOf(self.heads))
            self.heads.setFixedWidth(HEADS_WIDTH)
            self.columns.addWidget(self.heads)
            self.heads.show()  # a tab page that was not current is hidden: shown again here

    # ------------------------------------------------------------------ shown, hidden, theme
    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        self.analysis.set_shown(True)

    def hideEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self.analysis.set_shown(False)
        super().hideEvent(event)

    def _restyle(self, c: ThemeColors) -> None:
        self.dark = c.dark  # (the maps and the curve follow the theme themselves)
        self.redraw()
