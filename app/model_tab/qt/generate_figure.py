"""A generation's grown attention as files, for ``generate --out FILE.png|.svg|.gif``: one head's rows, one per
step (the new query's attention over the cache), laid under each other as the decoding wrote them. Positions the
cache did not hold at a step (evicted, or not written yet) are hatched cells with a dash, never "0.00": they held
no weight at all, not a weight of zero (the Generate view draws them the same way). The GIF replays the decoding:
one frame per step, the same map with the rows so far. Renders offscreen; the GIF goes through Pillow."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from attention_core.pretrained import Generation

HOLD_LAST_MS = 2000
"""The last frame stays this long, so a looping film does not jump back at once."""


def _distinct(tokens: list[str]) -> list[str]:
    """The tokens, with their position where one repeats (rows and columns stay distinguishable)."""
    counts: dict[str, int] = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    return [t if counts[t] == 1 else f"{t}@{i}" for i, t in enumerate(tokens)]


def grown_attention(gen: Generation, layer: int, head: int) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """(values (steps, positions), blocked (same shape, True = not in the cache), row labels (the query tokens),
    column labels (every position's token)): step i's row of ``layer``/``head`` at its cache positions, NaN
    elsewhere (a position outside the cache has no weight to print)."""
    tokens = _distinct(list(gen.prompt_tokens) + list(gen.tokens))
    width = gen.steps[-1].query_position + 1
    values = np.full((len(gen.steps), width), np.nan, dtype=np.float32)
    blocked = np.ones_like(values, dtype=bool)
    for i, step in enumerate(gen.steps):
        values[i, step.cache_positions] = step.attentions[layer, head]
        blocked[i, step.cache_positions] = False
    rows = [tokens[s.query_position] for s in gen.steps]
    return values, blocked, rows, tokens[:width]


def _title(name: str, gen: Generation, layer: int, head: int) -> tuple[str, str]:
    policy = {"full": "full cache", "window": f"window {gen.window}",
              "sinks": f"sinks {gen.sinks} + last {(gen.window or 0) - gen.sinks}"}[gen.cache]
    return f"{name}: layer {layer} head {head}, each new token's query over the cache", policy


def write_grown_attention(path: str | Path, gen: Generation, name: str, layer: int, head: int) -> str:
    """The grown map of one head as PNG or SVG (``export_heatmap``); returns the title written."""
    from app.widgets.file_export import export_heatmap

    values, blocked, rows, cols = grown_attention(gen, layer, head)
    title, context = _title(name, gen, layer, head)
    return export_heatmap(path, values, rows, cols, title, kind="weights", blocked=blocked,
                          context=f"{context} · wrote: {gen.text!r}", row_title="query (newest token)",
                          col_title="key position")


def write_generation_film(path: str | Path, gen: Generation, name: str, layer: int, head: int,
                          frame_ms: int = 400) -> Path:
    """The decoding as an animated GIF, one frame per step, written whole (a temporary file renamed)."""
    from PySide6.QtWidgets import QApplication

    from app.common.heatmap_files import export_size
    from app.common.titles import title_html
    from app.widgets.heatmap.export import COLORBAR_LABELS, label_colorbar
    from app.widgets.heatmap.view import HeatmapWidget
    from app.widgets.qt_compat import delete_now
    from app.widgets.rendering import ensure_application, grab_image, image_to_rgb, lay_out
    from attention_core.fileio import atomic_write

    ensure_application()
    values, blocked, rows, cols = grown_attention(gen, layer, head)
    title, context = _title(name, gen, layer, head)
    widget = HeatmapWidget(title=title_html(title, context), context_menu=False, dark=False)
    frames: list[np.ndarray] = []
    try:
        longest = max((len(s) for s in [*rows, *cols]), default=4)
        width, height = export_size(values.shape[0], values.shape[1], max_label=longest)
        widget.resize(max(width, 640), height + 18)
        label_colorbar(widget.colorbar, COLORBAR_LABELS.get("weights", "weight"))
        lay_out(widget)
        for i, step in enumerate(gen.steps):
            shown = blocked.copy()
            shown[i + 1:] = True  # rows not written yet
            line = f"step {i + 1}/{len(gen.steps)}: wrote {step.token!r} (p = {step.probability:.2f}) · {context}"
            labels = [r if j <= i else "" for j, r in enumerate(rows)]  # rows to come: blank, unnamed
            widget.set_data(np.where(shown, np.nan, values), labels, cols, blocked=shown, kind="weights",
                            title=title_html(title, line), row_title="query (newest token)", col_title="key position",
                            row_sums=False)
            for _ in range(2):
                QApplication.processEvents()
            frames.append(image_to_rgb(grab_image(widget, ratio=1.0, prepare=False)))
    finally:
        delete_now(widget)
    target = Path(path)
    atomic_write(target, lambda fh: _save_gif(fh, frames, frame_ms))
    return target


def _save_gif(fh: Any, frames: list[np.ndarray], frame_ms: int) -> None:
    """One 256-colour palette from the last frame (every colour the map reaches), so colours hold from frame to
    frame."""
    from PIL import Image

    palette = Image.fromarray(frames[-1]).quantize(256, method=Image.Quantize.MEDIANCUT)
    images = [Image.fromarray(f).quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    durations = [frame_ms] * (len(images) - 1) + [max(frame_ms, HOLD_LAST_MS)]
    first, *rest = images
    first.save(fh, format="GIF", save_all=True, append_images=rest, duration=durations, loop=0)
