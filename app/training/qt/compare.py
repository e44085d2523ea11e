"""Compare two recorded steps head by head, and show what switching heads off (ablation) does.

``CompareView``: a table of every head at a baseline step (default: step 0, the untrained model) against the
step shown in the grid: reversal score, entropy and focus, before, after and the change.
``AblationView``: the instructions for clicking heads off, and the accuracy / probe output with and without them.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.training.model.history import HeadComparison
from app.training.model.results import Ablation
from app.training.model.session import TrainingSession
from app.widgets.frame import RedrawWhenShown
from app.widgets.theme import LIGHT, ThemeColors, follow_theme, span

COMPARE_HELP = (
    "<b>rev</b> (copy, sort, ind: the run's task): the head's task score, the share of the test sequences' answer "
    "queries whose highest weight is on the task's ideal key (reversal: the query at L+p on the mirrored input "
    "L−1−p; 1 = a perfect head). "
    "<b>entropy</b> (nats) and <b>focus</b> (mean row maximum) are measured on the probe's L decoder queries: "
    "entropy falls and focus rises as a head learns to look at one token."
)


class CompareView(RedrawWhenShown, QWidget):
    """Per-head table: baseline step vs the step the grid shows. Follows the session's ``history`` and ``shown``
    (only while visible: a hidden table catches up when it is shown)."""

    COLUMNS = ("head", "rev", "entropy", "Δ ent.", "focus", "Δ focus")
    TIPS = ("layer and head", "reversal score: baseline → shown step", "entropy in nats: baseline → shown step",
            "change of entropy (negative: the head got sharper)", "focus: baseline → shown step",
            "change of focus (positive: the head got sharper)")

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        row = QHBoxLayout()
        row.addWidget(QLabel("baseline: snapshot"))
        self.baseline = QSpinBox()
        self.baseline.setRange(0, 0)
        self.baseline.setToolTip("The step to compare against (0 = the untrained model).")
        row.addWidget(self.baseline)
        self.caption = QLabel("vs. the step shown in the grid")
        self.caption.setWordWrap(True)
        self.caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        row.addWidget(self.caption, 1)
        layout.addLayout(row)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        for j, tip in enumerate(self.TIPS):
            if (header := self.table.horizontalHeaderItem(j)) is not None:
                header.setToolTip(tip)
        # never force the panel wider: scroll inside the table instead
        self.table.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Expanding)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        layout.addWidget(self.table, 1)
        help_label = QLabel(COMPARE_HELP)
        help_label.setWordWrap(True)
        help_label.setObjectName("mutedLabel")  # its colour: resources/styles/
        layout.addWidget(help_label)
        self.baseline.valueChanged.connect(lambda _v: self.redraw())
        self.rows: list[HeadComparison] = []
        self.colors = LIGHT
        session.events.history.connect(self.request_redraw)
        session.events.shown.connect(self.request_redraw)
        follow_theme(self._restyle)

    def _restyle(self, c: ThemeColors) -> None:
        """The theme: the colour of a change that means "the head got sharper"."""
        self.colors = c
        self.request_redraw()

    def redraw(self) -> None:
        """The session's history: its baseline snapshot against the shown one."""
        self._stale = False
        h, idx = self.session.history, self.session.shown_index
        if not len(h):
            self.rows = []
            self.table.setRowCount(0)
            self.caption.setText("no recorded steps yet")
            return
        self.set_steps([s.step for s in h])
        name = h[idx].score_name  # the shown run's task score
        if (header := self.table.horizontalHeaderItem(1)) is not None:
            header.setText(name)
            header.setToolTip(f"{h[idx].task} score: baseline → shown step")
        base = min(self.baseline.value(), len(h) - 1)
        self.set_rows(h.compare(base, idx), h[base].step, h[idx].step)

    def set_steps(self, steps: Sequence[int]) -> None:
        """The recorded steps (the spin box selects among their indices)."""
        with QSignalBlocker(self.baseline):
            self.baseline.setRange(0, max(0, len(steps) - 1))
        self.baseline.setSuffix(f"  (step {steps[min(self.baseline.value(), len(steps) - 1)]})" if steps else "")

    def set_rows(self, rows: Sequence[HeadComparison], before_step: int, after_step: int) -> None:
        self.rows = list(rows)
        self.caption.setText(f"vs. step {after_step} (shown in the grid); values: step {before_step} → "
                             f"step {after_step}")
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            cells = [f"L{r.layer + 1} H{r.head + 1}", f"{r.reversal_before:.2f} → {r.reversal_after:.2f}",
                     f"{r.entropy_before:.2f} → {r.entropy_after:.2f}", f"{r.entropy_change:+.2f}",
                     f"{r.focus_before:.2f} → {r.focus_after:.2f}", f"{r.focus_change:+.2f}"]
            for j, text in enumerate(cells):
                item = self.table.item(i, j)
                if item is None:
                    item = QTableWidgetItem()
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    self.table.setItem(i, j, item)
                item.setText(text)
                if j in (3, 5):
                    good = (r.entropy_change < -0.05) if j == 3 else (r.focus_change > 0.05)
                    # good: the theme's green; otherwise the table's own text colour (no brush)
                    item.setForeground(QColor(self.colors.good) if good else QBrush())


class AblationView(QWidget):
    """How to ablate, and the effect of the heads currently switched off: draws ``session.ablation`` (measured by
    the session on the model at the shown step) on every ``ablation`` event."""

    HELP = ("<b>Click a head</b> in the grid to switch it off: its output is zeroed before the output "
            "projection, the rest of the model is unchanged. Click it again to switch it back on. Ablation acts "
            "on the model at the step the grid shows (scrub the timeline to ablate an earlier step) while "
            "training is paused or stopped; training switches every head back on before it continues. A single "
            "head often changes nothing — trained heads back each other up; switch several off to see the copy "
            "break.")

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        help_label = QLabel(self.HELP)
        help_label.setWordWrap(True)
        layout.addWidget(help_label)
        self.result = QLabel("No head is switched off.")
        self.result.setWordWrap(True)
        self.result.setTextFormat(Qt.TextFormat.RichText)
        self.result.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.result, 1)
        self.restore_button = QPushButton("Switch every head back on")
        self.restore_button.setEnabled(False)
        layout.addWidget(self.restore_button)
        self.restore_button.clicked.connect(session.restore_heads)
        self.colors = LIGHT
        session.events.ablation.connect(self.set_result)
        self.set_result(session.ablation)
        follow_theme(self._restyle)

    def _restyle(self, c: ThemeColors) -> None:
        """The theme: the colours of a loss and a gain."""
        self.colors = c
        self.set_result(self.session.ablation)

    def set_result(self, a: Ablation | None) -> None:
        """Draw an ``Ablation`` (None: no model yet)."""
        if a is None:
            self.restore_button.setEnabled(False)
            self.result.setText("No model yet: Start, Step or Load one, then click a head.")
            return
        off = a.off
        self.restore_button.setEnabled(bool(off))
        if not off:
            measured = ("" if a.evaluated_at is None or a.evaluated_at == a.step else
                        f" (last evaluated at step {a.evaluated_at})")
            if a.evaluated_at is None:
                self.result.setText(f"No head is switched off. Model at step {a.step}: not evaluated yet.")
            else:
                self.result.setText(f"No head is switched off. Model at step {a.step}{measured}: exact-sequence "
                                    f"test accuracy {a.base_seq:.1%}, per-token {a.base_tok:.1%}.")
            return
        names = ", ".join(f"layer {li + 1} head {h + 1}" for li, h in off)

        def pct(v: float) -> str:
            return f"{v:.1%}"

        c = self.colors

        def delta(a: float, b: float) -> str:
            color = c.bad if b < a - 0.005 else c.good if b > a + 0.005 else c.muted
            return span(f"{(b - a) * 100:+.1f} pts", color)

        probe_in, probe_base, probe_now = (" ".join(str(t) for t in p) for p in (a.probe_in, a.probe_base,
                                                                                   a.probe_now))
        changed = " " + span("(changed)", c.bad, bold=True) if probe_base != probe_now else " (unchanged)"
        self.result.setText(
            f"<b>Switched off</b> (model at step {a.step}): {names}<br>"
            f"<table cellspacing='6'><tr><th></th><th align='right'>all heads</th><th align='right'>now</th>"
            f"<th></th></tr>"
            f"<tr><td>exact-sequence test accuracy (greedy)</td><td align='right'>{pct(a.base_seq)}</td>"
            f"<td align='right'><b>{pct(a.now_seq)}</b></td><td>{delta(a.base_seq, a.now_seq)}"
            f"</td></tr>"
            f"<tr><td>per-token test accuracy (teacher-forced)</td><td align='right'>{pct(a.base_tok)}</td>"
            f"<td align='right'><b>{pct(a.now_tok)}</b></td><td>{delta(a.base_tok, a.now_tok)}"
            f"</td></tr></table>"
            f"Probe {probe_in} → all heads: <b>{probe_base}</b>, now: <b>{probe_now}</b>{changed}")
