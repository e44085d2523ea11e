"""flash_steps against attention_steps, torch SDPA and torch.logsumexp; its tiles against the algorithm's rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import (
    FlashSteps,
    FlashTile,
    alibi_bias,
    attention_steps,
    causal_mask,
    flash_steps,
    padding_mask,
    sliding_window_mask,
)


def make_mask(kind, lq, lk, rng):
    if kind == "none":
        return None
    if kind == "causal":  # queries at the last positions, as a decoding block
        return np.tril(np.ones((lq, lk), bool), k=lk - lq)
    if kind == "padding":
        return padding_mask([max(1, lk - 2)], lk)[0, 0].repeat(lq, axis=0)
    if kind == "sliding":
        return sliding_window_mask(lq, lk, window=2, sinks=1) if lk >= lq else rng.random((lq, lk)) > 0.4
    m = rng.random((lq, lk)) > 0.5  # random, with fully masked rows
    m[rng.integers(0, lq)] = False
    return m


def sdpa_reference(q, k, v, mask):
    tq, tk, tv = (torch.as_tensor(x)[None] for x in (q, k, v))
    m = None if mask is None else torch.as_tensor(mask)[None]
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=m)[0]
    if mask is not None:
        out = out.masked_fill(~torch.as_tensor(mask).any(dim=-1, keepdim=True), 0.0)  # SDPA gives NaN there
    scores = (torch.as_tensor(q) @ torch.as_tensor(k).T) / math.sqrt(q.shape[1])
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(mask), float("-inf"))
    return out.numpy(), torch.logsumexp(scores, dim=-1).numpy()


@settings(max_examples=60, deadline=None)
@given(lq=st.integers(1, 11), lk=st.integers(1, 13), d=st.integers(1, 5), dv=st.integers(1, 4),
       bq=st.integers(1, 6), bk=st.integers(1, 6), kind=st.sampled_from(["none", "causal", "padding", "sliding",
                                                                       "random"]),
       seed=st.integers(0, 2**31 - 1))
def test_equals_attention_steps_sdpa_and_logsumexp(lq, lk, d, dv, bq, bk, kind, seed):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(lq, d)) * 3, rng.normal(size=(lk, d)) * 3, rng.normal(size=(lk, dv))
    if kind in ("causal", "sliding") and lk < lq:
        kind = "random"
    mask = make_mask(kind, lq, lk, rng)
    f = flash_steps(q, k, v, mask=mask, block_q=bq, block_k=bk)
    s = attention_steps(q, k, v, mask=mask)
    np.testing.assert_allclose(f.output, s.output, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(f.fully_masked, s.fully_masked)
    ref_out, ref_lse = sdpa_reference(q, k, v, mask)
    np.testing.assert_allclose(f.output, ref_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(f.logsumexp, ref_lse, rtol=1e-12, atol=1e-12)  # −inf rows match −inf
    # every (query block, key block) pair once, query block by query block
    order = [(t.q_block, t.k_block) for t in f.tiles]
    assert order == [(i, j) for i in range(math.ceil(lq / bq)) for j in range(math.ceil(lk / bk))]


def test_a_causal_mask_skips_the_tiles_above_the_diagonal_and_computes_nothing_there():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(8, 4)), rng.normal(size=(8, 4)), rng.normal(size=(8, 3))
    f = flash_steps(q, k, v, mask=causal_mask(8), block_q=2, block_k=2)
    skipped = {(t.q_block, t.k_block) for t in f.tiles if t.skipped}
    assert skipped == {(i, j) for i in range(4) for j in range(4) if j > i}
    for t in f.tiles:
        if t.skipped:  # nothing changed: the running state passes through
            np.testing.assert_array_equal(t.m, t.m_before)
            np.testing.assert_array_equal(t.l, t.l_before)
            assert np.all(t.s == -np.inf) and np.all(t.p == 0)


def test_the_running_state_follows_the_online_softmax_rules():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 2)), rng.normal(size=(6, 2)) * 4, rng.normal(size=(6, 2))
    f = flash_steps(q, k, v, block_q=3, block_k=2, scale=1.0)
    full = q @ k.T
    for t in f.tiles:
        seen = full[:, : t.cols.stop]  # the keys swept so far
        np.testing.assert_allclose(t.s, full[:, t.cols.start:t.cols.stop], rtol=1e-14)
        np.testing.assert_allclose(t.m, seen.max(axis=1), rtol=1e-14)
        np.testing.assert_allclose(t.l, np.exp(seen - t.m[:, None]).sum(axis=1), rtol=1e-13)
        np.testing.assert_allclose(t.o, np.exp(seen - t.m[:, None]) @ v[: t.cols.stop], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(t.p, np.exp(t.s - t.m[:, None]), rtol=1e-14)
        if t.k_block:
            np.testing.assert_allclose(t.rescale, np.exp(t.m_before - t.m), rtol=1e-14)
    np.testing.assert_allclose(f.row_max, full.max(axis=1))
    assert any(np.any(t.rescale < 1) for t in f.tiles[1:])  # a larger max arrived and rescaled the past


def test_never_forms_the_full_matrix():
    rng = np.random.default_rng(2)
    n, d = 512, 16
    q, k, v = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d))
    f = flash_steps(q, k, v, mask=causal_mask(n), block_q=32, block_k=64)
    assert f.full_matrix_elements == n * n
    assert f.largest_intermediate <= max(32 * 64, 32 * d)
    for t in f.tiles:
        for arr in (t.s, t.p, t.o, t.m, t.l, t.rescale, t.m_before, t.l_before):
            assert arr.size <= 32 * 64
    np.testing.assert_allclose(f.output, attention_steps(q, k, v, mask=causal_mask(n)).output, atol=1e-12)


def test_bias_and_softcap_act_per_tile_as_in_attention_steps():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(5, 4)) * 3, rng.normal(size=(5, 4)) * 3, rng.normal(size=(5, 2))
    bias = alibi_bias(1, 5)[0]
    f = flash_steps(q, k, v, mask=causal_mask(5), bias=bias, softcap=2.0, block_q=2, block_k=3)
    s = attention_steps(q, k, v, mask=causal_mask(5), bias=bias, softcap=2.0)
    np.testing.assert_allclose(f.output, s.output, atol=1e-12)


def test_float32_stays_float32():
    x = np.ones((4, 2), np.float32)
    f = flash_steps(x, x, x)
    assert f.output.dtype == np.float32 and f.tiles[0].s.dtype == np.float32
    assert isinstance(f, FlashSteps) and isinstance(f.tiles[0], FlashTile)


@pytest.mark.parametrize("kwargs, words", [
    ({"block_q": 0}, "block_q"), ({"block_k": -1}, "block_k"), ({"block_q": 1.5}, "block_q"),
    ({"block_k": True}, "block_k"), ({"mask": np.ones((2, 3, 3), bool)}, "mask"), ({"softcap": 0}, "softcap"),
])
def test_bad_arguments_are_refused_by_name(kwargs, words):
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match=words):
        flash_steps(x, x, x, **kwargs)


def test_more_than_one_head_is_refused():
    with pytest.raises(ValueError, match="one head"):
        flash_steps(np.ones((2, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 2)))
