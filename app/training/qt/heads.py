"""The Training tab's centre: the layer × head grid at the shown step, its title, the hover read-out, the legend.

Follows the session: ``shown`` and ``history`` redraw the maps of ``session.shown_snapshot`` (throttled to ~30
frames a second, so training at full speed never floods the GUI thread), ``ablation`` greys out the heads that
are switched off, and the title always names the step drawn and whether it is live, scrubbed or a replay.
Clicking a head asks the session to switch it off; this view computes nothing.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.training.model.history import TASK_SCORE_NAMES
from app.training.model.session import TrainingSession
from app.widgets.frame import FRAME_MS, FrameCoalescer
from app.widgets.grid.head_grid import HeadGrid
from app.widgets.theme import LIGHT, ThemeColors, follow_theme, span
from attention_core.tiny.vocab import token_labels

SERIES_S = 0.15
FAST_RUN_MS = 100
"""The grid's redraw interval while a run goes as fast as it can: ten frames a second still animate, and the GIL
they leave makes the run ~10 % faster on 2 cores (300 steps: 6.1-6.9 s against 6.8-9.8 s at 30 frames a second).
Scrubbing, stepping and watchable speeds keep ``FRAME_MS``."""


IDEAL_TEXT = {
    "reversal": "the ideal anti-diagonal: the query at position L+p predicts reversed token p and should look at the "
                "mirrored input L−1−p",
    "copy": "the ideal diagonal: the query at position L+p predicts token p of the copy and should look at input "
            "position p",
    "sort": "the ideal lookup: the query at position L+p predicts the p-th smallest token and should look at the "
            "input position that holds it",
    "induction": "the induction pattern: a query in the repeat predicts the next token and should look at the "
                 "position just after the previous occurrence of its own token (a layer-2 head reading a "
                 "previous-token head of layer 1)",
}
"""What the circles mark, per task (``attention_core.tiny.tasks.ideal_pattern``)."""


def legend_html(c: ThemeColors = LIGHT, task: str = "reversal", causal: bool = True) -> str:
    """How to read the grid for ``task`` and the mask (the shown run's), its coloured words in the theme's colours
    (the same as the marks and numbers)."""
    name = TASK_SCORE_NAMES.get(task, task)
    hatched = ("Hatched cells are the future, blocked by the causal mask." if causal else
               "No causal mask in this run: every query may look at every position, the future too (nothing is "
               "hatched).")
    return (
        "<b>How to read a map:</b> rows are queries (the position predicting the next token), columns are keys "
        f"(the positions it looks at); darker = more attention. {span('○', c.ideal)} marks "
        f"{IDEAL_TEXT.get(task, 'the ideal pattern')}. As the model learns, a solving head's weight gathers on the "
        f"circles. {hatched} Under each map: {span(name, c.orange)}"
        f" = {task} score (share of 100 test sequences whose answer queries look most at a circled key), "
        f"{span('focus', c.blue)} = mean row maximum and entropy (nats), over the probe's answer queries; "
        f"sparklines show {name} and focus over the run. <b>Click a head</b> to switch it off.")


def no_model_html(task: str) -> str:
    return ("<b>Heads</b> — no model yet: press <b>Start</b> (or <b>Step</b>) to build it and watch every head's "
            f"attention map change as it learns the {task} task.")


NO_MODEL = no_model_html("reversal")


def _options(session: TrainingSession) -> str:
    """The shown run's options that are not the lesson's (learned positions, no attention dropout)."""
    cfg = session.model_config
    if cfg is None:
        return ""
    where = {"learned": [], "none": ["no positions"]}.get(cfg.positional, [f"{cfg.positional} positions"])
    parts = where + (
        [f"attention dropout {cfg.attention_dropout:g}"] if cfg.attention_dropout else [])
    return f" ({', '.join(parts)})" if parts else ""


class HeadsView(QWidget):
    """Title + ``HeadGrid`` + hover read-out + legend, following a ``TrainingSession``."""

    def __init__(self, session: TrainingSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(3)
        self.title_label = QLabel(NO_MODEL)
        self.title_label.setTextFormat(Qt.TextFormat.RichText)
        self.title_label.setWordWrap(True)
        v.addWidget(self.title_label)
        self.head_grid = HeadGrid()
        self.head_grid.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        v.addWidget(self.head_grid, 1)
        self.hover_label = QLabel(" ")
        self.hover_label.setObjectName("hoverLabel")
        self.hover_label.setTextFormat(Qt.TextFormat.RichText)
        v.addWidget(self.hover_label)
        self.ideal_check = QCheckBox("show the task's ideal pattern ○")
        self.ideal_check.setChecked(True)
        v.addWidget(self.ideal_check)
        self.legend_label = QLabel(legend_html())
        self.legend_label.setObjectName("legendLabel")
        self.legend_label.setWordWrap(True)
        self.legend_label.setTextFormat(Qt.TextFormat.RichText)
        v.addWidget(self.legend_label)
        self._hover = (-1, -1, -1, -1)
        self.colors = LIGHT
        self.task = "reversal"  # the task the legend describes: the shown run's (the settings' before any run)
        self.causal = True  # and its mask
        self._series_version = -1
        self._series_at = 0.0
        self.redraw_soon = FrameCoalescer(self.redraw, FRAME_MS, self)
        self.head_grid.headClicked.connect(session.toggle_head)
        self.head_grid.cellHovered.connect(self._on_hover)
        self.ideal_check.toggled.connect(self.head_grid.set_show_ideal)
        session.events.shown.connect(self._request_redraw)
        session.events.history.connect(self._request_redraw)
        session.events.ablation.connect(lambda _a: self._draw_ablation())
        session.events.config.connect(lambda _c: self._shape_from_config())
        self._shape_from_config()
        follow_theme(self._restyle)

    def _request_redraw(self, *_: object) -> None:
        s = self.session
        self.redraw_soon.set_interval(FAST_RUN_MS if s.is_running and s.speed is None else FRAME_MS)
        self.redraw_soon()

    def _restyle(self, c: ThemeColors) -> None:
        """The theme: the grid, and the coloured words of the title, legend and hover text."""
        self.colors = c
        self.legend_label.setText(legend_html(self.colors, self.task, self.causal))
        self.redraw()

    def _set_task(self, task: str, causal: bool = True) -> None:
        """The legend describes ``task`` and the mask of the run shown (hatching only with the causal mask)."""
        if (task, causal) != (self.task, self.causal):
            self.task, self.causal = task, causal
            self.legend_label.setText(legend_html(self.colors, task, causal))

    def _shape_from_config(self) -> None:
        """Before any step exists, lay the grid out for the settings (building its plot items takes ~0.2 s)."""
        cfg = self.session.model_config
        if cfg is not None and not len(self.session.history):
            self.head_grid.set_shape(cfg.num_layers, cfg.num_heads)
            self._set_task(cfg.task, cfg.causal)
            self.title_label.setText(no_model_html(cfg.task))

    def redraw(self) -> None:
        """Draw the shown snapshot: maps, numbers, sparklines, cursor, title, hover text."""
        s = self.session
        snap = s.shown_snapshot
        if snap is None:
            cfg = s.model_config
            self.title_label.setText(no_model_html(cfg.task if cfg is not None else "reversal"))
            self.hover_label.setText(" ")
            return
        self._set_task(snap.task, bool(snap.causal))
        g = self.head_grid
        g.set_maps(snap.probe_weights, snap.labels, seq_len=snap.seq_len, causal=snap.causal,
                   reversal=snap.task_scores, entropy=snap.entropy, focus=snap.focus, ideal=snap.ideal,
                   score_name=snap.score_name)
        g.set_show_ideal(self.ideal_check.isChecked())
        h = s.history
        now = time.perf_counter()
        # sparklines span the whole run and change a little per step: while a run streams steps, a few redraws a
        # second are enough and leave the GIL to the training thread (the maps still follow every frame)
        if h.version != self._series_version and (not s.is_running or now - self._series_at >= SERIES_S):
            self._series_version, self._series_at = h.version, now
            steps, rev = h.head_series("task")
            _, foc = h.head_series("focus")
            g.set_sparklines(steps, rev, foc, max_step=s.total_steps, joined=h.complete)
        g.set_sparkline_cursor(snap.step)
        self._draw_ablation()
        inputs = token_labels(snap.probe[: snap.seq_len])
        mask_note = "" if snap.causal else " · " + span("no causal mask", self.colors.warn, bold=True)
        c = s.cursor
        where = "live" if c.follow_live else ("replay" if c.playing else "scrubbed")
        at = h.evaluated_at(s.shown_index)  # evaluation runs every few steps: quote the latest one, and say so
        if at is None:
            acc = "not evaluated yet"
        else:
            e = h[h.index_of_step(at)].report
            when = "" if at == snap.step else f" (evaluated at step {at})"
            acc = f"test exact-sequence <b>{e.sequence_accuracy:.0%}</b>, per-token {e.reversal_accuracy:.0%}{when}"
        self.title_label.setText(
            f"<b>Heads at step {snap.step}</b> of {s.total_steps} ({where}) — {snap.task}{_options(s)}: probe "
            f"<b>{' '.join(inputs)}</b> → should give <b>{' '.join(token_labels(snap.answer))}</b> · {acc}{mask_note}")
        self._show_hover()

    def _draw_ablation(self) -> None:
        self.head_grid.set_disabled_heads(set(self.session.ablated))

    def _on_hover(self, layer: int, head: int, q: int, k: int) -> None:
        self._hover = (layer, head, q, k)
        self._show_hover()

    def _show_hover(self) -> None:
        """The hovered cell's weight at the step drawn now (re-read on every redraw, never left stale)."""
        layer, head, q, k = self._hover
        snap = self.session.shown_snapshot
        if snap is None or layer < 0 or q < 0 or layer >= len(snap.probe_weights):
            self.hover_label.setText(" ")
            return
        weights = snap.probe_weights[layer]
        if head >= weights.shape[0] or q >= weights.shape[1] or k >= weights.shape[2]:
            self.hover_label.setText(" ")
            return
        labels = snap.labels
        role = ""
        ideal = snap.ideal_keys(q)
        if ideal:
            where = " or ".join(str(i) for i in ideal)
            role = (f" — this query predicts answer token {q - snap.prompt_length + 2}; the ideal key is position "
                    f"{where}" + (" ✓" if k in ideal else ""))
        future = " " + span("(a future position: a leak)", self.colors.warn) if k > q else ""
        self.hover_label.setText(
            f"step {snap.step} · layer {layer + 1} · head {head + 1}: query {q} ('{labels[q]}') → key {k} "
            f"('{labels[k]}'): weight {weights[head, q, k]:.3f}{future}{role}")

    def leaveEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        self._on_hover(-1, -1, -1, -1)
        super().leaveEvent(event)
