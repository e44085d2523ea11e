"""rotate and attention_steps' rotary step against Hugging Face's own code (transformers is a test extra)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import attention_steps, rotate
from tests.tolerance import assert_close

llama = pytest.importorskip("transformers.models.llama.modeling_llama")
neox = pytest.importorskip("transformers.models.gpt_neox.modeling_gpt_neox")


def hf_cos_sin(positions, dims, base):
    """cos/sin as Llama's rotary embedding builds them (inv_freq, outer product, cat(freqs, freqs)), in float64."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dims, 2, dtype=torch.int64).to(torch.float64) / dims))
    freqs = torch.as_tensor(positions, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[None], emb.sin()[None]  # (batch 1, L, dims)


@pytest.mark.parametrize("base", [10000.0, 500000.0, 7.0])
def test_full_rotary_equals_llama_apply_rotary_pos_emb(base):
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(1, 3, 6, 8)), rng.normal(size=(1, 3, 6, 8))  # (batch, heads, L, d)
    pos = np.array([0, 1, 2, 5, 9, 40])
    cos, sin = hf_cos_sin(pos, 8, base)
    hq, hk = llama.apply_rotary_pos_emb(torch.as_tensor(q), torch.as_tensor(k), cos, sin)
    np.testing.assert_allclose(rotate(q, pos, base=base), hq.numpy(), rtol=0, atol=1e-13)
    np.testing.assert_allclose(rotate(k, pos, base=base), hk.numpy(), rtol=0, atol=1e-13)


def test_rotate_equals_llamas_own_rotary_embedding_module_in_float32():
    config = llama.LlamaConfig(hidden_size=32, num_attention_heads=2, rope_theta=10000.0)
    emb = llama.LlamaRotaryEmbedding(config)
    x = torch.randn(1, 2, 5, 16, generator=torch.Generator().manual_seed(3))
    pos = torch.arange(5)[None]
    cos, sin = emb(x, pos)
    hq, _ = llama.apply_rotary_pos_emb(x, x, cos, sin)
    mine = rotate(x, torch.arange(5))
    assert isinstance(mine, torch.Tensor) and mine.dtype == torch.float32
    assert_close(mine, hq)


@pytest.mark.parametrize("dims", [2, 4, 6])
def test_partial_rotary_equals_gpt_neox_code_path(dims):
    rng = np.random.default_rng(dims)
    q, k = rng.normal(size=(1, 2, 5, 10)), rng.normal(size=(1, 2, 5, 10))
    pos = np.arange(3, 8)
    cos, sin = hf_cos_sin(pos, dims, 10000.0)  # NeoX's cos/sin are rotary_ndims wide: the rest passes
    hq, hk = neox.apply_rotary_pos_emb(torch.as_tensor(q), torch.as_tensor(k), cos, sin)
    rq = rotate(q, pos, dims=dims)
    np.testing.assert_allclose(rq, hq.numpy(), rtol=0, atol=1e-13)
    np.testing.assert_allclose(rotate(k, pos, dims=dims), hk.numpy(), rtol=0, atol=1e-13)
    np.testing.assert_array_equal(rq[..., dims:], q[..., dims:])  # the columns past dims are untouched


def test_rotate_by_hand_one_pair():
    # d = 2: pair 0 = (x0, x1) turns by p·base^0 = p radians
    out = rotate([[1.0, 0.0], [1.0, 2.0]], [0, 1])
    c, s = np.cos(1.0), np.sin(1.0)
    np.testing.assert_allclose(out, [[1.0, 0.0], [c - 2 * s, 2 * c + s]], rtol=1e-15)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 500), n=st.integers(0, 500), shift=st.integers(0, 3000), seed=st.integers(0, 2**31 - 1),
       dims=st.sampled_from([2, 4, 8]))
def test_rotary_scores_depend_only_on_the_offset(m, n, shift, seed, dims):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    a = rotate(q, [m], dims=dims) @ rotate(k, [n], dims=dims).T
    b = rotate(q, [m + shift], dims=dims) @ rotate(k, [n + shift], dims=dims).T
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    if m != n:  # and the offset matters: moving one side alone changes the score (unless by a full turn)
        c = rotate(q, [m], dims=dims) @ rotate(k, [m], dims=dims).T
        assert not np.allclose(a, c, rtol=0, atol=1e-12) or np.allclose(np.sin(m - n), 0, atol=1e-3)


def test_attention_steps_rotary_fields_and_scores():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(4, 6)), rng.normal(size=(4, 6)), rng.normal(size=(4, 3))
    s = attention_steps(q, k, v, rotary_base=100.0, rotary_dims=4)
    np.testing.assert_array_equal(s.positions[0], np.arange(4))
    np.testing.assert_array_equal(s.positions[1], np.arange(4))
    assert s.rotary_base == 100.0 and s.rotary_dims == 4
    np.testing.assert_array_equal(s.q, q)  # q as given; its rotation is a field of its own
    cos, sin = hf_cos_sin(np.arange(4), 4, 100.0)
    hq, hk = neox.apply_rotary_pos_emb(torch.as_tensor(q)[None, None], torch.as_tensor(k)[None, None], cos, sin)
    np.testing.assert_allclose(s.q_rotated, hq[0, 0].numpy(), atol=1e-13)
    np.testing.assert_allclose(s.scores, hq[0, 0].numpy() @ hk[0, 0].numpy().T, atol=1e-12)
    assert s.bias is None and s.biased is None and s.capped is None and s.softcap is None


def test_one_decoding_row_at_the_last_position_matches_the_full_run():
    rng = np.random.default_rng(6)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    full = attention_steps(q, k, v, rotary_base=10000.0, mask=np.tril(np.ones((5, 5), bool)))
    last = attention_steps(q[4:], k, v, rotary_base=10000.0, positions=(np.array([4]), np.arange(5)))
    np.testing.assert_allclose(last.weights[0], full.weights[4], rtol=1e-13)
    np.testing.assert_allclose(last.output[0], full.output[4], rtol=1e-13)


def test_torch_path_keeps_the_rotary_fields():
    from attention_core.positions import check_options
    from attention_core.steps import _prepare, _steps_torch

    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(2, 4, 6)), rng.normal(size=(2, 5, 6)), rng.normal(size=(2, 5, 3))
    ref = attention_steps(q, k, v, rotary_base=50.0, positions=(np.arange(1, 5), np.arange(5)))
    qa, ka, va, m, sc = _prepare(q, k, v, None, None)
    parts = _steps_torch(qa, ka, va, m, sc, "cpu", check_options(qa, ka, ref.positions, 50.0, None, None, None))
    for name in ("q_rotated", "k_rotated", "scores", "weights", "output"):
        np.testing.assert_allclose(parts[name], getattr(ref, name), atol=1e-12, err_msg=name)


@pytest.mark.parametrize("kwargs, words", [
    ({"rotary_base": 0.0}, "rotary base"),
    ({"rotary_base": float("nan")}, "rotary base"),
    ({"rotary_base": 100.0, "rotary_dims": 3}, "rotary dims"),
    ({"rotary_base": 100.0, "rotary_dims": 8}, "wider than the head"),
    ({"rotary_dims": 2}, "rotary_base"),
    ({"rotary_base": 100.0, "positions": np.arange(3)}, "positions"),
    ({"rotary_base": 100.0, "positions": (np.arange(4), np.arange(5))}, "k positions"),
    ({"rotary_base": 100.0, "positions": np.zeros((2, 4), int)}, "positions"),
    ({"rotary_base": 100.0, "positions": np.array([0, 1, -2, 3])}, "from 0"),
    ({"rotary_base": 100.0, "positions": np.array([0.5, 1, 2, 3])}, "whole numbers"),
])
def test_bad_rotary_options_are_refused_by_name(kwargs, words):
    x = np.ones((4, 6))
    with pytest.raises(ValueError, match=words):
        attention_steps(x, x, x, **kwargs)
