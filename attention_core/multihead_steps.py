"""The multi-head split in numpy (no torch): what the playground draws and what MultiHeadAttention explains.

Shapes: H heads, L sequence, d_model = H * d_k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validate import check_finite, to_bool_mask, to_numpy
from .steps import AttentionSteps, attention_steps


def parameter_count(d_model: int, num_heads: int, bias: bool = True) -> int:
    """Parameters of W_Q, W_K, W_V, W_O: 4*d_model^2 (+ 4*d_model biases), whatever the number of heads."""
    check_heads(d_model, num_heads)
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def check_heads(d_model: int, num_heads: int) -> int:
    """Return d_k = d_model // num_heads, or raise ValueError if the split is not exact."""
    if num_heads < 1 or d_model < 1:
        raise ValueError(f"d_model ({d_model}) and num_heads ({num_heads}) must be positive")
    if d_model % num_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
    return d_model // num_heads


@dataclass(frozen=True)
class MultiHeadSteps:
    """The multi-head split made visible (numpy, one sequence).

    ``q_heads``/``k_heads``/``v_heads`` (H, L, d_k); ``heads``: the per-head AttentionSteps (batched over H);
    ``concat`` (Lq, H*d_v): head outputs side by side; ``w_o`` (H*d_v, d_out); ``output`` = concat @ w_o
    (+ ``b_o``).
    """

    num_heads: int
    q_heads: np.ndarray
    k_heads: np.ndarray
    v_heads: np.ndarray
    heads: AttentionSteps
    concat: np.ndarray
    w_o: np.ndarray
    b_o: np.ndarray | None
    output: np.ndarray

    def _repr_html_(self) -> str:  # Jupyter draws every head's weights, the concat and the output
        from .notebook import html_block, multihead_svg

        return html_block(multihead_svg(self))


def split_heads(x: np.ndarray, num_heads: int, name: str = "x") -> np.ndarray:
    """(L, H*d) -> (H, L, d): head h takes columns h*d .. (h+1)*d - 1."""
    if x.shape[-1] % num_heads:
        raise ValueError(f"{name}: width {x.shape[-1]} is not divisible by {num_heads} heads (shape {x.shape})")
    d = x.shape[-1] // num_heads
    return np.swapaxes(x.reshape(*x.shape[:-1], num_heads, d), -2, -3)


def multi_head_steps(
    q: Any, k: Any, v: Any, num_heads: int, *, w_o: Any = None, b_o: Any = None, mask: Any = None,
    scale: float | None = None, device: Any = "cpu",
) -> MultiHeadSteps:
    """Split already-projected Q (Lq, D), K (Lk, D), V (Lk, Dv) into heads, attend per head, concat, apply W_O.

    ``w_o`` defaults to the identity (so ``output`` = ``concat``). ``scale`` defaults to 1/sqrt(D/H).
    """
    qa, ka, va = to_numpy(q, "q"), to_numpy(k, "k"), to_numpy(v, "v")
    for name, arr in (("q", qa), ("k", ka), ("v", va)):
        if arr.ndim != 2:
            raise ValueError(f"{name}: expected (L, d) for multi_head_steps, got shape {arr.shape}")
    if num_heads < 1:
        raise ValueError(f"num_heads must be >= 1, got {num_heads}")
    qh, kh, vh = split_heads(qa, num_heads, "q"), split_heads(ka, num_heads, "k"), split_heads(va, num_heads, "v")
    if mask is not None:  # one sequence: batch dims of size 1 (e.g. a (1, 1, Lq, Lk) mask) go, per-head masks stay
        m = to_bool_mask(mask, "mask")
        while m.ndim > 3 and m.shape[0] == 1:
            m = m[0]
        if m.ndim > 3:
            raise ValueError(f"mask: shape {m.shape} has a batch dimension, but multi_head_steps attends one sequence")
        mask = m
    heads = attention_steps(qh, kh, vh, mask=mask, scale=scale, device=device)
    concat = np.swapaxes(heads.output, 0, 1).reshape(qa.shape[0], -1)
    if w_o is None:
        wo = np.eye(concat.shape[1], dtype=concat.dtype)
    else:
        wo = to_numpy(w_o, "w_o")
        check_finite(wo, "w_o")
        if wo.ndim != 2 or wo.shape[0] != concat.shape[1]:
            raise ValueError(f"w_o: expected ({concat.shape[1]}, d_out), got shape {wo.shape}")
    output = concat @ wo
    bo = None
    if b_o is not None:
        bo = to_numpy(b_o, "b_o").reshape(-1)
        if bo.shape[0] != output.shape[1]:
            raise ValueError(f"b_o: expected length {output.shape[1]}, got shape {bo.shape}")
        output = output + bo
    return MultiHeadSteps(num_heads, qh, kh, vh, heads, concat, wo, bo, output)
