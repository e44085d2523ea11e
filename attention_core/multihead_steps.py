"""The multi-head split in numpy (no torch): what the playground draws and what MultiHeadAttention explains.

Shapes: H heads, L sequence, d_model = H * d_k. Grouped-query attention (GQA; Llama 2 70B, Mistral, Qwen): G =
``num_kv_heads`` K/V heads, each serving H / G query heads (G = 1: multi-query; G = H: standard), so K and V are
only G * d_k wide and a decoder's KV cache shrinks by H / G.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validate import check_finite, to_bool_mask, to_numpy
from .steps import AttentionSteps, attention_steps, default_scale


def parameter_count(d_model: int, num_heads: int, bias: bool = True, *, num_kv_heads: int | None = None) -> int:
    """Parameters of W_Q, W_K, W_V, W_O: 4*d_model^2 (+ 4*d_model biases), whatever the number of heads.

    With ``num_kv_heads`` = G < H (grouped-query), W_K and W_V map d_model to G*d_k only: 2*d_model^2 +
    2*d_model*G*d_k (+ 2*d_model + 2*G*d_k biases).
    """
    d_k = check_heads(d_model, num_heads)
    kv_width = check_kv_heads(num_heads, num_kv_heads) * d_k
    weights = 2 * d_model * d_model + 2 * d_model * kv_width
    return weights + ((2 * d_model + 2 * kv_width) if bias else 0)


def kv_cache_bytes_per_token(num_kv_heads: int, d_head: int, *, layers: int = 1, bytes_per_element: int = 2) -> int:
    """Bytes a decoder's KV cache grows by per token: a key and a value (d_head each) per K/V head per layer, at
    ``bytes_per_element`` (2: float16/bfloat16, as models are served). = 2 * num_kv_heads * d_head * layers * bytes.
    """
    for name, value, low in (("num_kv_heads", num_kv_heads, 1), ("d_head", d_head, 1), ("layers", layers, 1),
                             ("bytes_per_element", bytes_per_element, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"kv_cache_bytes_per_token: {name} must be a whole number >= {low}, got {value!r}")
    return 2 * int(num_kv_heads) * int(d_head) * int(layers) * int(bytes_per_element)


def check_kv_heads(num_heads: int, num_kv_heads: int | None) -> int:
    """Return the number of K/V heads (``num_heads`` when None), or ValueError when it does not divide the heads."""
    if num_kv_heads is None:
        return int(num_heads)
    if isinstance(num_kv_heads, bool) or not isinstance(num_kv_heads, (int, np.integer)) or num_kv_heads < 1:
        raise ValueError(f"num_kv_heads must be a whole number >= 1, got {num_kv_heads!r}")
    if num_kv_heads > num_heads or num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads ({num_kv_heads}) must divide num_heads ({num_heads}): each K/V head serves "
                         "the same number of query heads")
    return int(num_kv_heads)


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

    ``q_heads`` (H, Lq, d_k); ``k_heads``/``v_heads`` (G, Lk, d) with G = ``num_kv_heads`` (= H unless grouped);
    ``heads``: the per-query-head AttentionSteps (batched over H; its ``k``/``v`` are each query head's K/V head);
    ``concat`` (Lq, H*d_v): head outputs side by side; ``w_o`` (H*d_v, d_out); ``output`` = concat @ w_o
    (+ ``b_o``). ``kv_group`` = H / G query heads per K/V head; ``kv_head_of[h]``: query head h's K/V head
    (h // kv_group, as Hugging Face's ``repeat_kv`` and torch's ``enable_gqa``).
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
    num_kv_heads: int | None = None
    kv_group: int | None = None
    kv_head_of: tuple[int, ...] | None = None

    @property
    def parameters(self) -> int:
        """W_Q, W_K, W_V, W_O with biases for this split (``parameter_count``), d_model = H * d_k."""
        d_model = self.num_heads * int(self.q_heads.shape[-1])
        return parameter_count(d_model, self.num_heads, num_kv_heads=self.num_kv_heads)

    @property
    def kv_cache_bytes_per_token(self) -> int:
        """What one more token adds to a KV cache of this layer in 16-bit numbers: G keys and G values."""
        g = int(self.k_heads.shape[0])
        return g * (int(self.k_heads.shape[-1]) + int(self.v_heads.shape[-1])) * 2

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
    q: Any, k: Any, v: Any, num_heads: int, *, num_kv_heads: int | None = None, w_o: Any = None, b_o: Any = None,
    mask: Any = None, scale: float | None = None, device: Any = "cpu", **options: Any,
) -> MultiHeadSteps:
    """Split already-projected Q (Lq, D), K (Lk, D), V (Lk, Dv) into heads, attend per head, concat, apply W_O.

    ``w_o`` defaults to the identity (so ``output`` = ``concat``). ``scale`` defaults to 1/sqrt(D/H).
    ``num_kv_heads`` G (must divide H): K is (Lk, G*d_k) and V (Lk, G*d_v) wide, query head h reads K/V head
    h // (H/G). Other keywords (``positions``, ``rotary_base``, ``rotary_dims``, ``bias``, ``softcap``) go to
    ``attention_steps`` for every head (each head soft-capped first, then its bias added, then the mask).
    ``num_heads`` must be a whole number >= 1 and q must have at least one row: anything else is a ValueError.
    """
    qa, ka, va = to_numpy(q, "q"), to_numpy(k, "k"), to_numpy(v, "v")
    for name, arr in (("q", qa), ("k", ka), ("v", va)):
        if arr.ndim != 2:
            raise ValueError(f"{name}: expected (L, d) for multi_head_steps, got shape {arr.shape}")
    if isinstance(num_heads, bool) or not isinstance(num_heads, (int, np.integer)) or num_heads < 1:
        # 2.0 or "2" would fail later inside numpy's reshape, with a TypeError naming no argument
        raise ValueError(f"num_heads must be a whole number >= 1, got {num_heads!r}")
    num_heads = int(num_heads)
    if qa.shape[0] == 0:  # the concatenation could not tell its width from zero rows (numpy: "cannot reshape")
        raise ValueError(f"q: multi_head_steps needs at least one query row, got shape {qa.shape}")
    kv = check_kv_heads(num_heads, num_kv_heads)
    qh = split_heads(qa, num_heads, "q")
    d_k = qh.shape[-1]
    if ka.shape[-1] != kv * d_k:
        raise ValueError(f"k: expected {kv} K/V heads x d_k {d_k} = {kv * d_k} columns, got shape {ka.shape}")
    if va.shape[-1] % kv:
        raise ValueError(f"v: width {va.shape[-1]} is not divisible by {kv} K/V heads (shape {va.shape})")
    kh, vh = split_heads(ka, kv, "k"), split_heads(va, kv, "v")
    group = num_heads // kv
    kv_head_of = tuple(h // group for h in range(num_heads))
    if mask is not None:  # one sequence: batch dims of size 1 (e.g. a (1, 1, Lq, Lk) mask) go, per-head masks stay
        m = to_bool_mask(mask, "mask")
        while m.ndim > 3 and m.shape[0] == 1:
            m = m[0]
        if m.ndim > 3:
            raise ValueError(f"mask: shape {m.shape} has a batch dimension, but multi_head_steps attends one sequence")
        mask = m
    if scale is None:
        scale = default_scale(d_k)
    index = list(kv_head_of)  # each query head reads its K/V head: (G, L, d) -> (H, L, d)
    heads = attention_steps(qh, kh[index], vh[index], mask=mask, scale=scale, device=device, **options)
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
    return MultiHeadSteps(num_heads, qh, kh, vh, heads, concat, wo, bo, output, kv, group, kv_head_of)
