"""The Model tab's figures as files, for the CLI (``inspect --out FILE.png|.svg|.pdf``) and scripts: one head's map
(the same heatmap export as every map) or every head as a grid, titled with the model, the layer and head, and
the text. Renders offscreen."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.inspect.model.views import head_blocked, position_labels, trace_text

if TYPE_CHECKING:
    from attention_core.pretrained import Trace


def write_inspect_figure(trace: Trace, path: str | Path, *, layer: int | None = None, head: int | None = None,
                         title: str = "") -> str:
    """Write one head's weights (``layer`` and ``head`` given) or the grid of every head (of ``layer`` alone when
    only it is given) to ``path``; returns the plain title written into the file."""
    from app.widgets.file_export import export_heatmap

    labels = position_labels(trace)
    if layer is not None and head is not None:
        return export_heatmap(path, trace.attentions[layer, head], labels, labels,
                              title or f"{trace.name}: layer {layer} head {head}", kind="weights",
                              blocked=head_blocked(trace, layer), context=trace_text(trace))
    from app.widgets.grid.mosaic import MosaicGrid
    from app.widgets.rendering import ensure_application, write_titled_figure

    ensure_application()  # the grid is a widget: Qt first (the CLI has no window)
    layers = [layer] if layer is not None else list(range(trace.info.layers))
    weights = np.asarray(trace.attentions)[layers]

    def fill(grid: MosaicGrid) -> None:
        grid.set_maps(weights, labels, causal=trace.mask(layers[0]) is not None)
        if layer is not None:  # one layer: its row is labelled with the layer's own number
            grid.plot.getAxis("left").setTicks([[(grid.overlay.n / 2, f"L{layer}")]])

    what = f"layer {layer}, every head" if layer is not None else "every layer and head"
    grid = MosaicGrid(first_index=0)
    size = (min(110 * trace.info.heads + 260, 3200), min(110 * len(layers) + 160, 3200))
    return write_titled_figure(path, title or f"{trace.name}: {what}", trace_text(trace), grid, fill, size=size)
