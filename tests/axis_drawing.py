"""What a pyqtgraph axis would draw at its current size, read from its own drawing plan (``generateDrawSpecs``):
the tests of axis labels (which show, which overlap) read it instead of pixels."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QImage, QPainter


def drawn_labels(axis: Any) -> list[tuple[str, Any]]:
    """(text, rect) of every label ``axis`` draws now."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [] if specs is None else [(text, rect) for rect, _flags, text in specs[2]]
