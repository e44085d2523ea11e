"""The report's per-head metrics: how spread out (entropy) or how peaked (focus) attention rows are."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validate import check_finite, to_numpy


def attention_entropy(weights: Any) -> np.ndarray:
    """Entropy of each attention row in nats, with 0*log(0) = 0. Shape: ``weights.shape[:-1]``.

    A uniform row over n keys gives log(n); a one-hot row gives 0; an all-zero (fully masked) row gives 0.
    """
    w = to_numpy(weights, "weights")
    check_finite(w, "weights")
    if np.any(w < 0):
        raise ValueError(f"weights: attention weights must be >= 0 (shape {w.shape})")
    logw = np.log(np.where(w > 0, w, 1.0))
    return -(w * logw).sum(axis=-1)


def focus_score(weights: Any) -> np.ndarray | float:
    """Mean over rows of the row maximum: 1 = every query looks at one key, 1/n = uniform.

    For (..., Lq, Lk) input the mean is over the query axis, giving shape (...); a single (Lq, Lk) map
    gives a float.
    """
    w = to_numpy(weights, "weights")
    check_finite(w, "weights")
    if w.ndim < 2:
        raise ValueError(f"weights: expected (..., Lq, Lk), got shape {w.shape}")
    focus = w.max(axis=-1).mean(axis=-1)
    return float(focus) if np.ndim(focus) == 0 else focus
