"""The Tiles view's final state as one figure for a file (``export --view tiles``, PNG, SVG or PDF): the grid of
tiles after the last one (skipped tiles greyed), each query row's final max m, sum l and log-sum-exp, the memory
held against the full matrix, and the tiles' output beside Steps' output with their largest difference. Always
light, like every exported figure; it draws the ``FlashSteps`` record as given and computes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.common.titles import ExportContext, full_title, title_html
from app.playground.views.tiles import model as tm
from app.playground.views.tiles.grid import TileGrid
from app.widgets.heatmap.view import HeatmapWidget

FIGURE_TITLE = "FlashAttention's tiles: the online softmax, block by block"


def stats_html(flash: Any, query_tokens: Sequence[str]) -> str:
    """Each query row's final running max, sum and log-sum-exp as an HTML table."""
    head = "".join(f"<th style='padding:2px 8px'>{h}</th>" for h in ("query", "m (max)", "l (sum)",
                                                                      "log-sum-exp"))
    rows = "".join(
        f"<tr><td style='padding:2px 8px'>{tok}</td>" + "".join(
            f"<td align='right' style='padding:2px 8px'>{tm.number(float(v))}</td>"
            for v in (flash.row_max[i], flash.row_sum[i], flash.logsumexp[i])) + "</tr>"
        for i, tok in enumerate(query_tokens))
    return f"<table style='border-collapse:collapse'><tr>{head}</tr>{rows}</table>"


class TilesFigure(QWidget):
    """One laid-out figure of ``flash`` after its last tile, with ``steps_output`` beside its output."""

    def __init__(self, flash: Any, steps_output: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str],
                 *, context: ExportContext | str | None = None, title: str = FIGURE_TITLE, note: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        q_tok, k_tok = [str(t) for t in query_tokens], [str(t) for t in key_tokens]
        if len(q_tok) != flash.output.shape[0]:
            raise ValueError(f"tiles figure: {len(q_tok)} query labels for an output of {flash.output.shape[0]} rows")
        self.plain_title = full_title(title, context)
        pal = self.palette()
        pal.setColor(QPalette.ColorRole.Window, QColor("white"))
        pal.setColor(QPalette.ColorRole.WindowText, QColor("#111111"))
        self.setPalette(pal)
        self.setAutoFillBackground(True)
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 12, 16, 12)
        heading = QLabel(title_html(title, context, size_pt=11.0))
        heading.setTextFormat(Qt.TextFormat.RichText)
        heading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        font = QFont()
        font.setPointSizeF(14.0)
        heading.setFont(font)
        root.addWidget(heading)
        top = QHBoxLayout()
        frame = tm.frame_at(flash, len(flash.tiles))
        self.grid = TileGrid()
        self.grid.set_frame(frame, q_tok, k_tok)
        lq, lk = len(q_tok), len(k_tok)
        cell = 40 if max(lq, lk) <= 8 else 24 if max(lq, lk) <= 16 else 12
        self.grid.setFixedSize(90 + lk * cell, 30 + lq * cell)
        top.addWidget(self.grid)
        self.stats = QLabel(stats_html(flash, q_tok))
        self.stats.setTextFormat(Qt.TextFormat.RichText)
        top.addWidget(self.stats, 0, Qt.AlignmentFlag.AlignTop)
        top.addStretch(1)
        root.addLayout(top)
        diff = tm.largest_difference(flash, steps_output)
        text = (f"{len(flash.tiles)} tiles of {flash.block_q} × {flash.block_k} "
                f"({sum(t.skipped for t in flash.tiles)} skipped whole by the mask) · {tm.memory_text(flash)}<br>"
                f"<b>largest |tiles − Steps| = {diff:.3g}</b>" + (f" ({note})" if note else ""))
        self.summary = QLabel(text)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)
        root.addWidget(self.summary)
        maps = QHBoxLayout()
        cols = [f"v{j}" for j in range(flash.output.shape[1])]
        self.outputs = []
        for name, values in (("Tiles' output (o ÷ l)", flash.output), ("Steps' output", steps_output)):
            hm = HeatmapWidget(title=name, context_menu=False, dark=False)
            hm.set_data(values, q_tok, cols, kind="signed", title=name, row_title="query",
                        col_title="value dimension")
            hm.setFixedSize(max(260, 120 + 34 * len(cols)), max(200, 110 + 30 * lq))
            maps.addWidget(hm)
            self.outputs.append(hm)
        maps.addStretch(1)
        root.addLayout(maps)
        self.resize(max(self.sizeHint().width(), 720), self.sizeHint().height())


def write_tiles_figure(path: str | Path, flash: Any, steps_output: np.ndarray, query_tokens: Sequence[str],
                       key_tokens: Sequence[str], *, context: ExportContext | str | None = None,
                       title: str = FIGURE_TITLE, note: str = "") -> str:
    """Render the figure to PNG, SVG or PDF (by suffix; atomic write) without a display. Returns the plain
    title, also written into the file's metadata. ``note``: why the outputs may differ (``model.flash_note``)."""
    from app.common.heatmap_files import IMAGE_FORMATS
    from app.widgets.qt_compat import delete_now
    from app.widgets.rendering import ensure_application, render_widget

    target = Path(path)
    if target.suffix.lower() not in IMAGE_FORMATS:
        raise ValueError(f"export: the tiles figure is an image: .png, .svg or .pdf, got {target.suffix!r}")
    ensure_application()
    fig: Any = TilesFigure(flash, steps_output, query_tokens, key_tokens, context=context, title=title, note=note)
    try:
        render_widget(fig, target, title=fig.plain_title)
        return str(fig.plain_title)
    finally:
        delete_now(fig)
