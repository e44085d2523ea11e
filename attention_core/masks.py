"""Attention masks. Convention everywhere in this package: **True = may attend** (PyTorch's).

The lessons use both conventions: lesson 2.3's ``create_causal_mask`` returns True = *blocked*. A blocked mask
from such code converts with ``~mask``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def causal_mask(n: int) -> np.ndarray:
    """(n, n) bool: True on and below the diagonal, so query i sees keys 0..i."""
    if int(n) != n or n < 0:
        raise ValueError(f"causal_mask: n must be a non-negative integer, got {n!r}")
    return np.tril(np.ones((int(n), int(n)), dtype=bool))


def padding_mask(lengths: Sequence[int], max_len: int) -> np.ndarray:
    """(batch, 1, 1, max_len) bool: True for real tokens, False for padding.

    The two singleton axes broadcast over heads and queries, so the mask drops straight into
    ``attention_steps`` or ``MultiHeadAttention`` for (batch, heads, Lq, Lk) scores.
    """
    lengths_arr = np.asarray(list(lengths), dtype=np.int64).reshape(-1)
    if max_len < 0:
        raise ValueError(f"padding_mask: max_len must be >= 0, got {max_len}")
    if np.any(lengths_arr < 0) or np.any(lengths_arr > max_len):
        raise ValueError(f"padding_mask: every length must be in [0, {max_len}], got {lengths_arr.tolist()}")
    keep = np.arange(max_len)[None, :] < lengths_arr[:, None]
    return keep[:, None, None, :]


def sliding_window_mask(n_queries: int, n_keys: int | None = None, *, window: int, sinks: int = 0) -> np.ndarray:
    """(n_queries, n_keys) bool, causal: a query at position p may attend key j when p − window < j ≤ p (its own
    position and the window − 1 before it, as Mistral's and Gemma's local layers), or when j < ``sinks`` (the
    first tokens, kept as StreamingLLM's attention sinks; still causal, so a sink after the query stays hidden).

    ``n_keys`` defaults to ``n_queries``; with more keys than queries the queries sit at the *last* positions
    (query i at p = n_keys − n_queries + i), as rows decoded after a prompt. A window >= n_keys is the causal mask.
    """
    for name, value in (("n_queries", n_queries), ("n_keys", n_keys), ("window", window), ("sinks", sinks)):
        if value is None and name == "n_keys":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"sliding_window_mask: {name} must be an integer, got {value!r}")
    if window < 1:
        raise ValueError(f"sliding_window_mask: window must be >= 1 (a query sees at least itself), got {window}")
    if sinks < 0:
        raise ValueError(f"sliding_window_mask: sinks must be >= 0, got {sinks}")
    if n_queries < 0:
        raise ValueError(f"sliding_window_mask: n_queries must be >= 0, got {n_queries}")
    nq = int(n_queries)
    nk = nq if n_keys is None else int(n_keys)
    if nk < nq:
        raise ValueError(f"sliding_window_mask: n_keys ({nk}) must be >= n_queries ({nq}): queries are the last "
                         "positions")
    p = np.arange(nq)[:, None] + (nk - nq)
    j = np.arange(nk)[None, :]
    return (j <= p) & ((j > p - int(window)) | (j < int(sinks)))
