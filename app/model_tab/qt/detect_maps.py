"""The Detect view's pictures, each following the session's ``HeadsAnalysis`` (``app.model_tab.model.detect``) and
drawing what ``app.model_tab.model.detect_views`` derives: the detector's layer × head grid, the picked head on the
probe with the detector's ideal pattern circled, the loss per position on the repeated tokens, and the ablation
scan's grid with its controls. They compute nothing; clicks call the analysis or the session, and the wheel over
the pattern or the curve moves the probe's window (``wheel_moves_window``: the head map's gestures)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.detect_probe import DetectProbe
from app.model_tab.model.detect_runs import SCAN_HOWS, SCAN_MEASURES
from app.model_tab.model.detect_views import (
    FIRST_COPY,
    MEASURE_TEXT,
    SECOND_COPY,
    Grid,
    pattern,
    repeat_curve,
    scan_grid,
    scan_progress_text,
    score_grid,
)
from app.model_tab.model.session import InspectSession
from app.widgets.frame import RedrawWhenShown
from app.widgets.grid.overlay import MapOverlay
from app.widgets.heatmap.style import elided_title, let_title_overflow
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.theme import LIGHT, ThemeColors, follow_theme, span, style_plot, style_view

SCAN_PLACEHOLDER = ("<b>Ablation scan</b>: press <b>Scan every head</b> to switch each head off alone and measure how "
                    "much the loss rises without it (a grid of loss changes appears here; click a head on it to switch "
                    "that head off).")


def caption_label(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName("captionLabel")
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


def withheld_refusal(reason: str) -> dict[str, Any]:
    """A map's export extras: none, or refused with the lesson's reason while its numbers are withheld (the grid
    keeps what it drew before the cover, so the file would give the answer away)."""
    if reason:
        raise ValueError(reason)
    return {}


def wheel_moves_window(probe: DetectProbe, event: Any) -> bool:
    """The probe window's gestures, as the head map's: the wheel moves queries and keys a quarter of the window a
    notch, Shift+wheel the keys alone, Ctrl+wheel zooms; True when the event was one of them."""
    if event.type() != QEvent.Type.Wheel:
        return False
    delta = event.angleDelta()
    notches = (delta.y() or delta.x()) / 120  # Shift turns the wheel sideways on some platforms
    if not notches:
        return False
    mods = event.modifiers()
    if mods & Qt.KeyboardModifier.ControlModifier:
        probe.zoom(notches)
    else:
        probe.scroll(notches, keys_only=bool(mods & Qt.KeyboardModifier.ShiftModifier))
    return True


def show_grid(hm: HeatmapWidget, grid: Grid) -> None:
    """Draw a layer × head ``Grid`` on a heatmap (its outlined cells as the heatmap's highlights)."""
    hm.set_data(grid.values, grid.rows, grid.cols, blocked=grid.blocked, kind=grid.kind, title=grid.title,
                row_title="layer", col_title="head", row_sums=False)
    hm.set_highlight(cells=grid.outlined)


class ScoreGridView(RedrawWhenShown, HeatmapWidget):
    """The detector's score for every head (numbers in the cells), the picked head selected; a click picks it."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent, title="Detector scores")
        self.session, self.analysis = session, session.heads
        self.grid: Grid | None = None
        self.cellClicked.connect(self._pick)
        self.export_extras = lambda: withheld_refusal(self.analysis.withheld)
        for sig in (self.analysis.events.detection, self.analysis.events.kind, self.analysis.events.off,
                    self.analysis.events.cover, session.events.selected):
            sig.connect(self.request_redraw)

    def redraw(self) -> None:
        self._stale = False
        self.grid = score_grid(self.analysis)
        if self.grid is None:
            return
        show_grid(self, self.grid)
        self.set_selected(self.session.selected)

    def _pick(self, layer: int, head: int) -> None:
        if self.grid is not None:
            self.session.select_head(layer, head)


class PatternView(RedrawWhenShown, HeatmapWidget):
    """The picked head's weights on the first probe sequence through the probe's window (all of a short probe), the
    detector's ideal cells circled (the head grid's circles, ``MapOverlay``); the wheel moves the window."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent, title="Pick a head in the score grid")
        self.session, self.analysis = session, session.heads
        self.circles = MapOverlay()
        self.circles.show_boundary = False  # the heatmap hatches the mask's cells itself
        self.plot.addItem(self.circles)
        self.set_show_numbers(False)  # the circles must read; the Head view has the numbers
        self.caption = ""
        self.start = (0, 0)  # the first (query, key) shown
        self._shown: tuple[object, ...] = ()  # what the map was drawn from (``redraw`` skips drawing it again)
        for sig in (self.analysis.events.detection, self.analysis.events.kind, self.analysis.events.cover,
                    self.analysis.probe.events.window, session.events.selected):
            sig.connect(self.request_redraw)
        self.graphics.viewport().installEventFilter(self)

    def marks(self) -> list[tuple[int, int]]:
        """The (query, key) cells circled, in the window's coordinates (the probe's own for a whole probe)."""
        return list(self.circles.marks)

    def eventFilter(self, watched: QObject, event: Any) -> bool:  # noqa: N802 (Qt API)
        return wheel_moves_window(self.analysis.probe, event)

    def redraw(self) -> None:
        self._stale = False
        a = self.analysis
        shown = (id(a.detection), self.session.selected, a.kind, a.withheld, a.probe.window)
        if shown == self._shown and a.detection is not None:
            return  # the detectors started (or their status changed) with the same map: a repaint of ~10,000
            # hatched cells on the GUI thread for nothing (~0.1-0.2 s of stall as a long probe started)
        self._shown = shown
        p = pattern(a, *self.session.selected)
        if p is None:
            self.circles.set_content(0, None, [])
            return
        self.set_data(p.values, p.labels, p.cols or p.labels, blocked=p.blocked, kind="weights", title=p.title,
                      row_sums=False)
        self.circles.set_content(len(p.labels), None, p.marks)
        self.caption, self.start = p.caption, p.start
        self.graphics.setToolTip(p.caption)


class LossCurveView(RedrawWhenShown, QWidget):
    """The probe's loss at every position of the window: the curve, the two halves' means as flat lines, where the
    repeat starts, and (with heads off) the model with every head on in grey; the wheel moves the window."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.analysis = session.heads
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setLabel("bottom", "predicted position")  # short: the column is ~220 px wide at 1024 x 640
        self.plot.setLabel("left", "loss (nats)")
        for name in ("left", "bottom"):  # positions and nats as they are: no "(x0.001)" on an empty axis
            self.plot.getAxis(name).enableAutoSIPrefix(False)
        self.plot.showGrid(y=True, alpha=0.25)
        self.plot.setMouseEnabled(x=False, y=False)  # the wheel moves the probe's window instead
        self.plot_widget.viewport().installEventFilter(self)
        # a long title was the plot's minimum width: in the Detect tab's narrow middle column at 1024 x 640 the plot
        # ran under the heads list, its title and axis cut; now the title is elided to the width (``_show_title``)
        let_title_overflow(self.plot.titleLabel)
        self._title, self._drawn = "", False
        v.addWidget(self.plot_widget, 1)
        self.caption = caption_label()
        v.addWidget(self.caption)
        self.colors: ThemeColors = LIGHT
        self.clean_curve = self.plot.plot()
        self.curve = self.plot.plot()
        self.first_line = self.plot.plot()
        self.second_line = self.plot.plot()
        self.repeat_line = pg.InfiniteLine(angle=90, movable=False)
        self.plot.addItem(self.repeat_line)
        self._style()
        self.analysis.events.detection.connect(self.request_redraw)
        self.analysis.probe.events.window.connect(self.request_redraw)
        self.redraw()
        follow_theme(self._restyle)

    def eventFilter(self, watched: QObject, event: Any) -> bool:  # noqa: N802 (Qt API)
        return wheel_moves_window(self.analysis.probe, event)

    def _show_title(self, title: str, drawn: bool) -> None:
        """``title`` elided to the plot's width, the whole of it in the tooltip; no numbers on empty axes."""
        self._title, self._drawn = title, drawn
        font = self.plot_widget.font()
        font.setPointSizeF(9)
        text = elided_title(title, font, self.plot_widget.width() - 16)
        self.plot.setTitle(text, size="9pt")
        self.plot_widget.setToolTip(title if text != title else "")
        for name in ("left", "bottom"):
            self.plot.getAxis(name).setStyle(showValues=drawn)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if self._title:
            self._show_title(self._title, self._drawn)

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self._style()
        self.redraw()

    def _style(self) -> None:
        c = self.colors
        style_view(self.plot_widget, c)
        style_plot(self.plot, c)
        self.curve.setPen(pg.mkPen(c.blue, width=2))
        self.curve.setSymbol("o")
        self.curve.setSymbolSize(4)
        self.curve.setSymbolBrush(c.blue)
        self.curve.setSymbolPen(None)
        self.clean_curve.setPen(pg.mkPen(c.grey, width=1.5, style=Qt.PenStyle.DashLine))
        self.first_line.setPen(pg.mkPen(c.orange, width=2))
        self.second_line.setPen(pg.mkPen(c.good, width=2))
        self.repeat_line.setPen(pg.mkPen(c.muted, width=1, style=Qt.PenStyle.DotLine))

    def redraw(self) -> None:
        self._stale = False
        cv = repeat_curve(self.analysis)
        if cv is None:
            for item in (self.curve, self.clean_curve, self.first_line, self.second_line):
                item.setData([], [])
            self._show_title("Loss per position on repeated random tokens: run the detectors", False)
            self.caption.setText("")
            return
        self._show_title(cv.title, True)
        x, y, clean = cv.window_points()  # the window's positions alone (at most 512 points)
        self.curve.setData(x, y)
        self.clean_curve.setData([] if clean is None else x, [] if clean is None else clean)
        (a0, a1, am), (b0, b1, bm) = cv.first, cv.second
        self.first_line.setData([a0, a1], [am, am])
        self.second_line.setData([b0, b1], [bm, bm])
        self.repeat_line.setValue(cv.repeat_at)
        top = float(np.nanmax([cv.y.max(), am, *([] if cv.clean is None else [cv.clean.max()])]))
        self.plot.setYRange(0.0, max(top * 1.1, 0.5), padding=0)
        self.plot.setXRange(cv.shown[0] - 0.5, cv.shown[1] + 0.5, padding=0)
        c = self.colors
        key = (f"{span('●', c.blue)} loss {span('━', c.orange)} {FIRST_COPY} {am:.2f} {span('━', c.good)} "
               f"{SECOND_COPY} {bm:.2f} nats (mean of {cv.sequences} sequences)" +
               (f" {span('╌', c.grey)} every head on" if cv.clean is not None else ""))
        self.caption.setText(f"{key}. {cv.caption}")


class ScanPanel(QWidget):
    """Scan every head (zero or mean ablation), its progress and Cancel, and the grid of loss changes (the
    repeated tokens' or your text's); clicking a head there switches it off or on."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.analysis = session, session.heads
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        row = QHBoxLayout()
        self.scan_button = QPushButton("Scan every head")
        self.scan_button.setToolTip("Switch each head off alone and measure how much the loss rises, on your text "
                                    "and on the repeated random tokens (the heads off now stay off)")
        self.scan_button.clicked.connect(self.analysis.start_scan)
        row.addWidget(self.scan_button)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.analysis.cancel_scan)
        row.addWidget(self.cancel_button)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        row.addWidget(self.progress, 1)
        v.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Off as:"))
        self.how_box = QComboBox()
        self.how_box.addItems(list(SCAN_HOWS))
        self.how_box.setToolTip("zero: the head's output replaced by zeros; mean: by its mean output (keeps what "
                                "it says on average, removes what it says about this token)")
        self.how_box.currentTextChanged.connect(self.analysis.set_scan_how)
        row.addWidget(self.how_box)
        row.addWidget(QLabel("loss on:"))
        self.measure_box = QComboBox()
        self.measure_box.setToolTip("Which loss the grid shows (a scan measures both)")
        for m in SCAN_MEASURES:
            self.measure_box.addItem(MEASURE_TEXT[m], m)
        self.measure_box.currentIndexChanged.connect(
            lambda i: self.analysis.set_scan_measure(self.measure_box.itemData(i)))
        row.addWidget(self.measure_box, 1)
        v.addLayout(row)
        self.grid = HeatmapWidget(title="Ablation scan")
        self.grid.export_extras = lambda: withheld_refusal(self.analysis.scan_withheld)
        self.grid.cellClicked.connect(self._toggle)
        v.addWidget(self.grid, 1)
        self.placeholder = QLabel(SCAN_PLACEHOLDER)
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        v.addWidget(self.placeholder, 1)
        self.caption = caption_label()
        v.addWidget(self.caption)
        self.shown_grid: Grid | None = None
        for sig in (self.analysis.events.scan, self.analysis.events.off, self.analysis.events.cover,
                    session.events.trace):
            sig.connect(self.redraw)
        self.redraw()

    def redraw(self) -> None:
        a = self.analysis
        with QSignalBlocker(self.how_box), QSignalBlocker(self.measure_box):
            self.how_box.setCurrentText(a.scan_how)
            self.measure_box.setCurrentIndex(list(SCAN_MEASURES).index(a.scan_measure))
        self.scan_button.setEnabled(not a.scanning and self.session.trace is not None)
        self.cancel_button.setEnabled(a.scanning and not a.scan_cancelling)
        done, total = a.scan_progress
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done if a.scanning or a.scan is not None else 0)
        self.progress.setFormat(scan_progress_text(a))
        self.shown_grid = scan_grid(a)
        self.grid.setVisible(self.shown_grid is not None)
        self.placeholder.setVisible(self.shown_grid is None)
        self.placeholder.setText(f"<b>Ablation scan</b>: {html.escape(a.scan_withheld)}." if a.scan_withheld
                                 else SCAN_PLACEHOLDER)
        self.caption.setVisible(self.shown_grid is not None)
        if self.shown_grid is None:
            return
        show_grid(self.grid, self.shown_grid)
        self.caption.setText(self.shown_grid.caption)

    def _toggle(self, layer: int, head: int) -> None:
        if self.shown_grid is not None:
            self.analysis.toggle(layer, head)
