"""Grouped-query heads: against torch SDPA's enable_gqa, Hugging Face's repeat_kv rule, and counts by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import causal_mask, kv_cache_bytes_per_token, multi_head_steps, parameter_count


@pytest.mark.parametrize("heads, kv", [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2), (8, 1)])
def test_outputs_and_weights_equal_sdpa_with_enable_gqa(heads, kv):
    rng = np.random.default_rng(heads * 10 + kv)
    d, L = 3, 5
    q, k, v = rng.normal(size=(L, heads * d)), rng.normal(size=(L, kv * d)), rng.normal(size=(L, kv * 2))
    mask = causal_mask(L)
    mh = multi_head_steps(q, k, v, heads, num_kv_heads=kv, mask=mask)
    tq = torch.as_tensor(q).reshape(L, heads, d).transpose(0, 1)[None]
    tk = torch.as_tensor(k).reshape(L, kv, d).transpose(0, 1)[None]
    tv = torch.as_tensor(v).reshape(L, kv, 2).transpose(0, 1)[None]
    ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.as_tensor(mask), enable_gqa=True)[0]
    np.testing.assert_allclose(mh.heads.output, ref.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(mh.concat, ref.transpose(0, 1).reshape(L, -1).numpy(), rtol=1e-12, atol=1e-13)
    # weights per query head: softmax of that head's q against its K/V head's keys, by hand
    for h in range(heads):
        g = h // (heads // kv)
        s = q[:, h * d:(h + 1) * d] @ k[:, g * d:(g + 1) * d].T / np.sqrt(d)
        s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        np.testing.assert_allclose(mh.heads.weights[h], w / w.sum(axis=1, keepdims=True), rtol=1e-12)
    assert mh.num_kv_heads == kv and mh.kv_group == heads // kv
    assert mh.kv_head_of == tuple(h // (heads // kv) for h in range(heads))
    assert mh.k_heads.shape == (kv, L, d) and mh.v_heads.shape == (kv, L, 2)


def test_query_heads_of_one_group_share_keys():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(4, 8)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    mh = multi_head_steps(q, k, v, 4, num_kv_heads=1)  # multi-query: all four read the one K/V head
    assert mh.kv_head_of == (0, 0, 0, 0)
    for h in range(4):
        np.testing.assert_array_equal(mh.heads.k[h], k)


def test_parameter_count_by_hand():
    # d_model 8, 4 heads (d_k 2), 2 K/V heads: W_Q 64, W_K 8x4 = 32, W_V 32, W_O 64; biases 8 + 4 + 4 + 8
    assert parameter_count(8, 4, num_kv_heads=2) == 64 + 32 + 32 + 64 + 8 + 4 + 4 + 8
    assert parameter_count(8, 4, bias=False, num_kv_heads=1) == 64 + 16 + 16 + 64
    assert parameter_count(8, 4) == parameter_count(8, 4, num_kv_heads=4) == 4 * 64 + 4 * 8
    rng = np.random.default_rng(1)
    mh = multi_head_steps(rng.normal(size=(3, 8)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), 4,
                          num_kv_heads=2)
    assert mh.parameters == 64 + 32 + 32 + 64 + 8 + 4 + 4 + 8


def test_kv_cache_bytes_by_hand():
    # Llama-2-7B-like: 32 layers, 32 K/V heads of 128 in float16: 2 * 32 * 128 * 32 * 2 = 524,288 bytes per token
    assert kv_cache_bytes_per_token(32, 128, layers=32) == 524_288
    assert kv_cache_bytes_per_token(8, 128, layers=32) == 131_072  # GQA with 8 K/V heads: a quarter
    assert kv_cache_bytes_per_token(1, 64, bytes_per_element=4) == 512
    rng = np.random.default_rng(2)
    mh = multi_head_steps(rng.normal(size=(3, 8)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), 4,
                          num_kv_heads=2)
    assert mh.kv_cache_bytes_per_token == kv_cache_bytes_per_token(2, 2) == 16


@pytest.mark.parametrize("kwargs, words", [
    ({"num_kv_heads": 3}, "divide"), ({"num_kv_heads": 0}, "num_kv_heads"), ({"num_kv_heads": 8}, "divide"),
    ({"num_kv_heads": 2.0}, "num_kv_heads"),
])
def test_bad_kv_heads_are_refused_with_a_reason(kwargs, words):
    x = np.ones((3, 8))
    with pytest.raises(ValueError, match=words):
        multi_head_steps(x, np.ones((3, 4)), np.ones((3, 4)), 4, **kwargs)
    with pytest.raises(ValueError, match=words):
        parameter_count(8, 4, **kwargs)


def test_k_width_must_be_kv_heads_times_d_head():
    with pytest.raises(ValueError, match="K/V heads"):
        multi_head_steps(np.ones((3, 8)), np.ones((3, 8)), np.ones((3, 4)), 4, num_kv_heads=2)
    with pytest.raises(ValueError, match="v: width"):
        multi_head_steps(np.ones((3, 8)), np.ones((3, 4)), np.ones((3, 3)), 4, num_kv_heads=2)


@pytest.mark.parametrize("args", [(0, 4), (2, 0), (2, 4, {"layers": 0}), (2, 4, {"bytes_per_element": True})])
def test_bad_cache_arguments_are_refused(args):
    *pos, kw = args if isinstance(args[-1], dict) else (*args, {})
    with pytest.raises(ValueError):
        kv_cache_bytes_per_token(*pos, **kw)


def test_options_reach_every_head():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 8)), rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    mh = multi_head_steps(q, k, v, 4, num_kv_heads=2, rotary_base=100.0, softcap=1.0)
    assert mh.heads.q_rotated is not None and mh.heads.capped is not None
