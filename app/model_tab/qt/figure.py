"""The Model tab's figures as files, for the CLI (``inspect --out FILE.png|.svg|.pdf``) and scripts: one head's map
(the same heatmap export as every map) or every head as a grid, titled with the model, the layer and head, and
the text. Renders offscreen."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.model_tab.model.views import grid_maps, head_blocked, position_labels, trace_text

if TYPE_CHECKING:
    from attention_core.pretrained import Trace


def write_inspect_figure(trace: Trace, path: str | Path, *, layer: int | None = None, head: int | None = None,
                         title: str = "") -> str:
    """Write one head's weights (``layer`` and ``head`` given) or the grid of every head (of ``layer`` alone when
    only it is given) to ``path``; returns the plain title written into the file."""
    from app.widgets.file_export import export_heatmap

    labels = position_labels(trace)
    if layer is not None and head is not None:
        # a long trace's blocked cells are not hatched: hatching paints each cell (8.4 million at 4,095 tokens, more
        # than 100 s; below a pixel each); they show as their weight, 0, as in the Model tab's window on a long map
        blocked = head_blocked(trace, layer) if not trace.is_long else None
        return export_heatmap(path, trace.head_map(layer, head), labels, labels,
                              title or f"{trace.name}: layer {layer} head {head}", kind="weights",
                              blocked=blocked, context=trace_text(trace))
    from app.widgets.grid.mosaic import MosaicGrid
    from app.widgets.rendering import ensure_application, write_titled_figure

    ensure_application()  # the grid is a widget: Qt first (the CLI has no window)
    layers = [layer] if layer is not None else list(range(trace.info.layers))
    maps, labels = grid_maps(trace)  # a long trace: every head block-pooled
    weights = np.asarray(maps)[layers]
    heads = trace.info.heads
    names = [_short(t) for t in labels]
    widest = max((len(t) for t in names), default=1)
    tile = max(110, min(len(names) * (7 * widest + 8), 400))  # a map's side: room for every key's label, up to a point
    size = (min(tile * heads + 300 + 7 * widest, 3200), min(tile * len(layers) + 200, 3200))

    def fill(grid: MosaicGrid) -> None:
        grid.set_maps(weights, labels, causal=trace.mask(layers[0]) is not None)
        _label_tokens(grid, names, layers, heads)

    what = f"layer {layer}, every head" if layer is not None else "every layer and head"
    grid = MosaicGrid(first_index=0)
    return write_titled_figure(path, title or f"{trace.name}: {what}", trace_text(trace), grid, fill, size=size)


def _short(token: str, limit: int = 12) -> str:
    return token if len(token) <= limit else token[:limit - 1] + "…"


def _label_tokens(grid: Any, names: list[str], layers: list[int], heads: int) -> None:
    """A file has no mouse to hover a cell: each map's rows are labelled with the query tokens (left) and its
    columns with the key tokens (below), as the single-head figure's axes are; the layers move to the right side,
    the heads stay on top. Where the cells are too small for every label, every k-th is shown so that none
    overlaps (about 14 px a row, a label's width a column), measured on the laid-out plot: the labels are set
    again whenever its view is resized."""
    from app.widgets.grid.mosaic import gap_cells

    n = len(names)
    step = n + gap_cells(n)
    widest = max((len(t) for t in names), default=1)
    plot = grid.plot
    view = plot.getViewBox()
    plot.getAxis("left").setLabel("query")
    plot.showAxis("bottom")
    plot.getAxis("bottom").setLabel("key")
    plot.showAxis("right")
    plot.getAxis("right").setTicks([[(i * step + n / 2, f"L{li}") for i, li in enumerate(layers)]])

    def place() -> None:
        size = view.viewPixelSize()[0]  # data units (cells) per pixel; 0 before the first layout
        cell = 1.0 / size if size > 0 else 1e6
        every_row = max(1, math.ceil(14 / cell))
        every_col = max(1, math.ceil((7 * widest + 8) / cell))
        plot.getAxis("left").setTicks(
            [[(i * step + q + 0.5, names[q]) for i in range(len(layers)) for q in range(0, n, every_row)]])
        plot.getAxis("bottom").setTicks(
            [[(h * step + k + 0.5, names[k]) for h in range(heads) for k in range(0, n, every_col)]])

    place()
    view.sigResized.connect(lambda *_: place())
