"""The Model tab before a model is open: its layer × head mosaic is empty, and its axes said -0.3 … 1.3 and
0 … 1.0, numbers of nothing. They draw no numbers until maps arrive, then the layers' and heads' names."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage, QPainter

from app.widgets.grid.mosaic import MosaicGrid


def drawn_texts(axis) -> list[str]:
    """The strings the axis draws at its current size (pyqtgraph's own drawing plan)."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [] if specs is None else [text for _rect, _flags, text in specs[2]]


def test_an_empty_mosaic_draws_no_numbers_and_a_filled_one_names_layers_and_heads(qtbot):
    mosaic = MosaicGrid()
    qtbot.addWidget(mosaic)
    mosaic.resize(600, 400)
    mosaic.show()
    qtbot.waitExposed(mosaic)
    for name in ("left", "top"):
        assert drawn_texts(mosaic.plot.getAxis(name)) == [], name
    weights = np.full((2, 3, 4, 4), 0.25)
    mosaic.set_maps(weights, list("abcd"), causal=False)
    # (once laid out again: under load the axes may still have their old size for a while)
    qtbot.waitUntil(lambda: drawn_texts(mosaic.plot.getAxis("left")) == ["L0", "L1"]
                    and drawn_texts(mosaic.plot.getAxis("top")) == ["H0", "H1", "H2"], timeout=5_000)
