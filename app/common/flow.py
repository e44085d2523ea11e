"""What the Flow view draws (the bertviz idea): queries on the left, keys on the right, one line per (query, key)
pair and head whose width and opacity are the weight. Qt-free and feature-free (the drawing, ``app.widgets.flow``, sits
below every feature): the numbers are read from the Playground's result (``app.playground.views.flow.model``), a
recorded training step (``app.training.model.flow``) or a real model's layer, never recomputed, so a line is exactly
the weight the other views show.

``FlowData.weights`` is (heads, queries, keys); ``flow_line_style`` is the one rule from a weight to a line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_LINE_WIDTH = 12.0
"""A weight of 1 is drawn this many pixels wide; the width is proportional to the weight."""
TOP = 4
"""The hover read-out names at most this many weights per head, the largest first."""
MIN_ALPHA = 0.25
"""The opacity of a line of weight ~0 (1.0 at weight 1, linear in between), so weak links stay visible."""


@dataclass(frozen=True)
class FlowData:
    """The weights of one flow: (heads, queries, keys), the tokens, what the heads are called, and a title."""

    weights: np.ndarray
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    head_names: tuple[str, ...]
    title: str
    note: str = ""

    @property
    def num_heads(self) -> int:
        return int(self.weights.shape[0])

    def query_text(self, q: int, heads: list[int]) -> str:
        """Where query ``q`` looks, per shown head: "head 1: cat = 0.420 · sat = 0.310 · mat = 0.270"."""
        return self._text(heads, lambda h: self.weights[h, q, :], self.key_tokens,
                          f"query '{self.query_tokens[q]}' looks at")

    def key_text(self, k: int, heads: list[int]) -> str:
        """Who looks at key ``k``, per shown head."""
        return self._text(heads, lambda h: self.weights[h, :, k], self.query_tokens,
                          f"key '{self.key_tokens[k]}' is looked at by")

    def _text(self, heads: list[int], row: object, tokens: tuple[str, ...], lead: str) -> str:
        """Per head, the largest weights first (at most ``TOP``; weights under 0.0005 are left out: masked or
        negligible), so a 12-token probe reads in a line or two."""
        parts = []
        for h in heads:
            values = np.asarray(row(h))  # type: ignore[operator]
            order = [int(i) for i in np.argsort(-values, kind="stable") if values[i] >= 0.0005]
            cells = " · ".join(f"{tokens[i]} = {values[i]:.3f}" for i in order[:TOP])
            more = len(order) - TOP
            cells = (cells or "nothing above 0.000") + (f" · {more} more" if more > 0 else "")
            parts.append(f"{self.head_names[h]}: {cells}" if self.num_heads > 1 else cells)
        return f"{lead} — " + ("; ".join(parts) if parts else "no head shown")


def flow_line_style(weight: float) -> tuple[float, float]:
    """(width in pixels, opacity 0..1) of a line of this weight: width = weight × ``MAX_LINE_WIDTH``."""
    w = float(weight)
    return w * MAX_LINE_WIDTH, MIN_ALPHA + (1.0 - MIN_ALPHA) * w
