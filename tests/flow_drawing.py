"""What a flow canvas drew, read back from its record of every line (``FlowCanvas.drawn``): the Playground's and
the Training tab's flow tests compare it with weights they compute themselves."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.common.flow import MAX_LINE_WIDTH


def drawn_weights(canvas: Any, heads: int, lq: int, lk: int) -> np.ndarray:
    """Repaint, then rebuild (heads, Lq, Lk) from the widths drawn (width = weight × MAX_LINE_WIDTH)."""
    canvas.grab()  # paints, recording every line
    out = np.zeros((heads, lq, lk))
    for line in canvas.drawn:
        assert line.width == pytest.approx(line.weight * MAX_LINE_WIDTH, rel=1e-12)
        out[line.head, line.query, line.key] = line.width / MAX_LINE_WIDTH
    return out
