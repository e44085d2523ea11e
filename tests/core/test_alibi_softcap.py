"""ALiBi biases and soft-capping: against the paper's slopes, BLOOM's code, torch SDPA and a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import OPTIONAL_STEPS, STEP_TITLES, alibi_bias, attention_steps, causal_mask


def press_slopes(n):
    """Written out from Press et al.'s paper: 2^(-8i/n) for i = 1..n when n is a power of two."""
    return [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]


@pytest.mark.parametrize("heads", [1, 2, 4, 8, 16])
def test_power_of_two_slopes_are_the_papers(heads):
    b = alibi_bias(heads, 3)
    np.testing.assert_allclose(-b[:, 2, 1], press_slopes(heads), rtol=1e-13)  # distance 1


@pytest.mark.parametrize("heads", [3, 5, 6, 12, 20])
def test_any_head_count_matches_blooms_alibi_tensor(heads):
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    L = 6
    mask = torch.ones(1, L)
    ref = bloom.build_alibi_tensor(mask, heads, torch.float64).reshape(heads, 1, L)  # slope_h * key position
    mine = alibi_bias(heads, L)
    # BLOOM adds slope·j for every query; ours is −slope·(i − j) on the causal keys: equal up to a per-row constant
    rows = mine - ref.numpy()
    tri = causal_mask(L)
    for h in range(heads):
        for i in range(L):
            np.testing.assert_allclose(rows[h, i][tri[i]], rows[h, i][0], rtol=0, atol=1e-6)  # BLOOM: float32


def test_queries_sit_at_the_last_positions():
    b = alibi_bias(2, 2, 5)
    assert b.shape == (2, 2, 5)
    np.testing.assert_allclose(b[0, 0], -press_slopes(2)[0] * np.array([3, 2, 1, 0, 1]))
    np.testing.assert_allclose(b[1, 1], -press_slopes(2)[1] * np.array([4, 3, 2, 1, 0]))
    assert np.all(b <= 0)


@pytest.mark.parametrize("args", [(0, 3), (2, -1), (2, 4, 3), (1.5, 3)])
def test_bad_alibi_arguments_are_refused(args):
    with pytest.raises(ValueError):
        alibi_bias(*args)


def test_alibi_weights_and_output_equal_sdpa_with_a_float_mask():
    rng = np.random.default_rng(0)
    H, L = 4, 7
    q, k, v = rng.normal(size=(H, L, 8)), rng.normal(size=(H, L, 8)), rng.normal(size=(H, L, 5))
    bias, causal = alibi_bias(H, L), causal_mask(L)
    s = attention_steps(q, k, v, bias=bias, mask=causal)
    float_mask = torch.as_tensor(np.where(causal, bias, -np.inf))
    tq, tk, tv = (torch.as_tensor(x) for x in (q, k, v))
    ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=float_mask)
    np.testing.assert_allclose(s.output, ref.numpy(), rtol=1e-12, atol=1e-13)
    ref_w = torch.softmax(tq @ tk.transpose(-1, -2) / math.sqrt(8) + float_mask, dim=-1)
    np.testing.assert_allclose(s.weights, ref_w.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s.biased, s.scaled + bias, rtol=0, atol=0)
    np.testing.assert_array_equal(s.bias, bias)


def test_a_bias_may_add_the_heads_dimension_and_the_mask_follows():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    s = attention_steps(q, k, v, bias=alibi_bias(3, 5), mask=causal_mask(5))
    assert s.weights.shape == (3, 5, 5) and s.output.shape == (3, 5, 2) and s.fully_masked.shape == (3, 5)
    assert np.all(s.weights[:, 0, 1:] == 0)


def test_softcap_by_hand():
    q, k, v = [[2.0, 0.0]], [[3.0, 0.0], [1.0, 0.0], [-4.0, 0.0]], [[1.0], [2.0], [3.0]]
    s = attention_steps(q, k, v, softcap=2.0, scale=1.0)
    scaled = np.array([6.0, 2.0, -8.0])
    capped = 2.0 * np.tanh(scaled / 2.0)  # 2·tanh(3), 2·tanh(1), 2·tanh(−4)
    np.testing.assert_allclose(s.capped[0], capped, rtol=1e-15)
    w = np.exp(capped) / np.exp(capped).sum()
    np.testing.assert_allclose(s.weights[0], w, rtol=1e-14)
    np.testing.assert_allclose(s.output[0], w @ [1.0, 2.0, 3.0], rtol=1e-14)
    assert s.softcap == 2.0 and np.all(np.abs(s.capped) < 2.0)


def test_softcap_caps_the_scaled_scores_then_the_bias_is_added_before_the_mask():
    """Soft-cap, then bias, then mask (tests/core/test_softcap_then_bias.py checks it against three references)."""
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(4, 3)) * 5, rng.normal(size=(4, 3)) * 5, rng.normal(size=(4, 2))
    bias = alibi_bias(1, 4)[0]
    s = attention_steps(q, k, v, bias=bias, softcap=3.0, mask=causal_mask(4))
    np.testing.assert_allclose(s.capped, 3.0 * np.tanh(s.scaled / 3.0), rtol=1e-15)
    np.testing.assert_allclose(s.biased, s.capped + bias, rtol=1e-15)
    np.testing.assert_array_equal(s.masked[causal_mask(4)], s.biased[causal_mask(4)])
    assert np.all(s.masked[~causal_mask(4)] == -np.inf)


def test_torch_path_keeps_bias_and_cap():
    from attention_core.positions import check_options
    from attention_core.steps import _prepare, _steps_torch

    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3))
    bias = alibi_bias(2, 5)
    ref = attention_steps(q, k, v, bias=bias, softcap=1.5, mask=causal_mask(5))
    qa, ka, va, m, sc = _prepare(q, k, v, causal_mask(5), None)
    parts = _steps_torch(qa, ka, va, m, sc, "cpu", check_options(qa, ka, None, None, None, bias, 1.5))
    for name in ("biased", "capped", "weights", "output"):
        np.testing.assert_allclose(parts[name], getattr(ref, name), atol=1e-12, err_msg=name)


@pytest.mark.parametrize("kwargs, words", [
    ({"softcap": 0.0}, "softcap"), ({"softcap": -1.0}, "softcap"), ({"softcap": float("inf")}, "softcap"),
    ({"softcap": "x"}, "softcap"), ({"bias": np.full((3, 3), np.nan)}, "bias"),
    ({"bias": np.zeros((3, 4))}, "bias"), ({"bias": [[1.0, np.inf, 0.0]] * 3}, "bias"),
])
def test_bad_bias_or_softcap_is_refused_by_name(kwargs, words):
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match=words):
        attention_steps(x, x, x, **kwargs)


def test_optional_steps_have_titles():
    assert OPTIONAL_STEPS == ("rotated", "capped", "biased")  # the order computed
    assert all(STEP_TITLES[name] for name in OPTIONAL_STEPS)
