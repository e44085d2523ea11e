"""What the 3D tab draws: one step's map as a height field. Qt-free (the view only hands it to OpenGL).

Masked cells are −∞ in ③ (a softmax input that gives weight 0); no surface can rise from −∞, so they are drawn at
the lowest finite value of the map and counted in ``note``; every other height is the map's number itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.playground.model.playground import PlaygroundModel
from attention_core import STEP_NAMES, STEP_TITLES

STEP_LABELS = {name: f"{n}. {STEP_TITLES[name]}" for n, name in enumerate(STEP_NAMES, start=1)}
"""The step choices, numbered 1–5 like the Steps view's ①–⑤."""


@dataclass(frozen=True)
class Surface:
    """One step as heights: ``z[i, j]`` is the map's cell (masked cells at ``floor``); rows are queries."""

    step: str
    title: str
    z: np.ndarray
    masked: np.ndarray
    floor: float
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    note: str


def surface_of(model: PlaygroundModel, step: str) -> Surface:
    """The playground's current ``step`` map (one of ``STEP_NAMES``) as a surface."""
    if step not in STEP_NAMES:
        raise ValueError(f"step must be one of {', '.join(STEP_NAMES)}, got {step!r}")
    values = np.asarray(getattr(model.result, step), dtype=np.float64)
    finite = np.isfinite(values)
    floor = float(values[finite].min()) if finite.any() else 0.0
    z = np.where(finite, values, floor)
    rows = tuple(model.query_tokens)
    cols = tuple(f"v{j}" for j in range(values.shape[1])) if step == "output" else tuple(model.key_tokens)
    masked = ~finite
    lo, hi = float(z.min()), float(z.max())
    note = f"height = the value of each cell ({lo:.3g} … {hi:.3g}, axis from 0); rows are queries, columns " + (
        "the output's columns" if step == "output" else "keys")
    if masked.any():
        note += f"; {int(masked.sum())} masked cell(s) (−∞) drawn at the lowest value, {floor:.3g}"
    return Surface(step, STEP_LABELS[step], z, masked, floor, rows, cols, note)
