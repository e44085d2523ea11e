"""Try it: type a sequence, watch the model answer it greedily for its task (reverse, copy, sort or continue it),
token by token, against the expected answer, and see which position each output step attended to (one head at a
time, rows = output steps, columns = the positions it could see; the task's ideal keys highlighted).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, QSignalBlocker, Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from app.training.model.results import TryIt
from app.training.model.session import TrainingSession
from app.training.model.tools import TryItResult
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.side_panel import SideScroll
from app.widgets.theme import LIGHT, ThemeColors, follow_theme, span
from attention_core.tiny.vocab import token_labels

PLACEHOLDER = ("Train (or load) a model, then type a sequence and press the button beside it. The model is the one "
               "at the step the grid shows; while training runs, this tab follows the newest step about twice a "
               "second.")
BUTTONS = {"reversal": ("Reverse", "reversed"), "copy": ("Copy", "copied"), "sort": ("Sort", "sorted"),
           "induction": ("Continue", "continued")}
"""Per task: the button's word and the verdict's ("✓ sorted exactly")."""
TIPS = {"reversal": "Tokens to reverse", "copy": "Tokens to copy", "sort": "Tokens to sort (distinct, as trained)",
        "induction": "Distinct tokens (or tokens repeating with one period) for the model to continue"}


class TryItView(QWidget):
    """Input line + greedy result + one head's attention per output step.

    Follows ``session.events.try_it``: the session computes the result with the model at the shown step (or
    refuses the text); this view only draws ``session.try_it`` — a refusal clears the previous result."""

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        # the content scrolls when the tab is shorter than it: squeezed, the wrapped explanation was drawn over
        # the map (a wrapped label's height is not part of the minimum a splitter sees)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        inner = QWidget()
        outer.addWidget(SideScroll(inner))
        self._inner = inner
        inner.installEventFilter(self)
        layout = QVBoxLayout(inner)
        layout.setContentsMargins(4, 4, 4, 4)
        # three short rows rather than two long ones: the input gets the column's width (it showed "13 4 6 9"
        # at 1280 px), the head names fit the combo, and "▶ token by token" sits by the output step it animates
        row = QHBoxLayout()
        self.input = QLineEdit()
        self.input.setPlaceholderText("e.g. 3 7 2 9 4 5")
        self.run_button = QPushButton("Reverse")
        self.run_button.setToolTip("Greedy generation: the model writes its answer one token at a time, feeding "
                                   "back its own tokens.")
        self._set_task("reversal")
        self.animate_button = QPushButton("▶ token by token")
        row.addWidget(QLabel("input"))
        row.addWidget(self.input, 1)
        row.addWidget(self.run_button)
        layout.addLayout(row)
        self.result_label = QLabel(PLACEHOLDER)
        self.result_label.setWordWrap(True)
        self.result_label.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.result_label)
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("attention of"))
        self.head_combo = QComboBox()
        self.head_combo.setToolTip("Which head's attention to show for each output step.")
        self.head_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.head_combo.setMinimumContentsLength(12)
        row2.addWidget(self.head_combo, 1)
        layout.addLayout(row2)
        row3 = QHBoxLayout()
        row3.addWidget(QLabel("output step"))
        self.step_slider = QSlider(Qt.Orientation.Horizontal)
        self.step_slider.setToolTip("Reveal the generation up to this output token.")
        row3.addWidget(self.step_slider, 1)
        row3.addWidget(self.animate_button)
        layout.addLayout(row3)
        self.heatmap = HeatmapWidget(title="")
        self.heatmap.set_show_numbers(True)
        self.heatmap.setVisible(False)  # shown with the first result: an empty heatmap says nothing
        self.heatmap.setMinimumHeight(150)  # 190 pushed the explanation over the map in a 640 px window
        # no preferred height (480 px) for the scroll area to reserve: the map takes what the tab has left
        self.heatmap.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        layout.addWidget(self.heatmap, 1)
        self.explain = QLabel()
        self.explain.setWordWrap(True)
        self.explain.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.explain)
        layout.addStretch(0)
        self.result: TryItResult | None = None
        self.step: int | None = None
        self.caption = ""
        self.colors = LIGHT
        self._timer = QTimer(self)
        self._timer.setInterval(700)
        self._timer.timeout.connect(self._advance)
        self.run_button.clicked.connect(self.submit)
        self.input.returnPressed.connect(self.submit)
        self.animate_button.clicked.connect(self.animate)
        self.head_combo.currentIndexChanged.connect(self._redraw)
        self.step_slider.valueChanged.connect(self._redraw)
        session.events.try_it.connect(self._on_try_it)
        session.events.config.connect(self._on_shape)
        session.events.run_state.connect(self._on_shape)
        self._on_shape()
        self._on_try_it(session.try_it)
        follow_theme(self._restyle)


    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self._inner and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            self._fit_content()
        return False

    def _fit_content(self) -> None:
        """The content's minimum height at its width, wrapped texts included (a layout's own minimum counts a
        wrapped label as one line), so the scroll area scrolls instead of drawing the text over the map."""
        lay, width = self._inner.layout(), self._inner.width()
        if lay is None:
            return
        m = lay.contentsMargins()
        items = [it for i in range(lay.count()) if (it := lay.itemAt(i)) is not None and not it.isEmpty()]
        need = m.top() + m.bottom() + lay.spacing() * max(len(items) - 1, 0)
        for it in items:
            hfw = it.hasHeightForWidth()
            need += it.heightForWidth(width - m.left() - m.right()) if hfw else it.minimumSize().height()
        if self._inner.minimumHeight() != need:
            self._inner.setMinimumHeight(need)

    def submit(self) -> None:
        self.session.try_sequence(self.input.text())

    def _restyle(self, c: ThemeColors) -> None:
        """The theme: the heatmap's plot and the coloured words (right / wrong, captions)."""
        self.colors = c
        if self.result is not None:
            self._redraw()  # keeps the output step the learner picked
        else:
            self._on_try_it(self.session.try_it)

    # ---------------------------------------------------------------- session events
    def _set_task(self, task: str) -> None:
        self.run_button.setText(BUTTONS.get(task, ("Run", ""))[0])
        self.input.setToolTip(f"{TIPS.get(task, 'Tokens')}, separated by spaces (2 .. vocabulary-1).")

    def _on_shape(self, *_: object) -> None:
        cfg = self.session.model_config  # the model's (its run's task), else the settings'
        if cfg is not None:
            self.set_heads(cfg.num_layers, cfg.num_heads)
            self._set_task(cfg.task)

    def _on_try_it(self, t: TryIt | None) -> None:
        if t is None:
            self._clear(PLACEHOLDER)
        elif t.error or t.result is None:
            self._clear(span(t.error, self.colors.bad))
        else:
            if self.input.text().strip() != t.text.strip() and not self.input.hasFocus():
                self.input.setText(t.text)
            self.set_result(t.result, t.step, t.caption)

    def _clear(self, html: str) -> None:
        """Nothing of an earlier result stays on screen next to a refusal or after a new model."""
        self._timer.stop()
        self.result, self.step, self.caption = None, None, ""
        self.heatmap.setVisible(False)
        self.explain.setText("")
        self.result_label.setText(html)

    def set_heads(self, layers: int, heads: int) -> None:
        """Offer every head of a model with this shape (keeps the selection when the shape is unchanged)."""
        items = [f"layer {li + 1} · head {h + 1}" for li in range(layers) for h in range(heads)]
        if [self.head_combo.itemText(i) for i in range(self.head_combo.count())] == items:
            return
        with QSignalBlocker(self.head_combo):
            self.head_combo.clear()
            for li in range(layers):
                for h in range(heads):
                    self.head_combo.addItem(f"layer {li + 1} · head {h + 1}", (li, h))
            self.head_combo.setCurrentIndex(len(items) - 1 if items else 0)  # the last layer copies, usually

    def selected_head(self) -> tuple[int, int]:
        data = self.head_combo.currentData()
        return (int(data[0]), int(data[1])) if data is not None else (0, 0)

    def set_result(self, result: TryItResult, step: int | None = None, caption: str = "") -> None:
        """Show a generation; ``step`` says which training step the model was at (``caption``: the session's
        words for the model used, e.g. with heads switched off)."""
        animating = self._timer.isActive()
        self.step = step
        self.caption = caption or (f"model at step {step}" if step is not None else "")
        self.result = result
        self.heatmap.setVisible(True)
        A = len(result.generated)
        with QSignalBlocker(self.step_slider):
            self.step_slider.setRange(0, A - 1)
            if not animating:
                self.step_slider.setValue(A - 1)
        self._redraw()

    def animate(self) -> None:
        """Reveal the output one token at a time."""
        if self.result is None:
            self.submit()
            if self.result is None:
                return
        self.step_slider.setValue(0)
        self._timer.start()

    def _advance(self) -> None:
        if self.step_slider.value() >= self.step_slider.maximum():
            self._timer.stop()
            return
        self.step_slider.setValue(self.step_slider.value() + 1)

    def _redraw(self, *_: Any) -> None:
        r = self.result
        if r is None or self.head_combo.count() == 0:
            return
        upto = self.step_slider.value()
        li, h = self.selected_head()
        if li >= len(r.step_weights[0]) or h >= r.step_weights[0][li].shape[0]:
            return
        vals, blocked = r.matrix(li, h)
        blocked[upto + 1:, :] = True  # not generated yet
        vals[upto + 1:, :] = 0.0
        seq = r.sequence
        cols = [f"{lab}" for lab in token_labels(seq[: vals.shape[1]])]
        rows = [f"out {p + 1}: {tok}" if p <= upto else f"out {p + 1}: ?" for p, tok in
                enumerate(token_labels(r.generated))]
        self.heatmap.set_data(vals, rows, cols, blocked=blocked, kind="weights", row_sums=False,
                              title=f"layer {li + 1} · head {h + 1}, per output step",
                              row_title="", col_title="position it could see (key)")
        self.heatmap.set_highlight(cells=[(p, k) for p in range(upto + 1) for k in r.ideal_keys(p)])
        self.heatmap.set_selected((upto, int(vals[upto].argmax())))
        c = self.colors
        at = " " + span(f"({self.caption})", c.muted) if self.caption else ""
        self.result_label.setText(_result_html(r, upto, c) + at)
        p = upto
        k = int(vals[p].argmax())
        ideal = r.ideal_keys(p)
        where = " or ".join(str(i) for i in ideal)
        verdict = (f"the {r.task} task's ideal key" if k in ideal else
                   f"not the {r.task} task's ideal key (position {where})" if ideal else "")
        self.explain.setText(
            f"Output {p + 1} (<b>{token_labels([r.generated[p]])[0]}</b>): the query at position "
            f"{r.first_query + p} put <b>{vals[p, k]:.2f}</b> on position {k} (<b>{token_labels([seq[k]])[0]}</b>)"
            f"{', ' + verdict if verdict else ''}. {span('Magenta', c.magenta)}: the task's ideal keys; "
            f"{span('blue', c.ideal)}: this head's strongest key.")


def _result_html(r: TryItResult, upto: int, c: ThemeColors = LIGHT) -> str:
    parts = []
    for p, (g, ok) in enumerate(zip(r.generated, r.correct)):
        if p > upto:
            parts.append(span("·", c.faint))
        else:
            parts.append(span(token_labels([g])[0], c.good if ok else c.bad, bold=True))
    done = upto >= len(r.generated) - 1
    verdict = ""
    if done:
        done_word = BUTTONS.get(r.task, ("", "answered"))[1]
        verdict = " " + (span(f"✓ {done_word} exactly", c.good, bold=True) if all(r.correct)
                         else span(f"✗ {r.correct.count(False)} wrong", c.bad, bold=True))
    given = " ".join(token_labels(r.prompt))
    return (f"{r.task}: given {given} → model: {' '.join(parts)}{verdict}"
            f"<br>{span('expected ' + ' '.join(token_labels(r.expected)), c.muted)}")

