"""FlashAttention-2's forward pass as a record: tiles, an online softmax, and never the Lq × Lk matrix.

``flash_steps`` walks the query rows in blocks of ``block_q`` (outer loop) and, for each, the keys in blocks of
``block_k`` (inner loop). Per query row it keeps only a running max ``m``, a running sum ``l`` of exp(score − m)
and an *un-normalised* output ``o`` = Σ exp(score − m)·v. When a later key block brings a larger max, what was
summed so far is rescaled by exp(m_before − m) — so after the last block ``o / l`` is exactly softmax(scores)·V,
and ``m + log l`` is the row's logsumexp (what the backward pass keeps instead of the weights).

What it costs, honestly: this is a teaching record in numpy, not a kernel. It does the same arithmetic as
``attention_steps`` (plus the rescaling) in a Python loop of ceil(Lq/block_q)·ceil(Lk/block_k) tiles, and it
*keeps* every tile's scores, exp(scores − m) and running output so a view can replay them: the record as a whole
holds about 2·Lq·Lk numbers, spread over block-sized arrays. What it never holds is one Lq × Lk array — the point
of the algorithm, which ``largest_intermediate`` measures (the biggest array the loop itself works on). At
n = 1,024 see ``benchmarks/bench_flash.py`` for its time against ``attention_steps``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .positions import check_options
from .steps import _prepare


@dataclass(frozen=True)
class FlashTile:
    """One (query block, key block) pair, in the order computed. All arrays block-sized (copies, never views).

    ``rows``/``cols``: the query rows and key columns it covers. ``skipped``: the mask blocks every (row, column) of
    it, so nothing was computed (its ``s`` is all −inf, ``p`` zeros, ``rescale`` ones: the values it would have
    had). ``m_before``/``l_before`` (rows,): the running max and sum before it; ``s`` (rows, cols): the tile's
    scaled (soft-capped, biased) and masked scores; ``p`` = exp(s − m); ``rescale`` = exp(m_before − m) (1 where a row
    has seen no key yet); ``m``, ``l`` (rows,) and ``o`` (rows, d_v): the running max, sum and un-normalised output
    after it.
    """

    q_block: int
    k_block: int
    rows: range
    cols: range
    skipped: bool
    m_before: np.ndarray
    l_before: np.ndarray
    s: np.ndarray
    p: np.ndarray
    rescale: np.ndarray
    m: np.ndarray
    l: np.ndarray  # noqa: E741 - the paper's name for the running sum
    o: np.ndarray

    @property
    def elements(self) -> int:
        """Numbers this tile's step works on: its scores (and p, the same size) and the running output."""
        return max(self.s.size, self.o.size)


@dataclass(frozen=True)
class FlashSteps:
    """The tiled forward pass of one head. ``q`` (Lq, d), ``k`` (Lk, d), ``v`` (Lk, d_v); ``mask`` (Lq, Lk) bool
    or None (True = may attend); ``tiles`` in the order computed (query block by query block, each sweeping every
    key block once). ``row_max``/``row_sum`` (Lq,): the final m and l; ``logsumexp`` (Lq,) = m + log l (−inf for a
    fully masked row); ``output`` (Lq, d_v) = o / l (zeros for a fully masked row, as ``attention_steps``);
    ``largest_intermediate``: the element count of the largest array the loop held (block-sized: never Lq·Lk).
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None
    scale: float
    block_q: int
    block_k: int
    tiles: tuple[FlashTile, ...]
    row_max: np.ndarray
    row_sum: np.ndarray
    logsumexp: np.ndarray
    output: np.ndarray
    fully_masked: np.ndarray
    largest_intermediate: int
    seconds: float

    @property
    def full_matrix_elements(self) -> int:
        """Lq·Lk: what the scores (and again the weights) take when attention is computed the plain way."""
        return int(self.q.shape[0] * self.k.shape[0])

    @property
    def n_q_blocks(self) -> int:
        return math.ceil(self.q.shape[0] / self.block_q)

    @property
    def n_k_blocks(self) -> int:
        return math.ceil(self.k.shape[0] / self.block_k)

    @property
    def skipped_tiles(self) -> int:
        return sum(t.skipped for t in self.tiles)


def _check_block(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: must be a whole number >= 1, got {value!r}")
    return int(value)


def flash_steps(q: Any, k: Any, v: Any, *, mask: Any = None, scale: float | None = None, block_q: int = 2,
                block_k: int = 2, bias: Any = None, softcap: float | None = None) -> FlashSteps:
    """FlashAttention-2's forward pass on one head (q (Lq, d), k (Lk, d), v (Lk, d_v)), every tile recorded.

    ``mask``: bool or 0/1 broadcastable to (Lq, Lk), True = may attend; ``scale`` default 1/sqrt(d). ``softcap``
    (c > 0) and ``bias`` (broadcastable to (Lq, Lk)) act per tile exactly as in ``attention_steps`` (c·tanh(s/c),
    then + bias, then the mask: the order of FlashAttention's own kernel); rotary
    positions act before attention: pass the rotated q and k. Its ``output`` equals ``attention_steps(...).output``
    to rounding (1e-12 in float64). float32 input stays float32.
    """
    bq, bk = _check_block(block_q, "block_q"), _check_block(block_k, "block_k")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if np.ndim(x) != 2:
            raise ValueError(f"{name}: flash_steps takes one head, (L, d); got shape {np.shape(x)}")
    qa, ka, va, mask_b, scale_f = _prepare(q, k, v, mask, scale)
    if mask_b is not None and mask_b.ndim != 2:
        raise ValueError(f"mask: flash_steps takes one head, a mask broadcastable to (Lq, Lk); got {mask_b.shape}")
    opts = check_options(qa, ka, None, None, None, bias, softcap)
    if opts.bias is not None and opts.bias.ndim != 2:
        raise ValueError(f"bias: flash_steps takes one head, (Lq, Lk); got shape {opts.bias.shape}")
    lq, lk, dv = qa.shape[0], ka.shape[0], va.shape[1]
    dtype = qa.dtype
    t0 = time.perf_counter()
    tiles: list[FlashTile] = []
    row_max = np.full(lq, -np.inf, dtype=dtype)
    row_sum = np.zeros(lq, dtype=dtype)
    out = np.zeros((lq, dv), dtype=dtype)
    largest = 0
    for qi, r0 in enumerate(range(0, lq, bq)):
        rows = range(r0, min(r0 + bq, lq))
        q_blk = qa[r0:rows.stop]
        m = np.full(len(rows), -np.inf, dtype=dtype)
        l = np.zeros(len(rows), dtype=dtype)  # noqa: E741
        o = np.zeros((len(rows), dv), dtype=dtype)
        for ki, c0 in enumerate(range(0, lk, bk)):
            cols = range(c0, min(c0 + bk, lk))
            blk_mask = None if mask_b is None else mask_b[r0:rows.stop, c0:cols.stop]
            if blk_mask is not None and not blk_mask.any():
                shape = (len(rows), len(cols))
                tiles.append(FlashTile(qi, ki, rows, cols, True, m.copy(), l.copy(), np.full(shape, -np.inf, dtype),
                                       np.zeros(shape, dtype), np.ones(len(rows), dtype), m.copy(), l.copy(),
                                       o.copy()))
                continue
            s = (q_blk @ ka[c0:cols.stop].T) * scale_f
            if opts.softcap is not None:  # soft-cap, then bias, then mask, as attention_steps
                s = opts.softcap * np.tanh(s / opts.softcap)
            if opts.bias is not None:
                s = s + opts.bias[r0:rows.stop, c0:cols.stop]
            if blk_mask is not None:
                s = np.where(blk_mask, s, -np.inf).astype(dtype, copy=False)
            m_new = np.maximum(m, s.max(axis=1))
            seen = np.isfinite(m_new)  # rows with at least one key let through so far
            m_safe = np.where(seen, m_new, 0.0).astype(dtype, copy=False)
            p = np.exp(s - m_safe[:, None])
            rescale = np.where(seen, np.exp(np.where(seen, m - m_safe, 0.0)), 1.0).astype(dtype, copy=False)
            m_before, l_before = m, l
            l = rescale * l + p.sum(axis=1)  # noqa: E741
            o = rescale[:, None] * o + p @ va[c0:cols.stop]
            m = m_new
            largest = max(largest, s.size, o.size, q_blk.size)
            tiles.append(FlashTile(qi, ki, rows, cols, False, m_before.copy(), l_before.copy(), s, p, rescale,
                                   m.copy(), l.copy(), o.copy()))
        row_max[r0:rows.stop], row_sum[r0:rows.stop] = m, l
        out[r0:rows.stop] = np.divide(o, l[:, None], out=np.zeros_like(o), where=l[:, None] > 0)
    seconds = time.perf_counter() - t0
    with np.errstate(divide="ignore"):
        lse = np.where(row_sum > 0, row_max + np.log(np.where(row_sum > 0, row_sum, 1.0)), -np.inf).astype(dtype)
    fully = np.zeros(lq, dtype=bool) if mask_b is None else np.asarray(~mask_b.any(axis=1))
    return FlashSteps(qa, ka, va, None if mask_b is None else np.asarray(mask_b), scale_f, bq, bk, tuple(tiles),
                      row_max, row_sum, lse, out, fully, largest, seconds)
