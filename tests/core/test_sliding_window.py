"""sliding_window_mask against the rule written out cell by cell, and with attention_steps against torch SDPA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import attention_steps, causal_mask, sliding_window_mask


def rule(nq, nk, window, sinks):
    out = np.zeros((nq, nk), bool)
    for i in range(nq):
        p = nk - nq + i
        for j in range(nk):
            out[i, j] = j <= p and (p - window < j or j < sinks)
    return out


@pytest.mark.parametrize("nq, nk, window, sinks", [
    (6, None, 2, 0), (6, None, 3, 1), (5, 9, 2, 2), (1, 8, 3, 4), (4, None, 10, 0), (7, None, 1, 0), (0, 3, 1, 0),
])
def test_cells_follow_the_rule(nq, nk, window, sinks):
    m = sliding_window_mask(nq, nk, window=window, sinks=sinks)
    np.testing.assert_array_equal(m, rule(nq, nk if nk is not None else nq, window, sinks))


def test_by_hand_window_two_one_sink():
    m = sliding_window_mask(5, window=2, sinks=1).astype(int)
    np.testing.assert_array_equal(m, [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 0, 1, 1, 0],
                                      [1, 0, 0, 1, 1]])


def test_a_wide_window_is_the_causal_mask_and_window_one_the_diagonal():
    np.testing.assert_array_equal(sliding_window_mask(6, window=6), causal_mask(6))
    np.testing.assert_array_equal(sliding_window_mask(6, window=1), np.eye(6, dtype=bool))


@pytest.mark.parametrize("kwargs, name", [
    ({"window": 0}, "window"), ({"window": -2}, "window"), ({"window": 2, "sinks": -1}, "sinks"),
    ({"window": 2.5}, "window"), ({"window": 2, "n_keys": 2}, "n_keys"),
])
def test_bad_arguments_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        sliding_window_mask(4, **kwargs)


def test_attention_with_a_window_equals_sdpa():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 6, 4)), rng.normal(size=(2, 9, 4)), rng.normal(size=(2, 9, 3))
    mask = sliding_window_mask(6, 9, window=3, sinks=2)
    s = attention_steps(q, k, v, mask=mask)
    tq, tk, tv = (torch.as_tensor(x) for x in (q, k, v))
    ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.as_tensor(mask))
    np.testing.assert_allclose(s.output, ref.numpy(), rtol=1e-12, atol=1e-13)
    assert np.all(s.weights[..., ~mask] == 0)
