"""The whole attention pipeline as one figure for a file: Q, K, V, then scores → scaled → masked → weights → output.

The Steps tab spreads the five maps over a window that also holds the editor, the explanation and the controls;
a slide or a handout needs them in one picture that reads left to right on its own. So this figure puts the
five step maps in one row with the operation on each arrow (× scale, + mask, softmax, · V), Q and K above the
scores they make and V above the output it feeds, and a title that names the setting (preset or "edited", mask,
scale, and every option on). The optional steps join it while they are on, as in the Steps view: Q and K rotated
beside Q and K (⟶ rotate), the soft-capped and then the biased map between the scaled and the masked scores. Every
map is a ``HeatmapWidget`` with its own labelled colour bar, as in the window; the figure is rendered by
``app.widgets.rendering.render_widget`` (PNG, SVG or PDF). It draws the core's ``AttentionSteps`` as given and
computes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.common.titles import ExportContext, colorbar_label, full_title, scale_text, step_title, title_html
from app.playground.model.colour_range import SHARED_STEPS, step_colours
from app.playground.model.texts import STEP_INPUTS, STEP_OPERATIONS, step_operations
from app.widgets.heatmap.export import label_colorbar, title_width
from app.widgets.heatmap.view import HeatmapWidget
from attention_core import STEP_NAMES, AttentionSteps

FIGURE_TITLE = "Attention, step by step: softmax(Q·Kᵀ × scale + mask) · V"
ROW_STEPS = ("scores", "scaled", "capped", "biased", "masked", "weights", "output")
"""The figure's row of step maps in reading order: the five, and the optional ones while on."""
OPTIONAL_UNITS = {"capped": "soft-capped score", "biased": "biased score"}
"""The colour bar's unit of the optional step maps (the five's: ``colorbar_label``)."""


def cell_px(n: int) -> int:
    """Cell size for a map whose larger side has ``n`` cells: roomy for a few tokens, smaller for many."""
    return 46 if n <= 6 else 34 if n <= 12 else 22 if n <= 24 else 14 if n <= 48 else 9


def map_size(rows: int, cols: int, labels: Sequence[str], cell: int | None = None,
             row_sums: bool = False) -> tuple[int, int]:
    """Pixel size of one map: cells, axis labels, title, colour bar with its label and numbers (and the row sums
    "Σ 1.000" of a weights map)."""
    cell = cell or cell_px(max(rows, cols))
    longest = min(max((len(str(s)) for s in labels), default=2), 12)
    width = 40 + 7 * longest + cols * cell + 120 + (60 if row_sums else 0)
    height = 70 + rows * cell + 60
    return max(width, 240), max(height, 200)


def _arrow(op: str, note: str = "") -> QLabel:
    """An arrow between two maps with the operation that turns one into the next."""
    text = f"<div style='font-size:26pt'>→</div><div style='font-size:11pt'><b>{op}</b></div>"
    if note:
        text += f"<div style='font-size:9pt; color:#555555'>{note}</div>"
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setMinimumWidth(84)
    return label


def _down(op: str) -> QLabel:
    label = QLabel(f"<span style='font-size:18pt'>↓</span> <span style='font-size:11pt'><b>{op}</b></span>")
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    return label


class PipelineFigure(QWidget):
    """One laid-out figure of every step of ``steps`` (a single head: 2-D q, k, v). ``heatmaps`` maps "q", "k",
    "v" and each of ``STEP_NAMES`` to its ``HeatmapWidget``; ``plain_title`` is what a file's metadata carries."""

    def __init__(self, steps: AttentionSteps, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                 context: ExportContext | str | None = None, title: str = FIGURE_TITLE,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        if steps.q.ndim != 2:
            raise ValueError(f"pipeline figure: one head at a time (2-D q), got q of shape {steps.q.shape}")
        lq, lk = steps.scores.shape
        if len(query_tokens) != lq or len(key_tokens) != lk:
            raise ValueError(f"pipeline figure: {len(query_tokens)} query / {len(key_tokens)} key labels for "
                             f"scores of shape {steps.scores.shape}")
        self.plain_title = full_title(title, context)
        pal = self.palette()
        pal.setColor(QPalette.ColorRole.Window, QColor("white"))
        pal.setColor(QPalette.ColorRole.WindowText, QColor("#111111"))
        self.setPalette(pal)
        self.setAutoFillBackground(True)
        q_tok, k_tok = [str(t) for t in query_tokens], [str(t) for t in key_tokens]
        d_k, d_v = steps.q.shape[1], steps.v.shape[1]
        dims = [f"d{j}" for j in range(d_k)]
        vdims = [f"v{j}" for j in range(d_v)]
        blocked = None if steps.mask is None else ~np.asarray(steps.mask, dtype=bool)
        cell = cell_px(max(lq, lk, d_k, d_v))

        self.heatmaps: dict[str, HeatmapWidget] = {}
        # the window's colour rule (steps 1-3 in one shared range), so the figure shows what scaling does
        levels = step_colours(steps, shared=True).levels

        def add_map(key: str, title_text: str, values: np.ndarray, rows: list[str], cols: list[str], *,
                    kind: str = "signed", blk: np.ndarray | None = None, row_title: str = "query",
                    col_title: str = "key") -> HeatmapWidget:
            hm = HeatmapWidget(title=title_text, context_menu=False, dark=False)
            hm.set_data(values, rows, cols, blocked=blk, kind=kind, title=title_text, row_title=row_title,
                        col_title=col_title, levels=levels.get(key))
            unit = OPTIONAL_UNITS.get(key) or colorbar_label(key, steps.scale)  # Q, K, V: "value"
            label_colorbar(hm.colorbar, f"{unit} (shared 1-3)" if key in SHARED_STEPS else unit)
            hm.setFixedSize(*map_size(len(rows), len(cols), [*rows, *cols], cell, row_sums=kind == "weights"))
            self.heatmaps[key] = hm
            return hm

        root = QVBoxLayout(self)
        root.setContentsMargins(16, 12, 16, 12)
        root.setSpacing(6)
        self.title_label = QLabel(title_html(title, context, size_pt=11.0))
        self.title_label.setTextFormat(Qt.TextFormat.RichText)
        self.title_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        font = QFont()
        font.setPointSizeF(14.0)
        self.title_label.setFont(font)
        root.addWidget(self.title_label)

        grid = QGridLayout()
        grid.setHorizontalSpacing(4)
        grid.setVerticalSpacing(2)
        root.addLayout(grid)
        inputs = QHBoxLayout()
        inputs.setSpacing(8)
        inputs.addWidget(add_map("q", "Q (queries)", steps.q, q_tok, dims, row_title="query", col_title="d_k"))
        inputs.addWidget(add_map("k", "K (keys)", steps.k, k_tok, dims, row_title="key", col_title="d_k"))
        if steps.q_rotated is not None and steps.k_rotated is not None:  # ⓡ: the scores are made of these
            dims_note = f"{steps.rotary_dims} of {d_k} columns" if steps.rotary_dims not in (None, d_k) else ""
            inputs.addWidget(_arrow("rotate", f"base {steps.rotary_base:g}" + (f", {dims_note}" if dims_note
                                                                                 else "")))
            inputs.addWidget(add_map("q_rotated", "Q rotated", steps.q_rotated, q_tok, dims, row_title="query",
                                     col_title="d_k"))
            inputs.addWidget(add_map("k_rotated", "K rotated", steps.k_rotated, k_tok, dims, row_title="key",
                                     col_title="d_k"))
        inputs.addStretch(1)
        rotated = steps.q_rotated is not None
        span = 5 if not rotated else 2 * sum(getattr(steps, n, None) is not None for n in ROW_STEPS) - 2
        grid.addLayout(inputs, 0, 0, 1, span, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom)
        grid.addWidget(_down(STEP_OPERATIONS["scores"] + (" of Q, K rotated" if rotated else "")), 1, 0,
                       Qt.AlignmentFlag.AlignLeft if rotated else Qt.AlignmentFlag(0))

        # "0.5 = 1/√4" -> "= 1/√4" under "× 0.5"; a scale of 1 says it changes nothing
        scale_note = "unscaled" if steps.scale == 1.0 else scale_text(steps.scale, d_k).partition(" ")[2]
        ops = step_operations(steps.scale, scale_note, 0 if blocked is None else int(blocked.sum()))
        if steps.capped is not None:
            ops["capped"] = ("c·tanh(x / c)", f"soft-cap c = {steps.softcap:g}")
        if steps.biased is not None:
            ops["biased"] = ("+ bias", "ALiBi: −slope·|i − j|")
        shown = [name for name in ROW_STEPS if name in STEP_NAMES or getattr(steps, name, None) is not None]
        last = 2 * (len(shown) - 1)  # the output's column: V sits above it
        grid.addWidget(add_map("v", "V (values)", steps.v, k_tok, vdims, row_title="key", col_title="value dim"),
                       0, last, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom)
        grid.addWidget(_down(STEP_INPUTS["output"][0]), 1, last)
        for n, name in enumerate(shown):
            values = getattr(steps, name)
            if values.ndim == 3:  # one head's (1, Lq, Lk) of a bias made for every head
                values = values.reshape(values.shape[-2:])
            if name == "output":
                hm = add_map(name, step_title(name, steps.scale), values, q_tok, vdims, col_title="value dim")
            else:
                kind = "weights" if name == "weights" else "signed"
                blk = blocked if name in ("masked", "weights") else None
                hm = add_map(name, step_title(name, steps.scale), values, q_tok, k_tok, kind=kind, blk=blk)
            if name in ops:
                grid.addWidget(_arrow(*ops[name]), 2, 2 * n - 1)
            grid.addWidget(hm, 2, 2 * n, Qt.AlignmentFlag.AlignTop)
        width = max(self.sizeHint().width(), title_width(title, context, 14.0, 11.0) + 60)
        self.resize(width, self.sizeHint().height())


def write_pipeline_figure(path: str | Path, steps: AttentionSteps, query_tokens: Sequence[str],
                          key_tokens: Sequence[str], *, context: ExportContext | str | None = None,
                          title: str = FIGURE_TITLE) -> str:
    """Render the pipeline figure to PNG, SVG or PDF (by suffix; atomic write). Returns the plain title, which
    is also written into the file's metadata."""
    from app.common.heatmap_files import IMAGE_FORMATS
    from app.widgets.qt_compat import delete_now
    from app.widgets.rendering import ensure_application, render_widget

    target = Path(path)
    if target.suffix.lower() not in IMAGE_FORMATS:
        raise ValueError(f"export: the pipeline figure is an image: .png, .svg or .pdf, got {target.suffix!r}")
    ensure_application()
    fig: Any = PipelineFigure(steps, query_tokens, key_tokens, context=context, title=title)
    try:
        render_widget(fig, target, title=fig.plain_title)
        return str(fig.plain_title)
    finally:
        delete_now(fig)
