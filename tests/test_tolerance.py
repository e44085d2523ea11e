"""The tolerance rule of tests/tolerance.py: what it lets through and what it catches."""

import numpy as np
import pytest
import torch

from tests.tolerance import ULPS, assert_close, tolerance


def test_an_error_near_zero_is_judged_by_the_largest_value():
    """The failure a fresh clone met on an AVX-512 CPU: logits up to ~5, one near 0 off by 1.1e-5. A fixed
    atol=1e-5 fails it; the rule (64 ulps of 5 in float32, 3.8e-5) does not, on any element."""
    expected = np.linspace(-5, 5, 8800, dtype=np.float32)
    actual = expected.copy()
    actual[4400] += np.float32(1.1e-5)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(actual, expected, atol=1e-5, rtol=1e-5)
    assert_close(actual, expected)
    assert tolerance(actual, expected) == pytest.approx(ULPS * np.finfo(np.float32).eps * 5)


def test_a_real_mistake_still_fails():
    """A wrong number (a percent off, a weight on the wrong key) is thousands of ulps: it fails."""
    w = np.full((4, 4), 0.25, dtype=np.float32)
    wrong = w.copy()
    wrong[1, 2] += 1e-3
    with pytest.raises(AssertionError, match="ulps of the largest magnitude"):
        assert_close(wrong, w)


def test_float64_claims_are_judged_in_float64_and_float32_casts_by_their_origin():
    exact = np.linspace(0, 1, 100)
    off = exact + 1e-9
    with pytest.raises(AssertionError):
        assert_close(off, exact)  # float64: 64 ulps of 1 is 1.4e-14
    assert_close(off, exact, dtype=np.float32)  # float32 numbers cast to float64: judged as float32
    assert_close(off.astype(np.float32), exact)  # the least precise input decides


def test_torch_tensors_bfloat16_and_a_given_scale():
    a = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    assert_close(a, np.array([1.0, 2.0], dtype=np.float32))
    change = np.array([0.01, 0.02])  # a difference of two losses near 5: its rounding is the losses'
    assert_close(change + 3e-6, change, scale=5.0, dtype=np.float32)
    with pytest.raises(AssertionError):
        assert_close(change + 3e-6, change, dtype=np.float32)
