"""MultiHeadAttention against torch.nn.MultiheadAttention (weights copied); metrics against hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention_core import (
    MultiHeadAttention,
    attention_entropy,
    attention_steps,
    causal_mask,
    focus_score,
    multi_head_steps,
    padding_mask,
    parameter_count,
)


def _copy_into_torch_mha(ours: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    d = ours.d_model
    ref = torch.nn.MultiheadAttention(d, ours.num_heads, bias=True, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        ref.out_proj.weight.copy_(ours.W_o.weight)
        ref.out_proj.bias.copy_(ours.W_o.bias)
    return ref


@pytest.mark.parametrize("use_mask", [False, True])
def test_matches_torch_multihead_attention(use_mask):
    torch.manual_seed(0)
    ours = MultiHeadAttention(16, 4).double()
    ref = _copy_into_torch_mha(ours).double()
    q, kv = torch.randn(3, 5, 16, dtype=torch.float64), torch.randn(3, 7, 16, dtype=torch.float64)
    mask = torch.rand(5, 7) > 0.3
    mask[:, 0] = True
    out, w = ours(q, kv, kv, mask if use_mask else None)
    # torch's attn_mask: True = *not allowed*, the opposite convention
    ref_out, ref_w = ref(q, kv, kv, attn_mask=(~mask) if use_mask else None, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(w, ref_w)
    assert w.shape == (3, 4, 5, 7)


def test_padding_mask_numpy_int_accepted_and_blocks_keys():
    torch.manual_seed(1)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    m = padding_mask([2, 4], 4).astype(np.int64)
    _, w = mha(x, x, x, m)
    assert torch.all(w[0, :, :, 2:] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 4))


def test_fully_masked_row_gives_zero_weights_not_nan():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    m = torch.as_tensor(causal_mask(3))
    m[1] = False
    out, w = mha(x, x, x, m)
    assert not torch.isnan(out).any() and torch.all(w[0, :, 1] == 0)


def test_refuses_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)


def test_parameter_count_equals_one_big_head():
    for heads in (1, 2, 4, 8):
        mha = MultiHeadAttention(32, heads)
        assert sum(p.numel() for p in mha.parameters()) == parameter_count(32, heads) == 4 * 32 * 32 + 4 * 32
    assert parameter_count(32, 4, bias=False) == 4 * 32 * 32


def test_explain_matches_forward_per_head():
    torch.manual_seed(2)
    mha = MultiHeadAttention(12, 3).double()
    x = torch.randn(1, 4, 12, dtype=torch.float64)
    out, w = mha(x, x, x, causal_mask(4))
    steps = mha.explain(x[0].numpy(), mask=causal_mask(4))
    np.testing.assert_allclose(steps.heads.weights, w[0].detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(steps.output, out[0].detach().numpy(), rtol=1e-10)
    # head h works on columns h*d_k..(h+1)*d_k of the projected Q
    qproj = mha.W_q(x)[0].detach().numpy()
    np.testing.assert_allclose(steps.q_heads[1], qproj[:, 4:8])


def test_multi_head_steps_is_per_head_attention_concatenated():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    wo = rng.normal(size=(8, 8))
    s = multi_head_steps(q, k, v, 2, w_o=wo)
    h1 = attention_steps(q[:, 4:], k[:, 4:], v[:, 4:])  # scale 1/sqrt(4)
    np.testing.assert_allclose(s.heads.weights[1], h1.weights)
    np.testing.assert_allclose(s.concat[:, 4:], h1.output)
    np.testing.assert_allclose(s.output, s.concat @ wo)
    one = multi_head_steps(q, k, v, 1)
    np.testing.assert_allclose(one.output, attention_steps(q, k, v).output)
    with pytest.raises(ValueError, match="divisible"):
        multi_head_steps(q, k, v, 3)


def test_head_ablation_zeroes_that_head_only():
    torch.manual_seed(3)
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    full, _ = mha(x, x, x)
    mha.head_mask[1] = 0.0
    ablated, _ = mha(x, x, x)
    assert not torch.allclose(full, ablated)
    steps = mha.explain(x[0].numpy())
    np.testing.assert_allclose(steps.output, ablated[0].detach().numpy(), rtol=1e-10)
    assert "head_mask" not in mha.state_dict()


def test_entropy_hand_values():
    w = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(attention_entropy(w), [math.log(2), 0.0, math.log(3), 0.0])
    assert attention_entropy(torch.tensor(w)).shape == (4,)
    with pytest.raises(ValueError):
        attention_entropy([[np.nan, 1.0]])
    with pytest.raises(ValueError):
        attention_entropy([[-0.1, 1.1]])


def test_focus_hand_values():
    w = np.array([[0.5, 0.5], [0.9, 0.1]])
    assert focus_score(w) == pytest.approx(0.7)
    batched = focus_score(np.stack([w, np.full((2, 2), 0.5)]))
    np.testing.assert_allclose(batched, [0.7, 0.5])
