"""The Model tab's Cause view: what a prediction depends on, by reading and intervening (Lens, Attribution, Patch,
Knockout, one tab each), following ``session.cause`` (``app.model_tab.model.cause``), which runs everything off the
GUI thread. While the view is shown the lens and the attribution follow the text, the model and the token hovered
in the strip. Layout and drawing only (the Lens and Attribution panels are in ``cause_panels``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.cause_views import SWEEP_HELP, SWEEPS, patch_axes
from app.model_tab.model.session import InspectSession
from app.model_tab.qt.cause_panels import (
    AttributionPanel,
    LensPanel,
    caption_label,
    error_label,
    show_error,
    token_field,
)
from app.widgets.frame import RedrawWhenShown
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.theme import LIGHT, ThemeColors, follow_theme


class PatchPanel(RedrawWhenShown, QWidget):
    """The corrupted text, target/foil, the sweep; Patch runs it with progress and Cancel; the restored fraction
    as a map with a read-out of the cell under the pointer."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.cause = session, session.cause
        self.colors = LIGHT
        v = QVBoxLayout(self)
        v.setContentsMargins(2, 2, 2, 2)
        row = QHBoxLayout()
        row.addWidget(QLabel("Corrupted:"))
        self.corrupted_edit = QLineEdit()
        self.corrupted_edit.setPlaceholderText("the same text with one thing changed (as many tokens)")
        self.corrupted_edit.setToolTip("Run this text, and put one activation of your text back at a time")
        self.corrupted_edit.returnPressed.connect(self._patch)
        row.addWidget(self.corrupted_edit, 1)
        v.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Target:"))
        self.target_edit = token_field("top prediction", "One token; empty: your text's top prediction")
        row.addWidget(self.target_edit)
        row.addWidget(QLabel("Foil:"))
        self.foil_edit = token_field("none", "One token; the metric is logit(target) − logit(foil)")
        row.addWidget(self.foil_edit)
        self.sweep_box = QComboBox()
        for s in SWEEPS:
            self.sweep_box.addItem(s, s)
            self.sweep_box.setItemData(self.sweep_box.count() - 1, SWEEP_HELP[s], 3)  # 3: ToolTipRole
        self.sweep_box.currentIndexChanged.connect(lambda _i: self.cause.set_sweep(self.sweep_box.currentData()))
        row.addWidget(self.sweep_box)
        self.patch_button = QPushButton("Patch")
        self.patch_button.clicked.connect(self._patch)
        row.addWidget(self.patch_button)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cause.cancel_patch)
        row.addWidget(self.cancel_button)
        self.progress = QProgressBar()
        row.addWidget(self.progress, 1)
        v.addLayout(row)
        self.error = error_label()
        v.addWidget(self.error)
        self.caption = caption_label()
        v.addWidget(self.caption)
        self.map = HeatmapWidget(title="Restored fraction")
        self.map.cellHovered.connect(self._hover)
        v.addWidget(self.map, 1)
        self.readout = QLabel(" ")
        v.addWidget(self.readout)
        self.cause.events.patch.connect(self.request_redraw)
        follow_theme(self._restyle)
        self.redraw()

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.redraw()

    def _patch(self) -> None:
        c = self.cause
        if c.set_corrupted(self.corrupted_edit.text()) and c.set_patch_tokens(self.target_edit.text(),
                                                                              self.foil_edit.text()):
            c.start_patch()

    def _hover(self, r: int, col: int) -> None:
        p = self.cause.patching
        if p is None or r < 0:
            self.readout.setText(" ")
            return
        values, rows, cols, row_title, col_title = patch_axes(p)
        v = values[r, col]
        raw = np.asarray(p.values).reshape(values.shape)[r, col]
        fed = f" (feeds query heads {', '.join(map(str, p.feeds[col]))})" if p.feeds and col < len(p.feeds) else ""
        self.readout.setText(f"{row_title} {rows[r]}, {col_title} {cols[col]!r}{fed}: restored "
                             f"{'—' if not np.isfinite(v) else f'{v:.3f}'}, metric "
                             f"{'—' if not np.isfinite(raw) else f'{raw:+.4f}'}")

    def redraw(self) -> None:
        self._stale = False
        c = self.cause
        with QSignalBlocker(self.sweep_box):
            self.sweep_box.setCurrentIndex(SWEEPS.index(c.sweep))
        if c.corrupted and not self.corrupted_edit.text():
            self.corrupted_edit.setText(c.corrupted)
        show_error(self.error, c.patch_error, self.colors)
        self.caption.setText(c.patch_caption())
        ready = self.session.trace is not None and not c.patch_running
        self.patch_button.setEnabled(ready)
        self.cancel_button.setEnabled(c.patch_running)
        done, total = c.patch_progress
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done} / {total} cells" if total else "")
        p = c.patching
        self.map.setVisible(p is not None)  # a result for another text is not drawn: it was cleared
        if p is None:
            return
        values, rows, cols, row_title, col_title = patch_axes(p)
        top = max(1.0, float(np.nanmax(np.abs(values), initial=0.0)))  # 1 = all restored: the colour reads as such
        self.map.set_data(np.nan_to_num(values, nan=0.0), rows, cols, blocked=~np.isfinite(values), kind="signed",
                          title=f"Restored fraction ({p.sweep})", row_title=row_title, col_title=col_title,
                          levels=(-top, top))


class KnockoutPanel(RedrawWhenShown, QWidget):
    """Query→key cells and layers to block; the next-token distribution before and after and the KL."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.cause = session, session.cause
        self.colors = LIGHT
        v = QVBoxLayout(self)
        v.setContentsMargins(2, 2, 2, 2)
        row = QHBoxLayout()
        row.addWidget(QLabel("Cells:"))
        self.edges_edit = QLineEdit()
        self.edges_edit.setPlaceholderText("query→key, … e.g. 9→0, 9→1 (positions from 0; -> works too)")
        row.addWidget(self.edges_edit, 1)
        row.addWidget(QLabel("Layers:"))
        self.layers_edit = QLineEdit("all")
        self.layers_edit.setToolTip("all, layers (0, 1) and/or heads (1.2)")
        self.layers_edit.setMaximumWidth(120)
        row.addWidget(self.layers_edit)
        self.run_button = QPushButton("Knock out")
        self.run_button.clicked.connect(self._run)
        for edit in (self.edges_edit, self.layers_edit):
            edit.returnPressed.connect(self._run)
        row.addWidget(self.run_button)
        v.addLayout(row)
        self.error = error_label()
        v.addWidget(self.error)
        self.caption = caption_label()
        v.addWidget(self.caption)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["before", "p", "after", "p"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        v.addWidget(self.table, 1)
        self.cause.events.knockout.connect(self.request_redraw)
        follow_theme(self._restyle)
        self.redraw()

    def _restyle(self, c: ThemeColors) -> None:
        self.colors = c
        self.redraw()

    def _run(self) -> None:
        self.cause.set_knockout(self.edges_edit.text(), self.layers_edit.text())

    def redraw(self) -> None:
        self._stale = False
        c = self.cause
        show_error(self.error, c.knock_error, self.colors)
        self.caption.setText(c.knockout_caption())
        self.run_button.setEnabled(self.session.trace is not None)
        k = c.knockout
        rows = [] if k is None else list(zip(k.top_before, k.top_after))
        self.table.setRowCount(len(rows))
        for r, (b, a) in enumerate(rows):
            for j, text in enumerate((repr(b[0]), f"{b[2]:.4f}", repr(a[0]), f"{a[2]:.4f}")):
                self.table.setItem(r, j, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()


class CauseView(QWidget):
    """Lens, Attribution, Patch, Knockout; tells ``session.cause`` whether it is on screen."""

    def __init__(self, session: InspectSession, open_head: Callable[[], Any] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        self.tabs = QTabWidget()
        self.lens = LensPanel(session)
        self.attribution = AttributionPanel(session, open_head)
        self.patch = PatchPanel(session)
        self.knockout = KnockoutPanel(session)
        self.tabs.addTab(self.lens, "Lens")
        self.tabs.addTab(self.attribution, "Attribution")
        self.tabs.addTab(self.patch, "Patch")
        self.tabs.addTab(self.knockout, "Knockout")
        v.addWidget(self.tabs)

    @property
    def readout(self) -> str:
        """What the tab's read-out line says while this view is in front (the hovered token's position)."""
        p = self.session.hovered
        return f"The lens and the attribution are at position {p} (the token under the pointer)." if p is not None \
            else ""

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        self.session.cause.set_shown(True)

    def hideEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().hideEvent(event)
        self.session.cause.set_shown(False)
