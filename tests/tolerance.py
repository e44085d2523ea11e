"""Tolerances by rule: how close two float results must be, from their dtype and the size of what was computed.

Why a rule and not a number per test: float32 results differ in their last bits from one CPU to another (AVX-512,
AVX2 and the scalar ``default`` kernels sum in different orders, and so do 1 and 2 threads). An absolute tolerance
such as ``atol=1e-5`` is a few ulps of a value near 100 but hundreds of ulps of one near 0.01 — and a value near 0
computed from terms near 5 (a logit, a difference of two losses) carries the rounding of those terms, not its own.
Four tests with such fixed tolerances failed a fresh clone on an AVX-512 machine while passing where they were
written (1 of 8,800 logits off by 1.1e-5 against 1e-5, on logits near 0 while others reached ~5).

The rule: the tolerance is ``ulps`` units in the last place of the dtype, *of the largest magnitude compared*
(``scale``, by default the largest absolute value in either array), the same for every element; no relative part.
A reduction of n terms summed in another order moves the result by at most ~n·eps of the terms' magnitudes, and a
model pushes that through a few layers: 64 ulps of the largest value (7.6e-6 of it in float32) covers a tiny model's
forward pass on any vector unit while staying far below a real mistake (a wrong mask, a head off by one, a missing
scale moves results by percents). Exactness claims ("the cache equals one whole run") are made in float64, where
the same rule is 64 · 2.2e-16 of the largest value.

``dtype``: the precision the numbers were computed in. By default the least precise float dtype of the two inputs
(a float32 result compared with a float64 reference is judged as float32); pass ``np.float32`` when float32 results
were cast to float64 before the comparison.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ULPS = 64
"""Units in the last place of the largest magnitude compared (see the module's docstring for why 64)."""


def _array(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor (bfloat16 has no numpy dtype: float32 holds it exactly)
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def _eps(*arrays: np.ndarray, dtype: Any = None) -> float:
    if dtype is not None:
        return float(np.finfo(np.dtype(dtype)).eps)
    floats = [a.dtype for a in arrays if np.issubdtype(a.dtype, np.floating)]
    if not floats:  # integers or Python numbers against each other: judged as float64
        return float(np.finfo(np.float64).eps)
    return max(float(np.finfo(d).eps) for d in floats)


def tolerance(actual: Any, expected: Any, *, ulps: float = ULPS, scale: float | None = None,
              dtype: Any = None) -> float:
    """The absolute tolerance the rule gives for comparing ``actual`` with ``expected``: ``ulps`` · eps(dtype) ·
    ``scale`` (default: the largest finite magnitude in either array; at least the dtype's smallest normal, so two
    all-zero arrays must be equal)."""
    a, e = _array(actual), _array(expected)
    if scale is None:
        mags = [float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0)) for x in (a, e) if x.size]
        scale = max(mags, default=0.0)
    eps = _eps(a, e, dtype=dtype)
    return ulps * eps * max(float(scale), float(np.finfo(np.float32).tiny))


def assert_close(actual: Any, expected: Any, *, ulps: float = ULPS, scale: float | None = None, dtype: Any = None,
                 err_msg: str = "", equal_nan: bool = False) -> None:
    """``np.testing.assert_allclose`` with the rule's tolerance (see ``tolerance``); the message says which rule."""
    a, e = _array(actual), _array(expected)
    atol = tolerance(a, e, ulps=ulps, scale=scale, dtype=dtype)
    note = f"tolerance {atol:.3g} = {ulps:g} ulps of the largest magnitude compared"
    np.testing.assert_allclose(a, e, rtol=0, atol=atol, equal_nan=equal_nan,
                               err_msg=f"{err_msg} ({note})" if err_msg else note)
