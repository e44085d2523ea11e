"""What the rotate step and the "why rotary is relative" plot draw: plain numbers, Qt-free.

Rotary position embedding (the rotate-half layout of Hugging Face's Llama/NeoX code, as ``attention_core.rotate``)
turns column pair p = (p, p + dims/2) of a query or key at position m by the angle m·θ_p, θ_p = base^(−2p/dims);
columns from ``dims`` on are left as they are (partial rotary). Two things follow that the Steps view shows:

- ``rotary_picture``: the angle of each column pair at each position, for the queries and for the keys (the map
  beside q and k before and after rotation), with the pairs' labels;
- ``relative_curves``: the score of one fixed q row and k row when the query sits at m and the key at n, per
  frequency pair, as the offset m − n moves. Pair p contributes (a·c + b·d)·cos(Δθ_p) + (a·d − b·c)·sin(Δθ_p)
  with (a, b) the query's pair, (c, d) the key's and Δ = m − n: a function of the offset alone, which is why
  rotary attention is relative. The unrotated columns add a constant.

The views draw these and compute nothing; the numbers are the model's (``PlaygroundModel.result``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_SPAN = 16
"""The plot's offsets run at least from −16 to 16: enough for the fastest pairs to turn several times."""
SAMPLES_PER_STEP = 8
"""Offsets between whole positions too (a curve through the integers alone zigzags for the fastest pair, which
turns a radian per position); the whole offsets are among them."""


def rotary_width(d: int, dims: int | None) -> int:
    """The number of rotated columns: ``dims`` (even, ≤ d) or all of an even d."""
    width = d if dims is None else int(dims)
    if width < 2 or width > d or width % 2:
        raise ValueError(f"rotary needs an even number of rotated columns between 2 and d = {d}, got {width}")
    return width


def frequencies(base: float, dims: int) -> np.ndarray:
    """θ_p = base^(−2p/dims) for p = 0 … dims/2 − 1: radians per position of each pair (fastest first)."""
    return np.asarray(float(base) ** (-np.arange(0, dims, 2, dtype=np.float64) / dims))


def pair_labels(dims: int, prefix: str = "k") -> list[str]:
    """The columns each pair turns: "k0·k2" for pair 0 of dims = 4 (rotate-half: p with p + dims/2)."""
    half = dims // 2
    return [f"{prefix}{p}·{prefix}{p + half}" for p in range(half)]


def angles(positions: Any, base: float, dims: int) -> np.ndarray:
    """(len(positions), dims/2): the angle (radians) each pair turns at each position."""
    pos = np.asarray(positions, dtype=np.float64).reshape(-1)
    return np.asarray(pos[:, None] * frequencies(base, dims)[None, :])


@dataclass(frozen=True)
class RotaryPicture:
    """The rotate step's angle maps: ``q_angles`` (Lq, pairs) and ``k_angles`` (Lk, pairs) in radians."""

    base: float
    dims: int
    d: int
    q_positions: np.ndarray
    k_positions: np.ndarray
    q_angles: np.ndarray
    k_angles: np.ndarray
    labels: tuple[str, ...]
    thetas: np.ndarray


def default_positions(steps: Any) -> tuple[np.ndarray, np.ndarray]:
    """The positions the steps were rotated at: theirs, or 0 … L − 1 for queries and for keys."""
    given = getattr(steps, "positions", None)
    if given is not None:
        return np.asarray(given[0]).reshape(-1), np.asarray(given[1]).reshape(-1)
    return np.arange(steps.q.shape[-2]), np.arange(steps.k.shape[-2])


def rotary_picture(steps: Any) -> RotaryPicture | None:
    """The angle maps of ``steps`` (an ``AttentionSteps``), or None when its rotate step is off."""
    base = getattr(steps, "rotary_base", None)
    if base is None:
        return None
    d = int(steps.q.shape[-1])
    dims = rotary_width(d, getattr(steps, "rotary_dims", None))
    qp, kp = default_positions(steps)
    return RotaryPicture(float(base), dims, d, qp, kp, angles(qp, base, dims), angles(kp, base, dims),
                         tuple(pair_labels(dims)), frequencies(base, dims))


@dataclass(frozen=True)
class RelativeCurves:
    """Score of q row ``query`` with k row ``key`` at offsets ``offsets`` (m − n): ``per_pair`` (pairs, offsets),
    ``rest`` the unrotated columns' constant, ``total`` = their sum (the unscaled score q_rot·k_rot);
    ``offset`` is where the pair sits now (its query's position − its key's), ``labels`` name the pairs."""

    offsets: np.ndarray
    per_pair: np.ndarray
    rest: float
    total: np.ndarray
    query: int
    key: int
    offset: int
    labels: tuple[str, ...]
    thetas: np.ndarray


def pair_scores(q_row: Any, k_row: Any, offsets: Any, *, base: float, dims: int | None = None) -> np.ndarray:
    """(pairs, len(offsets)): each pair's share of R(mθ)q · R(nθ)k at Δ = m − n (see the module's docstring)."""
    q, k = np.asarray(q_row, dtype=np.float64), np.asarray(k_row, dtype=np.float64)
    width = rotary_width(q.shape[-1], dims)
    half = width // 2
    a, b, c, d = q[:half], q[half:width], k[:half], k[half:width]
    phase = np.asarray(offsets, dtype=np.float64)[None, :] * frequencies(base, width)[:, None]
    return np.asarray((a * c + b * d)[:, None] * np.cos(phase) + (a * d - b * c)[:, None] * np.sin(phase))


def relative_curves(steps: Any, query: int, key: int, span: int | None = None) -> RelativeCurves | None:
    """The plot's curves for q row ``query`` and k row ``key`` of ``steps`` (None when its rotate step is off).
    The offsets run from −span to span (default: the larger of ``DEFAULT_SPAN`` and the sequence lengths), in
    steps of 1 / ``SAMPLES_PER_STEP``."""
    picture = rotary_picture(steps)
    if picture is None:
        return None
    lq, lk = steps.q.shape[-2], steps.k.shape[-2]
    query, key = min(max(int(query), 0), lq - 1), min(max(int(key), 0), lk - 1)
    offset = int(picture.q_positions[query] - picture.k_positions[key])
    reach = max(DEFAULT_SPAN, lq, lk, abs(offset)) if span is None else int(span)
    offsets = np.linspace(-reach, reach, 2 * reach * SAMPLES_PER_STEP + 1)
    q_row, k_row = np.asarray(steps.q)[query], np.asarray(steps.k)[key]
    per_pair = pair_scores(q_row, k_row, offsets, base=picture.base, dims=picture.dims)
    rest = float(np.dot(q_row[picture.dims:], k_row[picture.dims:]))
    return RelativeCurves(offsets, per_pair, rest, per_pair.sum(axis=0) + rest, query, key, offset,
                          picture.labels, picture.thetas)


def plotted_pair(pinned: tuple[str, int, int] | None, steps: Any) -> tuple[int, int]:
    """Which q·k pair the plot follows: the pinned cell of a query × key map, else the last query with the first
    key (the largest offset of a causal setting)."""
    if pinned is not None and pinned[0] in QUERY_KEY_VIEWS:
        return pinned[1], pinned[2]
    return steps.q.shape[-2] - 1, 0


QUERY_KEY_VIEWS = ("scores", "scaled", "capped", "biased", "masked", "weights")
"""The step maps whose rows are queries and columns keys: a pinned cell of these picks the plot's pair."""


def rotate_caption(picture: RotaryPicture) -> str:
    """The words on the rotate step's arrow: what turns, by how much, with this setting's numbers."""
    part = f"the first {picture.dims} of {picture.d} columns" if picture.dims < picture.d else "every column"
    return (f"Q, K ⟶ <b>ⓡ rotate</b> {part}: pair (p, p + {picture.dims // 2}) turns by position × θ<sub>p</sub>, "
            f"θ<sub>p</sub> = {picture.base:g}<sup>−2p/{picture.dims}</sup>; ① is made from the rotated Q and K")


@dataclass(frozen=True)
class RotaryData:
    """Everything the rotate step draws for one result: the angle maps, their row labels, the caption, and the
    plot's curves for a q·k pair (``curves``, kept per pair)."""

    steps: Any
    picture: RotaryPicture
    q_rows: list[str]
    k_rows: list[str]
    same_positions: bool
    caption: str
    _curves: dict[tuple[int, int], RelativeCurves | None]

    def curves(self, query: int, key: int) -> RelativeCurves | None:
        pair = (int(query), int(key))
        if pair not in self._curves:
            self._curves[pair] = relative_curves(self.steps, *pair)
        return self._curves[pair]


_LAST: list[RotaryData] = []


def rotary_data(steps: Any) -> RotaryData | None:
    """The rotate step's data for ``steps`` (None when its rotate step is off); the last one is kept, so a hover
    or a pin that redraws the plot does not work the maps out again."""
    if _LAST and _LAST[0].steps is steps:
        return _LAST[0]
    picture = rotary_picture(steps)
    if picture is None:
        return None
    same = bool(np.array_equal(picture.q_positions, picture.k_positions))
    data = RotaryData(steps, picture, [f"m={int(p)}" for p in picture.q_positions],
                      [f"n={int(p)}" for p in picture.k_positions], same, rotate_caption(picture), {})
    _LAST[:] = [data]
    return data
