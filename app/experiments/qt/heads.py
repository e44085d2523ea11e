"""Two runs' heads side by side at one step: two run pickers and a step slider, each run's head grid (``HeadGrid``:
the attention maps on its probe sequence, sparklines of each head's task score and focus), and under them the
per-head attention entropy of both and its difference, the mean change, and (when the runs differ in the causal
mask) the report's causal-entropy claim measured. Everything shown is ``ExperimentSession.compare``'s;
``write_compare_figure`` draws the two grids and their numbers for a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.widgets.frame import FrameCoalescer
from app.widgets.grid.head_grid import HeadGrid
from app.widgets.theme import ThemeColors, colors_for, follow_theme

if TYPE_CHECKING:
    from app.experiments.model.compare import CompareSide
    from app.experiments.model.session import ExperimentSession

SIDE_WIDTH = 264
MAX_TABLE_ROWS = 8
SPARK_TEXT = ("Under each map: orange = the head's task score at each evaluation (how often its strongest key is where "
              "the task's ideal pattern says), blue = its focus on the probe (mean row maximum over the answer "
              "queries); the grey line marks the step.")


def _wrapping(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class CompareGrids(QWidget):
    """The two grids with their titles, the entropy table and the lines under it (the part a file shows too)."""

    def __init__(self, model: ExperimentSession, parent: QWidget | None = None, dark: bool | None = None) -> None:
        """``dark``: None follows the application's theme; True or False is fixed (the grids made for a file)."""
        super().__init__(parent)
        self.model = model
        self._dark = bool(dark)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        grid = QGridLayout()
        grid.setVerticalSpacing(2)
        self.titles = {w: QLabel() for w in ("a", "b")}
        self.grids = {w: HeadGrid(dark=dark) for w in ("a", "b")}
        for col, w in enumerate(("a", "b")):
            self.titles[w].setAlignment(Qt.AlignmentFlag.AlignHCenter)
            grid.addWidget(self.titles[w], 0, col)
            grid.addWidget(self.grids[w], 1, col)
        grid.setRowStretch(1, 1)
        row.addLayout(grid, 1)
        side = QVBoxLayout()
        side.setSpacing(4)
        self.entropy_table = QTableWidget(0, 3)
        self.entropy_table.setHorizontalHeaderLabels(["A", "B", "Δ B − A"])
        self.entropy_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.entropy_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.entropy_table.verticalHeader().setDefaultSectionSize(20)
        self.entropy_table.setToolTip("Per head (layer · head): A's attention entropy, B's, and B − A (nats)")
        self.entropy_table.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.entropy_table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.entropy_title = _wrapping("<b>Attention entropy per head (nats)</b>")
        side.addWidget(self.entropy_title)
        side.addWidget(self.entropy_table)
        self.mean_label = _wrapping()
        self.claim_label = _wrapping()
        self.caption_label = _wrapping()
        for label in (self.mean_label, self.claim_label, self.caption_label):
            side.addWidget(label)
        side.addStretch(1)
        holder = QWidget()
        holder.setLayout(side)
        scroll = QScrollArea()  # a low window: the numbers scroll, the grids keep their height
        scroll.setWidget(holder)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setFixedWidth(SIDE_WIDTH)
        row.addWidget(scroll)
        if dark is None:
            follow_theme(self._restyle)

    def _restyle(self, c: ThemeColors) -> None:
        self._dark = c.dark  # (the grids follow the theme themselves)
        self.refresh()

    def refresh(self) -> None:
        compare = self.model.compare
        c = colors_for(self._dark)
        for w in ("a", "b"):
            self._show_side(w, compare.side(w))
        diff = compare.entropy_difference()
        a, b = compare.side("a"), compare.side("b")
        self._fill_entropy(a, b, diff)
        change = compare.mean_change()
        self.mean_label.setText("" if change is None else (
            f"Mean: A {change[0]:.2f} → B {change[1]:.2f} nats ({change[2] * 100:+.0f} % from A to B)"
            .replace("-", "−")))
        claim = self.model.causal_line
        self.claim_label.setText("" if claim is None else f"<b>{claim[0].upper() + claim[1:]}.</b>")
        self.claim_label.setVisible(claim is not None)
        self.caption_label.setText(f"<span style='color:{c.muted}'>{compare.caption()} {SPARK_TEXT}</span>")

    def _show_side(self, w: str, side: CompareSide) -> None:
        grid, snap = self.grids[w], side.snapshot
        self.titles[w].setText(f"<b>{'A' if w == 'a' else 'B'}: {side.name}</b>"
                               + (f" · step {snap.step}" if snap is not None else ""))
        if snap is None:
            grid.show_message("not trained yet")
            return
        runs = self.model.trained_runs
        entropy = side.entropy
        grid.set_maps(snap.probe_weights, snap.labels, seq_len=snap.seq_len, causal=snap.causal,
                      reversal=snap.task_scores, entropy=entropy if entropy is not None else snap.entropy,
                      focus=snap.focus, ideal=snap.ideal, score_name=snap.score_name)
        grid.set_show_ideal(snap.ideal is not None)  # circles: the run's task's ideal pattern on its probe
        steps, scores, focus = self.model.compare.sparklines(w)
        total = runs[side.index].config.total_steps if side.index < len(runs) else None
        grid.set_sparklines(steps, scores, focus, cursor_step=float(snap.step), max_step=total)

    def _fill_entropy(self, a: CompareSide, b: CompareSide, diff: np.ndarray | None) -> None:
        """One row per head (``L1 · H2``): A's entropy, B's, and B − A (blank when the runs' heads differ)."""
        t = self.entropy_table
        ea, eb = a.entropy, b.entropy
        if ea is None or eb is None:
            t.setRowCount(0)
            return
        shape = ea.shape if ea.size >= eb.size else eb.shape
        cells = [(li, h) for li in range(shape[0]) for h in range(shape[1])]
        t.setRowCount(len(cells))
        t.setVerticalHeaderLabels([f"L{li + 1} · H{h + 1}" for li, h in cells])
        for r, (li, h) in enumerate(cells):
            va = f"{ea[li, h]:.2f}" if li < ea.shape[0] and h < ea.shape[1] else ""
            vb = f"{eb[li, h]:.2f}" if li < eb.shape[0] and h < eb.shape[1] else ""
            vd = f"{diff[li, h]:+.2f}".replace("-", "−") if diff is not None else ""
            for c, text in enumerate((va, vb, vd)):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                t.setItem(r, c, item)
        t.setFixedHeight(t.horizontalHeader().height() + 20 * min(len(cells), MAX_TABLE_ROWS) + 4)

    def entropy_texts(self) -> list[list[str]]:
        t = self.entropy_table
        return [[item.text() if (item := t.item(i, j)) else "" for j in range(t.columnCount())]
                for i in range(t.rowCount())]


class ExperimentHeads(QWidget):
    """Run pickers, the step slider, and the two grids (``CompareGrids``) following the model."""

    def __init__(self, model: ExperimentSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.pickers = {w: QComboBox() for w in ("a", "b")}
        for w, combo in self.pickers.items():
            row.addWidget(QLabel("Run A:" if w == "a" else "Run B:"))
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            combo.currentIndexChanged.connect(self._on_pick)
            row.addWidget(combo)
        row.addWidget(QLabel("step:"))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setMinimumWidth(120)
        self.slider.valueChanged.connect(self._on_slider)
        row.addWidget(self.slider, 1)
        self.step_label = QLabel()
        row.addWidget(self.step_label)
        row.addSpacing(34)  # the Export button sits in this corner
        box.addLayout(row)
        self.grids = CompareGrids(model)
        box.addWidget(self.grids, 1)
        self._syncing = False
        self._dirty = True
        self.refresh_soon = FrameCoalescer(self.refresh, 200, self)
        model.events.compare.connect(self.refresh_soon)
        model.events.sessions.connect(self.fill_pickers)
        model.events.runs.connect(self.fill_pickers)
        self.fill_pickers()

    def fill_pickers(self) -> None:
        runs = self.model.trained_runs if self.model.sessions else self.model.runs
        names = [f"{i + 1}: {r.name}" for i, r in enumerate(runs)]
        self._syncing = True
        for w, combo in self.pickers.items():
            if [combo.itemText(i) for i in range(combo.count())] != names:
                combo.clear()
                combo.addItems(names)
            combo.setCurrentIndex(getattr(self.model.compare, w) if names else -1)
        self._syncing = False
        self.refresh()

    def _on_pick(self, _index: int) -> None:
        if self._syncing:
            return
        a, b = self.pickers["a"].currentIndex(), self.pickers["b"].currentIndex()
        if a >= 0 and b >= 0:
            self.model.compare.set_pair(a, b)

    def _on_slider(self, value: int) -> None:
        if not self._syncing:
            self.model.compare.set_step(value)

    def refresh(self) -> None:
        """Follow the model (behind another view: once it is shown again)."""
        if not self.isVisible():
            self._dirty = True
            return
        self._dirty = False
        compare = self.model.compare
        self._syncing = True
        top, step = compare.max_step, compare.step
        self.slider.setEnabled(top is not None)
        self.slider.setRange(0, top or 0)
        self.slider.setValue(step or 0)
        for w, combo in self.pickers.items():
            if combo.currentIndex() != getattr(compare, w):
                combo.setCurrentIndex(getattr(compare, w))
        self._syncing = False
        self.step_label.setText("–" if step is None else f"{step} / {top}")
        self.grids.refresh()

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self._dirty:
            self.refresh()


def write_compare_figure(path: str | Path, model: ExperimentSession, context: str = "") -> str:
    """The two runs' grids, entropy table and lines as one light figure for a file (PNG, SVG or PDF); the plain
    title (also in the file's metadata)."""
    from app.common.titles import full_title, title_html
    from app.widgets.qt_compat import delete_now
    from app.widgets.rendering import ensure_application, light_figure, render_widget

    ensure_application()
    compare = model.compare
    a, b = compare.side("a"), compare.side("b")
    title = f"Heads side by side at step {compare.step}: {a.name} vs {b.name}"
    fig, box = light_figure()
    label = QLabel(title_html(title, context, size_pt=9.0))
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    label.setWordWrap(True)
    grids = CompareGrids(model, dark=False)
    box.addWidget(label)
    box.addWidget(grids, 1)
    try:
        grids.refresh()
        layers, heads = grids.grids["a"].shape
        fig.resize(max(900, 2 * 170 * max(heads, 1) + 120), 260 + 250 * max(layers, 1))
        plain = full_title(title, context)
        render_widget(fig, Path(path), title=plain)
    finally:
        delete_now(fig)
    return plain
