"""The colour ranges of the five step maps: which colour each number gets. Derived data, computed by the model.

Why here and not in each heatmap: a map that picks its own range (±max|v|) makes ① Scores and ② Scaled look
identical whatever the scale (the scale cancels out), and one edited cell that moves the maximum repaints every
other row in a new colour. So the model decides the ranges and the views only apply them:

- ``shared`` (the default): ① scores, ② scaled and ③ masked share one symmetric range, so scaling by 0.5 makes
  ② visibly paler than ①, and the mask's effect is the hatching, not a colour shift. Off: each gets its own.
- Ranges are rounded up to a "nice" bound (1, 1.5, 2, 3, 4, 5, 6, 8 × 10ⁿ). An edit that does not move the
  maximum past such a bound leaves the range, and so the colour of every unedited cell, exactly as it was;
  when an edit does move the range, ``notes`` says so ("⚠ range changed") along the colour bar (until the next
  edit); a preset's or a real head's new inputs are no edit, and say nothing of a change.
- ④ weights are always [0, 1]; ⑤ output has its own (nice) range: it is in value units, not score units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from app.common.levels import MIN_LEVEL
from attention_core import STEP_NAMES, AttentionSteps

SHARED_STEPS = ("scores", "scaled", "masked")
"""The signed steps in score units: the ones a shared range compares."""
NICE_STEPS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
"""Bounds a range is rounded up to (× 10ⁿ): at most 1.5× wider than the data, and stable under small edits."""
WEIGHT_LEVELS = (0.0, 1.0)
Levels = tuple[float, float]


def nice_bound(m: float) -> float:
    """The smallest of ``NICE_STEPS`` × 10ⁿ that is ≥ ``m`` (1.0 for zero, tiny or non-finite ``m``)."""
    if not math.isfinite(m) or m < MIN_LEVEL:
        return 1.0
    base = 10.0 ** math.floor(math.log10(m))
    for step in NICE_STEPS:
        if step * base >= m * (1 - 1e-12):
            return step * base
    return 10.0 * base  # pragma: no cover (10 is the last step)


def extent(values: np.ndarray) -> float:
    """The largest magnitude among the finite values (0.0 when there is none; −∞ of blocked cells is skipped)."""
    finite = values[np.isfinite(values)]
    return float(np.max(np.abs(finite))) if finite.size else 0.0


def range_words(levels: Levels) -> str:
    return f"±{levels[1]:.3g}"


@dataclass(frozen=True)
class StepColours:
    """Per step view: the colour ``levels`` to draw with and the ``notes`` its colour bar carries."""

    levels: dict[str, Levels] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    shared: bool = True


def step_colours(steps: AttentionSteps, shared: bool = True, previous: StepColours | None = None) -> StepColours:
    """The levels of every step map; a note names the shared range, and says when a range changed since
    ``previous`` (the ranges on screen before this change)."""
    levels: dict[str, Levels] = {}
    if shared:
        m = nice_bound(max(extent(getattr(steps, name)) for name in SHARED_STEPS))
        levels.update({name: (-m, m) for name in SHARED_STEPS})
    else:
        for name in SHARED_STEPS:
            m = nice_bound(extent(getattr(steps, name)))
            levels[name] = (-m, m)
    levels["weights"] = WEIGHT_LEVELS
    m = nice_bound(extent(steps.output))
    levels["output"] = (-m, m)
    notes: dict[str, str] = {}
    for name in STEP_NAMES:
        base = ("shared ①②③ " if shared and name in SHARED_STEPS else "fixed " if name == "weights" else "")
        words = "0…1" if name == "weights" else range_words(levels[name])
        old = None if previous is None else previous.levels.get(name)
        if old is not None and old != levels[name]:
            notes[name] = "⚠ range changed"  # short: it runs along a colour bar; the bar's numbers say the new one
        else:
            notes[name] = base + words
    return StepColours(levels, notes, shared)
