"""attention_steps against independent references: torch's SDPA, hand-computed examples, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attention_core import attention, attention_steps, causal_mask, padding_mask
from tests.tolerance import assert_close


def sdpa(q, k, v, mask=None, scale=None):
    t = [torch.as_tensor(np.array(x, dtype=np.float64)) for x in (q, k, v)]
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    return F.scaled_dot_product_attention(*t, attn_mask=m, scale=scale).numpy()


def test_hand_computed_cat_sat_mat():
    # Guide 003's embeddings with identity projections; numbers recomputed by hand below, not copied.
    x = [[1.0, 0.5, 0.2, 0.8], [0.3, 0.9, 0.1, 0.4], [0.6, 0.2, 0.7, 0.3]]
    s = attention_steps(x, x, x)
    assert s.scores.dtype == np.float64
    # cat·cat = 1 + .25 + .04 + .64; sat·mat = .18 + .18 + .07 + .12 (the guide prints 0.65: a typo)
    assert s.scores[0, 0] == pytest.approx(1.93)
    assert s.scores[1, 2] == pytest.approx(0.55)
    assert s.scores[2, 1] == pytest.approx(0.55)
    assert s.scaled[0, 0] == pytest.approx(1.93 / 2)
    row = np.array([1.93, 1.09, 1.08]) / 2
    expected = np.exp(row) / np.exp(row).sum()
    np.testing.assert_allclose(s.weights[0], expected, rtol=1e-12)
    np.testing.assert_allclose(s.output[0], expected @ np.array(x), rtol=1e-12)


def test_hand_computed_it_animal_street():
    q, k = [[3.0, 1.0]], [[3.0, 1.0], [1.0, 4.0], [1.5, 0.5]]
    v = [[2.0, 1.5], [0.5, 0.3], [-0.5, 1.2]]
    s = attention_steps(q, k, v)
    np.testing.assert_allclose(s.scores, [[10.0, 7.0, 5.0]])
    np.testing.assert_allclose(s.scaled, [[10 / math.sqrt(2), 7 / math.sqrt(2), 5 / math.sqrt(2)]])
    e = np.exp(np.array([10.0, 7.0, 5.0]) / math.sqrt(2))
    np.testing.assert_allclose(s.weights[0], e / e.sum())
    # 10/sqrt(2) = 7.071 (the lesson prints 7.09 after rounding sqrt(2) to 1.41)
    assert s.scaled[0, 0] == pytest.approx(7.0711, abs=1e-4)


def test_matches_sdpa_batched_cross_attention_with_mask():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 7, 4)), rng.normal(size=(2, 3, 7, 6))
    mask = rng.random((5, 7)) > 0.3
    mask[:, 0] = True
    s = attention_steps(q, k, v, mask=mask)
    np.testing.assert_allclose(s.output, sdpa(q, k, v, mask), rtol=1e-10, atol=1e-12)
    assert s.output.shape == (2, 3, 5, 6)
    assert np.all(s.masked[..., ~mask] == -np.inf)


def test_broadcasts_leading_dims():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(4, 1, 3, 2)), rng.normal(size=(1, 5, 6, 2)), rng.normal(size=(6, 3))
    s = attention_steps(q, k, v)
    assert s.output.shape == (4, 5, 3, 3)
    ref = sdpa(np.broadcast_to(q, (4, 5, 3, 2)), np.broadcast_to(k, (4, 5, 6, 2)), np.broadcast_to(v, (4, 5, 6, 3)))
    np.testing.assert_allclose(s.output, ref, rtol=1e-10)


def test_scale_option():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    s = attention_steps(q, k, v, scale=1.0)
    np.testing.assert_allclose(s.scaled, s.scores)
    np.testing.assert_allclose(s.output, sdpa(q, k, v, scale=1.0), rtol=1e-10)
    s2 = attention_steps(q, k, v)
    assert s2.scale == pytest.approx(0.5)


def test_float32_and_torch_inputs_keep_float32():
    q = torch.randn(3, 4)
    s = attention_steps(q, q, q)
    assert s.weights.dtype == np.float32
    ref = F.scaled_dot_product_attention(q, q, q).numpy()
    assert_close(s.output, ref)


def test_fully_masked_row_is_zero_not_nan():
    q = np.ones((3, 2))
    mask = causal_mask(3)
    mask[1] = False
    s = attention_steps(q, q, q, mask=mask)
    assert not np.isnan(s.weights).any()
    np.testing.assert_array_equal(s.weights[1], 0.0)
    np.testing.assert_array_equal(s.output[1], 0.0)
    assert s.fully_masked.tolist() == [False, True, False]
    np.testing.assert_allclose(s.weights[[0, 2]].sum(-1), 1.0)


@pytest.mark.parametrize("mask_kind", ["numpy_int", "torch_bool", "torch_int", "list"])
def test_mask_types_have_one_meaning(mask_kind):
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    m = causal_mask(4)
    variants = {
        "numpy_int": m.astype(np.int64), "torch_bool": torch.as_tensor(m), "torch_int": torch.as_tensor(m).int(),
        "list": m.astype(int).tolist(),
    }
    np.testing.assert_allclose(attention_steps(q, k, v, mask=variants[mask_kind]).weights,
                               attention_steps(q, k, v, mask=m).weights)


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (([[1.0, 2.0]], [[1.0, 2.0, 3.0]], [[1.0]]), {}, "d_k"),
        (([[1.0, 2.0]], [[1.0, 2.0]], [[1.0], [2.0]]), {}, "number of keys"),
        (([1.0, 2.0], [[1.0, 2.0]], [[1.0]]), {}, "rank"),
        (([[np.nan, 2.0]], [[1.0, 2.0]], [[1.0]]), {}, "NaN"),
        (([[1.0, 2.0]], [[np.inf, 2.0]], [[1.0]]), {}, "k: contains NaN or infinity"),
        (([["a", "b"]], [[1.0, 2.0]], [[1.0]]), {}, "q: expected numbers"),
        (([[1.0, 2.0]], [[1.0, 2.0]], [[1.0]]), {"mask": [[0.5]]}, "0 and 1"),
        (([[1.0, 2.0]], [[1.0, 2.0]], [[1.0]]), {"mask": np.ones((2, 2), bool)}, "does not broadcast"),
        (([[1.0, 2.0]], [[1.0, 2.0]], [[1.0]]), {"scale": float("nan")}, "scale"),
        (([[1.0, 2.0], [1.0]], [[1.0, 2.0]], [[1.0]]), {}, "q"),
    ],
)
def test_bad_input_raises_value_error_naming_argument(args, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        attention_steps(*args, **kwargs)


def test_unavailable_cuda_names_available_devices():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="available devices: cpu"):
        attention_steps([[1.0]], [[1.0]], [[1.0]], device="cuda")


def test_bulk_attention_matches_steps_and_zeroes_blocked_rows():
    rng = np.random.default_rng(4)
    q, k, v = (torch.as_tensor(rng.normal(size=(2, 4, 6, 8)), dtype=torch.float32) for _ in range(3))
    mask = torch.as_tensor(causal_mask(6))
    mask[2] = False
    out = attention(q, k, v, mask=mask)
    ref = attention_steps(q, k, v, mask=mask).output
    assert_close(out.numpy(), ref)
    assert torch.all(out[..., 2, :] == 0)


def test_padding_mask_shape_and_effect():
    m = padding_mask([2, 3], 4)
    assert m.shape == (2, 1, 1, 4) and m.dtype == bool
    assert m[0, 0, 0].tolist() == [True, True, False, False]
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(2, 1, 3, 2)), rng.normal(size=(2, 1, 4, 2)), rng.normal(size=(2, 1, 4, 2))
    s = attention_steps(q, k, v, mask=m)
    np.testing.assert_array_equal(s.weights[0, 0, :, 2:], 0.0)
    np.testing.assert_allclose(s.weights[0, 0, :, :2].sum(-1), 1.0)
    with pytest.raises(ValueError):
        padding_mask([5], 4)


def test_causal_mask_convention():
    m = causal_mask(4)
    assert m.dtype == bool and m[3, 0] and m[0, 0] and not m[0, 1]
    np.testing.assert_array_equal(m, np.tril(np.ones((4, 4), bool)))


finite = st.floats(-5, 5, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def qkv(draw):
    lq, lk, d, dv = (draw(st.integers(1, 6)) for _ in range(4))
    q = draw(hnp.arrays(np.float64, (lq, d), elements=finite))
    k = draw(hnp.arrays(np.float64, (lk, d), elements=finite))
    v = draw(hnp.arrays(np.float64, (lk, dv), elements=finite))
    mask = draw(hnp.arrays(bool, (lq, lk)))
    return q, k, v, mask


@given(qkv())
def test_properties_rows_sum_to_one_or_zero_and_match_sdpa(data):
    q, k, v, mask = data
    s = attention_steps(q, k, v, mask=mask)
    assert not np.isnan(s.weights).any()
    sums = s.weights.sum(-1)
    has_key = mask.any(-1)
    np.testing.assert_allclose(sums[has_key], 1.0, rtol=1e-12)
    np.testing.assert_array_equal(sums[~has_key], 0.0)
    np.testing.assert_array_equal(s.weights[~mask], 0.0)
    if has_key.all():
        np.testing.assert_allclose(s.output, sdpa(q, k, v, mask), rtol=1e-9, atol=1e-12)


@given(qkv())
def test_causal_upper_triangle_is_exactly_zero(data):
    q, _, _, _ = data
    n = q.shape[0]
    s = attention_steps(q, q, q, mask=causal_mask(n))
    assert np.all(s.weights[np.triu_indices(n, 1)] == 0.0)


@given(qkv(), st.randoms())
def test_permutation_equivariance(data, rnd):
    q, k, v, _ = data
    perm_q = np.array(rnd.sample(range(q.shape[0]), q.shape[0]))
    perm_k = np.array(rnd.sample(range(k.shape[0]), k.shape[0]))
    base = attention_steps(q, k, v)
    permuted = attention_steps(q[perm_q], k[perm_k], v[perm_k])
    # permuting queries permutes output rows; permuting key/value pairs together changes nothing
    np.testing.assert_allclose(permuted.output, base.output[perm_q], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(permuted.weights, base.weights[perm_q][:, perm_k], rtol=1e-9, atol=1e-12)


def test_gradient_of_explicit_steps_matches_autograd_of_sdpa():
    # The same explicit formula in torch (masked_softmax) must be differentiable like the fused kernel.
    from attention_core.multihead import masked_softmax

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.as_tensor(causal_mask(5))
    w = masked_softmax((q @ k.transpose(-1, -2)) / 2.0, mask)
    (w @ v).sum().backward()
    g_explicit = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
    for a, b in zip(g_explicit, (q.grad, k.grad, v.grad)):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lambda a: masked_softmax(a, mask), (torch.randn(5, 5, dtype=torch.float64,
                                                                                   requires_grad=True),))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_path_matches_cpu():
    rng = np.random.default_rng(6)
    q, k, v = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 6, 4)), rng.normal(size=(2, 6, 3))
    mask = rng.random((5, 6)) > 0.4
    mask[0] = False
    gpu = attention_steps(q, k, v, mask=mask, device="cuda")
    cpu = attention_steps(q, k, v, mask=mask)
    assert gpu.device == "cuda:0"
    for name in ("scores", "scaled", "weights", "output"):
        np.testing.assert_allclose(getattr(gpu, name), getattr(cpu, name), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(gpu.weights[:, 0], 0.0)
