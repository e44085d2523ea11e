"""What the Playground can show, decided once: the result of a state (computed on its device, the CPU when the
device fails, refused when a number is too large to draw) and whether a cell exists in it. Qt-free; the model
(``playground.PlaygroundModel``) calls these on every change."""

from __future__ import annotations

import numpy as np

from app.playground.model.explain import MULTIHEAD_VIEWS
from app.playground.model.state import PlaygroundState, Result
from attention_core import STEP_NAMES

DISPLAY_LIMIT = 1e150
"""The largest magnitude a shown number may have: a colour range of ±1e308 overflows (found by the monkey test)."""
STEP_VIEWS = STEP_NAMES  # the five step maps, by the AttentionSteps field each shows
OPTIONAL_VIEWS = ("q_rotated", "k_rotated", "capped", "biased")
"""The maps of the optional steps (``AttentionSteps`` fields, None while their option is off), in the order computed:
the soft-cap before the bias (``attention_core.OPTIONAL_STEPS``)."""
CELL_VIEWS = (*STEP_VIEWS, *OPTIONAL_VIEWS)
"""Every step map a cell can be pinned or hovered in (an optional one only while it is on)."""


def compute(state: PlaygroundState) -> Result:
    """The steps of ``state``, with the multi-head split when it has more than one head."""
    result = state.compute()
    return state.compute_heads(result) if state.num_heads > 1 else result


def compute_shown(state: PlaygroundState) -> tuple[Result, str]:
    """The result of ``state`` and a device note ("" unless the device failed: then ``state.device`` is set to the
    CPU, the result is the CPU's and the note says what failed). ValueError when the result cannot be shown
    (overflow, a failing CPU computation)."""
    note = ""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            result = compute(state)
    except RuntimeError as exc:  # torch on a GPU: out of memory, a driver error …
        if state.device == "cpu":
            raise ValueError(f"computing failed ({exc}); the previous state is kept") from None
        # nothing is lost: say so and go on computing on the CPU
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        note = f"{state.device} failed ({reason}); computing on the CPU instead"
        state.device = "cpu"
        with np.errstate(over="ignore", invalid="ignore"):
            result = compute(state)
    s = result.steps
    parts = [result.q, result.k, result.v, s.scores, s.scaled, s.weights, s.output]
    if result.heads is not None:
        parts += [result.heads.heads.scaled, result.heads.concat, result.heads.output]
    if not all(np.isfinite(p).all() and np.abs(p).max(initial=0.0) <= DISPLAY_LIMIT for p in parts):
        raise ValueError(f"these numbers are too large: a result would pass ±{DISPLAY_LIMIT:.0e} (or overflow to "
                         "infinity), which no map can show; the previous value is kept")
    return result, note


def cell_exists(c: Result, view: str, row: int, col: int) -> bool:
    """Whether ``view`` (a step map, a head "head:N" or a multi-head map) of result ``c`` has the cell (row, col)."""
    if row < 0 or col < 0:
        return False
    if view in CELL_VIEWS:
        arr = getattr(c.steps, view, None)
        return arr is not None and row < arr.shape[0] and col < arr.shape[1]
    mh = c.heads
    if mh is None:
        return False
    if view.startswith("head:"):
        try:
            h = int(view.split(":", 1)[1])
        except ValueError:
            return False
        return 0 <= h < mh.num_heads and row < mh.heads.weights.shape[1] and col < mh.heads.weights.shape[2]
    shapes = {"split:Q": c.q.shape, "split:K": c.k.shape, "split:V": c.v.shape, "concat": mh.concat.shape,
              "w_o": mh.w_o.shape, "mh_output": mh.output.shape}
    if view not in MULTIHEAD_VIEWS:
        return False
    rows, cols = shapes[view][:2]
    return row < rows and col < cols
