"""Input checking shared by every public entry point: one place that turns bad input into a clear ValueError."""

from __future__ import annotations

from typing import Any

import numpy as np


def _is_torch_tensor(x: Any) -> bool:
    mod = type(x).__module__
    return mod.startswith("torch") and hasattr(x, "detach")


def to_numpy(x: Any, name: str) -> np.ndarray:
    """Convert numpy / torch / nested lists to a float ndarray, refusing non-numeric input by name.

    float32 and float16 inputs keep their precision (float16 is widened to float32); anything else,
    lists and integers included, becomes float64 so hand-typed examples are exact.
    """
    if _is_torch_tensor(x):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged lists
        raise ValueError(f"{name}: not a rectangular numeric array ({exc})") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise ValueError(f"{name}: expected numbers, got dtype {arr.dtype} (shape {arr.shape})")
    if arr.dtype == np.float32:
        return arr
    if arr.dtype == np.float16:
        return arr.astype(np.float32)
    return arr.astype(np.float64)


def check_finite(arr: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name}: contains NaN or infinity (first at index {tuple(int(i) for i in bad)}, shape {arr.shape})"
        )


def to_bool_mask(mask: Any, name: str = "mask") -> np.ndarray:
    """Accept bool or 0/1 masks from numpy, torch or lists; True/1 = may attend."""
    if _is_torch_tensor(mask):
        mask = mask.detach().cpu().numpy()
    try:
        arr = np.asarray(mask)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}: not a rectangular array ({exc})") from None
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name}: expected bool or 0/1 values, got dtype {arr.dtype}")
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(
            f"{name}: numeric masks must hold only 0 and 1 (1 = may attend); shape {arr.shape}"
        )
    return arr.astype(bool)
