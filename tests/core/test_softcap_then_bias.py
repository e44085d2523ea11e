"""Soft-cap, then bias, then mask: ``attention_steps``, ``multi_head_steps`` and ``flash_steps`` against three
references, each written here from its own source in float64.

- The ONNX Attention operator's reference implementation (onnx/onnx, ``onnx/reference/ops/op_attention.py``,
  ``_compute_attention``): ``qk = (Q·√scale) @ (K·√scale)ᵀ``; ``softcap`` if given; ``+ attn_bias`` (a float mask,
  −inf where blocked); softmax; ``@ V``. Its comment says why: "Softcap must be applied before mask so that -inf mask
  values remain -inf ... If softcap were applied after mask, -inf would be mapped to -softcap (finite), leaking
  probability to masked positions."
- FlashAttention's ``attention_ref`` (Dao-AILab/flash-attention, ``tests/test_flash_attn.py``): ``scores =
  einsum(q / √d, k)``; ``tanh(scores / softcap) · softcap``; the causal (local) mask as −inf; ``scores + attn_bias``
  with ``attn_bias_from_alibi_slopes`` (−slope·|i + Lk − Lq − j|, or slope·(j − Lk + 1) when causal); softmax.
- transformers' Gemma 2 (``modeling_gemma2.eager_attention_forward``, run here on a real ``Gemma2Attention``):
  ``scores · scaling``, then ``tanh(x / softcap) · softcap``, then ``+ attention_mask``.

Each of these fails on the bias-then-soft-cap order this library computed before (c·tanh((s + b)/c)), by up to
several units in the capped scores and by whole tenths in the weights.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention_core import (
    alibi_bias,
    alibi_slopes,
    attention_steps,
    causal_mask,
    flash_steps,
    multi_head_steps,
)

SHAPES = [(1, 5), (4, 4), (3, 7), (6, 6)]  # (Lq, Lk): one decoding row, square, queries at the last positions
CAPS = [0.5, 2.0, 30.0]  # tanh bends hard, a little, hardly


def _inputs(seed: int, heads: int, lq: int, lk: int, d: int = 8, dv: int = 3, spread: float = 3.0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(heads, lq, d)) * spread, rng.normal(size=(heads, lk, d)) * spread,
            rng.normal(size=(heads, lk, dv)))


def bottom_right_causal(lq: int, lk: int) -> np.ndarray:
    """Query i (at position Lk − Lq + i) sees keys 0..Lk − Lq + i: FlashAttention's and ONNX's causal alignment."""
    return np.arange(lk)[None, :] <= np.arange(lq)[:, None] + (lk - lq)


def onnx_attention_ref(q, k, v, attn_mask, softcap, scale):
    """ONNX ``Attention`` (``_compute_attention``) in float64, inputs (heads, L, d): softcap, then the additive mask."""
    s = math.sqrt(scale)
    qk = np.matmul(q * s, np.swapaxes(k * s, -1, -2))
    if softcap is not None and softcap > 0:
        qk = np.tanh(qk / softcap) * softcap
    qk_with_bias = qk + attn_mask
    x_max = qk_with_bias.max(axis=-1, keepdims=True)
    e = np.exp(qk_with_bias - x_max)
    weights = e / e.sum(axis=-1, keepdims=True)
    return qk, qk_with_bias, weights, weights @ v


def flash_attention_ref(q, k, v, softcap, causal, slopes):
    """FlashAttention's ``attention_ref`` (torch, float64), inputs (batch, seqlen, heads, d); ALiBi as
    ``attn_bias_from_alibi_slopes`` builds it. Returns (weights (b, h, t, s), output (b, t, h, dv))."""
    lq, lk, d = q.shape[1], k.shape[1], q.shape[-1]
    scores = torch.einsum("bthd,bshd->bhts", q / math.sqrt(d), k)
    if softcap > 0:
        scores = torch.tanh(scores / softcap) * softcap
    row = torch.arange(lq).reshape(lq, 1)
    col = torch.arange(lk)
    if causal:
        scores = scores.masked_fill(col > row + lk - lq, float("-inf"))
        attn_bias = torch.arange(-lk + 1, 1, dtype=torch.float64) * slopes.reshape(1, -1, 1, 1)
    else:
        attn_bias = -slopes.reshape(1, -1, 1, 1) * torch.abs(row + lk - lq - col).to(torch.float64)
    scores = scores + attn_bias
    attention = torch.softmax(scores, dim=-1)
    return attention, torch.einsum("bhts,bshd->bthd", attention, v)


@pytest.mark.parametrize("lq, lk", SHAPES)
@pytest.mark.parametrize("softcap", CAPS)
@pytest.mark.parametrize("causal", [False, True])
def test_alibi_and_softcap_equal_the_onnx_reference(lq, lk, softcap, causal):
    heads = 4
    q, k, v = _inputs(lq * 10 + lk, heads, lq, lk)
    bias = alibi_bias(heads, lq, lk) * 8  # steeper than the paper's slopes: the order shows at a few tokens
    mask = bottom_right_causal(lq, lk) if causal else None
    scale = 1 / math.sqrt(q.shape[-1])
    attn_mask = bias if mask is None else np.where(mask, bias, -np.inf)
    qk, qk_with_bias, weights, output = onnx_attention_ref(q, k, v, attn_mask, softcap, scale)
    s = attention_steps(q, k, v, bias=bias, softcap=softcap, mask=mask)
    np.testing.assert_allclose(s.capped, qk, rtol=1e-12, atol=1e-12 * softcap)
    allowed = np.ones_like(qk, dtype=bool) if mask is None else np.broadcast_to(mask, qk.shape)
    np.testing.assert_allclose(s.biased[allowed], qk_with_bias[allowed], rtol=1e-12, atol=1e-12 * softcap)
    np.testing.assert_allclose(s.weights, weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s.output, output, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("lq, lk", SHAPES)
@pytest.mark.parametrize("softcap", CAPS)
@pytest.mark.parametrize("causal", [False, True])
def test_alibi_and_softcap_equal_flash_attentions_attention_ref(lq, lk, softcap, causal):
    """FlashAttention's causal ALiBi is slope·(j − Lk + 1), ours −slope·|i − j|: they differ by a constant per row,
    which cancels in the softmax only because the bias comes after the soft-cap."""
    heads = 3
    q, k, v = _inputs(100 + lq * 10 + lk, heads, lq, lk)
    slopes = alibi_slopes(heads) * 8
    ref_w, ref_out = flash_attention_ref(*(torch.as_tensor(np.swapaxes(x, 0, 1))[None] for x in (q, k, v)),
                                         softcap, causal, torch.as_tensor(slopes)[None])
    bias = -slopes[:, None, None] * np.abs(np.arange(lq)[:, None] + lk - lq - np.arange(lk)[None, :])
    mask = bottom_right_causal(lq, lk) if causal else None
    s = attention_steps(q, k, v, bias=bias, softcap=softcap, mask=mask)
    np.testing.assert_allclose(s.weights, ref_w[0].numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s.output, np.swapaxes(ref_out[0].numpy(), 0, 1), rtol=1e-12, atol=1e-14)
    for h in range(heads):  # the tiled pass, one head at a time, does the same per tile
        f = flash_steps(q[h], k[h], v[h], bias=bias[h], softcap=softcap, mask=mask, block_q=2, block_k=3)
        np.testing.assert_allclose(f.output, np.swapaxes(ref_out[0].numpy(), 0, 1)[h], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("softcap", [1.0, 5.0, 50.0])
def test_a_float_mask_with_softcap_equals_transformers_gemma2(softcap):
    """Gemma 2's eager attention adds its float ``attention_mask`` after the soft-cap; a bias (ALiBi here) plus a
    causal mask given that way must equal ours. Its softmax runs in float32 (``dtype=torch.float32``) whatever the
    input: the tolerance is float32 rounding of weights ≤ 1."""
    gemma2 = pytest.importorskip("transformers.models.gemma2.modeling_gemma2")
    heads, lq, lk, d = 2, 5, 5, 8
    config = gemma2.Gemma2Config(hidden_size=heads * d, num_attention_heads=heads, num_key_value_heads=heads,
                                 head_dim=d, query_pre_attn_scalar=d, attn_logit_softcapping=softcap,
                                 intermediate_size=32, num_hidden_layers=1, vocab_size=16)
    module = gemma2.Gemma2Attention(config, layer_idx=0).eval()
    q, k, v = _inputs(7, heads, lq, lk)
    bias = alibi_bias(heads, lq) * 8
    mask = causal_mask(lq)
    float_mask = torch.as_tensor(np.where(mask, bias, torch.finfo(torch.float64).min))[None]
    with torch.no_grad():
        out, weights = gemma2.eager_attention_forward(
            module, *(torch.as_tensor(x)[None] for x in (q, k, v)), float_mask, scaling=module.scaling,
            softcap=softcap)
    s = attention_steps(q, k, v, bias=bias, softcap=softcap, mask=mask, scale=module.scaling)
    tol = 128 * np.finfo(np.float32).eps  # float32 softmax; weights and outputs here are at most ~3 in magnitude
    np.testing.assert_allclose(s.weights, weights[0].numpy(), rtol=0, atol=tol)
    np.testing.assert_allclose(s.output, np.swapaxes(out[0].numpy(), 0, 1), rtol=0,
                               atol=tol * max(1.0, float(np.abs(s.output).max())))


@pytest.mark.parametrize("device_path", ["numpy", "torch"])
def test_a_large_negative_bias_used_as_a_mask_is_not_capped_and_leaks_no_weight(device_path):
    """ONNX's spec warns of exactly this: a bias of −1e9 on the blocked keys must block them (weight 0, as the bool
    mask does), not be squashed to −c by the soft-cap (which left e^(−2c) of weight on every blocked key)."""
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(4, 6)), rng.normal(size=(4, 6)), rng.normal(size=(4, 2))
    allowed = causal_mask(4)
    as_bias = np.where(allowed, 0.0, -1e9)
    softcap = 2.0
    if device_path == "numpy":
        s = attention_steps(q, k, v, bias=as_bias, softcap=softcap)
        parts = {name: getattr(s, name) for name in ("capped", "biased", "weights", "output")}
    else:
        from attention_core.positions import check_options
        from attention_core.steps import _prepare, _steps_torch

        qa, ka, va, m, sc = _prepare(q, k, v, None, None)
        parts = _steps_torch(qa, ka, va, m, sc, "cpu", check_options(qa, ka, None, None, None, as_bias, softcap))
    masked = attention_steps(q, k, v, softcap=softcap, mask=allowed)
    assert np.all(parts["weights"][~allowed] == 0.0)  # exactly: e^(−1e9) underflows to 0
    assert np.all(parts["biased"][~allowed] < -1e8)  # the bias is still there after the cap
    assert np.all(np.abs(parts["capped"]) < softcap)  # only the scores were capped
    np.testing.assert_allclose(parts["weights"], masked.weights, rtol=1e-15, atol=0)
    np.testing.assert_allclose(parts["output"], masked.output, rtol=1e-14, atol=1e-15)


def test_multi_head_steps_soft_caps_each_head_then_adds_its_slope():
    """Per head: ALiBi's own slope added after the soft-cap (the ONNX reference per head)."""
    rng = np.random.default_rng(9)
    heads, L, d = 4, 5, 3
    q, k, v = (rng.normal(size=(L, heads * d)) * 3 for _ in range(3))
    bias = alibi_bias(heads, L) * 8
    mh = multi_head_steps(q, k, v, heads, bias=bias, softcap=1.5, mask=causal_mask(L))
    split = [np.swapaxes(x.reshape(L, heads, d), 0, 1) for x in (q, k, v)]
    attn_mask = np.where(causal_mask(L), bias, -np.inf)
    _qk, _b, weights, output = onnx_attention_ref(*split, attn_mask, 1.5, 1 / math.sqrt(d))
    np.testing.assert_allclose(mh.heads.weights, weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mh.concat, np.swapaxes(output, 0, 1).reshape(L, -1), rtol=1e-12, atol=1e-14)


def test_the_softcap_sees_only_the_scaled_scores():
    """By hand, one query, scale 1: scaled [6, 2, −8], c = 2, bias [0, −1, −3]: capped = 2·tanh([3, 1, −4]),
    biased = capped + bias (not 2·tanh((scaled + bias)/2))."""
    q, k, v = [[2.0, 0.0]], [[3.0, 0.0], [1.0, 0.0], [-4.0, 0.0]], [[1.0], [2.0], [3.0]]
    bias = np.array([[0.0, -1.0, -3.0]])
    s = attention_steps(q, k, v, scale=1.0, softcap=2.0, bias=bias)
    capped = 2.0 * np.tanh(np.array([3.0, 1.0, -4.0]))
    np.testing.assert_allclose(s.capped[0], capped, rtol=1e-15)
    np.testing.assert_allclose(s.biased[0], capped + bias[0], rtol=1e-15)
    np.testing.assert_array_equal(s.masked, s.biased)
    w = np.exp(capped + bias[0]) / np.exp(capped + bias[0]).sum()
    np.testing.assert_allclose(s.weights[0], w, rtol=1e-14)
