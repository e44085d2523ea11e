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
