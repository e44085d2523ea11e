"""Every mask with every shape: q, k, v with any leading dims that broadcast, and a mask of rank 0-5 (bool or 0/1,
numpy, torch, a list or a Python scalar) that broadcasts to (..., Lq, Lk), give the same output from ``attention``
(the fused bulk path), ``attention_steps`` and ``MultiHeadAttention`` as torch's own SDPA handed the explicitly
expanded boolean mask and explicitly expanded q, k, v. SDPA leaves fully masked rows undefined (NaN); the contract
there is zeros, so those rows are compared with zeros and the others with SDPA. A mask that does not broadcast is
a ValueError that says so, never an IndexError from inside torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import MultiHeadAttention, attention, attention_steps

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")),
]
TOL = {torch.float64: 1e-10, torch.float32: 2e-5}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tensors here are a few numbers each: on a busy 2-core machine torch's second thread turns each call from
    ~0.1 ms into ~20 ms (hand-over waits), which would make the property tests take a minute instead of seconds."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _sub_shape(draw, full: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """A shape of ``rank`` that broadcasts to ``full`` without widening it: its last dims, some set to 1."""
    tail = full[len(full) - rank:] if rank else ()
    return tuple(n if draw(st.booleans()) else 1 for n in tail)


def _container(draw, m: np.ndarray):
    """The same mask as numpy bool / 0-1 int / 0-1 float32, torch bool / int, a nested list or a Python scalar."""
    kind = draw(st.sampled_from(["bool", "int", "float32", "torch-bool", "torch-int", "list"]))
    if kind == "int":
        return m.astype(np.int64)
    if kind == "float32":
        return m.astype(np.float32)
    if kind == "torch-bool":
        return torch.as_tensor(m)
    if kind == "torch-int":
        return torch.as_tensor(m.astype(np.int64))
    return m.tolist()  # a 0-d mask becomes a Python bool


def _mask_values(draw, shape: tuple[int, ...]) -> np.ndarray:
    """Random True/False with a random density, so that all-blocked rows (and all-open ones) come up often."""
    p = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    seed = draw(st.integers(0, 2**16))
    return np.random.default_rng(seed).random(shape) < p


def _reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor, scale: float):
    """SDPA on everything expanded by hand (q, k, v and a bool mask of the full shape), plus the softmax weights;
    the rows with no key allowed are returned separately (SDPA's numbers there mean nothing)."""
    lead = allowed.shape[:-2]
    qe, ke, ve = (t.expand(*lead, *t.shape[-2:]).contiguous() for t in (q, k, v))
    out = F.scaled_dot_product_attention(qe, ke, ve, attn_mask=allowed.contiguous(), scale=scale)
    scores = (qe @ ke.transpose(-1, -2) * scale).masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return out, weights, ~allowed.any(dim=-1)


def _check(got, want: torch.Tensor, blocked: torch.Tensor, tol: float, what: str) -> None:
    got_t = torch.as_tensor(np.array(got)) if not isinstance(got, torch.Tensor) else got.detach().cpu()
    want = want.detach().cpu()
    blocked = blocked.cpu()
    assert tuple(got_t.shape) == tuple(want.shape), (what, tuple(got_t.shape), tuple(want.shape))
    assert torch.isfinite(got_t).all(), f"{what}: NaN or infinity"
    assert (got_t[blocked] == 0).all(), f"{what}: a fully masked row is not zero"
    open_rows = ~blocked
    np.testing.assert_allclose(got_t[open_rows].double().numpy(), want[open_rows].double().numpy(), rtol=tol,
                               atol=tol, err_msg=what)


@st.composite
def problems(draw):
    """q, k, v leading shapes and a mask rank drawn together: a full leading shape of rank 0-3, q/k/v each a
    broadcastable part of it (or of a prefix the mask then widens), a mask of rank 0 .. rank+2."""
    lead_rank = draw(st.integers(0, 3))
    full_lead = tuple(draw(st.lists(st.integers(1, 3), min_size=lead_rank, max_size=lead_rank)))
    lq, lk = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    d_k, d_v = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    leads = [_sub_shape(draw, full_lead, draw(st.integers(0, lead_rank))) for _ in range(3)]
    mask_rank = draw(st.integers(0, lead_rank + 2))
    mask_shape = _sub_shape(draw, (*full_lead, lq, lk), mask_rank)
    dtype = draw(st.sampled_from([torch.float64, torch.float32]))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    q = torch.randn(*leads[0], lq, d_k, generator=g, dtype=dtype)
    k = torch.randn(*leads[1], lk, d_k, generator=g, dtype=dtype)
    v = torch.randn(*leads[2], lk, d_v, generator=g, dtype=dtype)
    values = _mask_values(draw, mask_shape)
    mask = _container(draw, values)
    scale = draw(st.sampled_from([None, 1.0, 0.3]))
    as_torch = draw(st.booleans())
    return q, k, v, values, mask, scale, as_torch


def _run_problem(problem, device: str) -> None:
    q, k, v, values, mask, scale, as_torch = problem
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], values.shape[:-2])
    lq, lk = q.shape[-2], k.shape[-2]
    allowed = torch.as_tensor(values).expand(*lead, lq, lk)
    scale_f = scale if scale is not None else 1.0 / np.sqrt(q.shape[-1])
    want_out, want_w, blocked = _reference(q, k, v, allowed, scale_f)
    tol = TOL[q.dtype]

    args = (q.to(device), k.to(device), v.to(device)) if as_torch else (q.numpy(), k.numpy(), v.numpy())
    bulk = attention(*args, mask=mask, scale=scale, device=device)
    assert isinstance(bulk, torch.Tensor) == as_torch
    if as_torch:
        assert bulk.dtype == q.dtype and bulk.device.type == torch.device(device).type
    _check(bulk, want_out, blocked, tol, "attention")

    steps = attention_steps(*args, mask=mask, scale=scale, device=device)
    _check(steps.output, want_out, blocked, tol, "attention_steps output")
    # the weights do not depend on v, so v's leading dims may or may not be in them: compare them broadcast
    weights = np.broadcast_to(steps.weights, tuple(want_w.shape))
    _check(weights, want_w, blocked.unsqueeze(-1).expand(want_w.shape), tol, "attention_steps weights")
    assert np.array_equal(np.broadcast_to(steps.fully_masked, tuple(blocked.shape)), blocked.numpy())


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=120, deadline=None, derandomize=True)
@given(problem=problems())
def test_attention_and_attention_steps_match_sdpa_on_the_expanded_mask(device, problem):
    _run_problem(problem, device)


@st.composite
def module_problems(draw):
    """MultiHeadAttention: (B, L, d_model) inputs and a mask of rank 0-5 that broadcasts to (B, H, Lq, Lk),
    rank 5 with a leading 1."""
    b, heads, d_k = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2])), draw(st.integers(1, 2))
    lq, lk = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    rank = draw(st.integers(0, 5))
    shape = (1, *_sub_shape(draw, (b, heads, lq, lk), 4)) if rank == 5 else _sub_shape(
        draw, (b, heads, lq, lk), rank)
    values = _mask_values(draw, shape)
    return b, heads, d_k, lq, lk, values, _container(draw, values), draw(st.integers(0, 2**16))


def _run_module(problem, device: str) -> None:
    b, heads, d_k, lq, lk, values, mask, seed = problem
    d_model = heads * d_k
    torch.manual_seed(seed)
    module = MultiHeadAttention(d_model, heads).double().to(device).eval()
    query = torch.randn(b, lq, d_model, dtype=torch.float64, device=device)
    kv = torch.randn(b, lk, d_model, dtype=torch.float64, device=device)
    out, weights = module(query, kv, kv, mask=mask)

    allowed = torch.as_tensor(values.reshape(values.shape[1:]) if values.ndim == 5 else values, device=device)
    allowed = allowed.expand(b, heads, lq, lk)
    with torch.no_grad():
        split = [module._split(lin(x)) for lin, x in ((module.W_q, query), (module.W_k, kv), (module.W_v, kv))]
        heads_out, want_w, blocked = _reference(*split, allowed, 1.0 / np.sqrt(d_k))
        heads_out = heads_out.masked_fill(blocked.unsqueeze(-1), 0.0)  # the contract: a blocked row adds nothing
        want_out = module.W_o(heads_out.transpose(1, 2).reshape(b, lq, d_model))
    _check(weights, want_w, blocked.unsqueeze(-1).expand(want_w.shape), 1e-10, "MultiHeadAttention weights")
    no_rows = torch.zeros(want_out.shape[:-1] + (1,), dtype=torch.bool).expand(want_out.shape)
    _check(out, want_out, no_rows.to(device), 1e-10, "MultiHeadAttention output")


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=60, deadline=None, derandomize=True)
@given(problem=module_problems())
def test_multi_head_attention_matches_sdpa_on_the_expanded_mask(device, problem):
    _run_module(problem, device)


@pytest.mark.parametrize("mask", [[1, 0], 0.0, [0, 0], True, np.array([[1, 0], [0, 1]]), [[[1, 0]]] * 3])
@pytest.mark.parametrize("device", DEVICES)
def test_the_reported_shapes(mask, device):
    """The report: q (2, 3, 2, 1), k and v (1, 1, 2, 1) and a rank-0/1 mask raised IndexError in the bulk path."""
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 3, 2, 1, generator=g, dtype=torch.float64)
    k, v = (torch.randn(1, 1, 2, 1, generator=g, dtype=torch.float64) for _ in range(2))
    out = attention(q.to(device), k.to(device), v.to(device), mask=mask, device=device)
    want = attention_steps(q, k, v, mask=mask).output
    assert tuple(out.shape) == want.shape == (2, 3, 2, 1)
    np.testing.assert_allclose(out.cpu().numpy(), want, atol=1e-12)


NOT_BROADCASTING = {
    "too many keys": np.ones(4, dtype=bool),
    "too many queries": np.ones((3, 3), dtype=bool),
    "wrong batch": np.ones((3, 2, 3), dtype=bool),
    "wrong batch, rank 5": np.ones((2, 5, 2, 2, 3), dtype=bool),
    "torch, wrong keys": torch.ones(2, 2, dtype=torch.bool),
    "list, wrong keys": [1, 0],
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(NOT_BROADCASTING))
def test_a_mask_that_does_not_broadcast_is_refused_by_name(name, device):
    """q (2, 2, 2, 4) against k, v (2, 1, 3, 4): scores (2, 2, 2, 3). Each mask is refused with a ValueError that
    names both shapes, by the bulk path and the step path alike."""
    q, k, v = torch.ones(2, 2, 2, 4), torch.ones(2, 1, 3, 4), torch.ones(2, 1, 3, 4)
    mask = NOT_BROADCASTING[name]
    for fn in (attention, attention_steps):
        with pytest.raises(ValueError, match=r"mask of shape .* does not broadcast to scores of shape"):
            fn(q, k, v, mask=mask, device=device)


def test_the_bulk_path_promotes_mixed_and_integer_inputs_like_the_step_path():
    """Integer q and float32 k with float64 v: one common float64, the numbers attention_steps gives."""
    q = torch.tensor([[1, 0], [0, 1]])
    k = torch.tensor([[0.5, 1.0], [1.0, -1.0]], dtype=torch.float32)
    v = torch.tensor([[1.0], [3.0]], dtype=torch.float64)
    out = attention(q, k, v, mask=[[1, 1], [0, 0]])
    assert out.dtype == torch.float64
    # by hand: row 0 scores (0.5, 1.0)/sqrt(2); row 1 fully blocked -> 0
    w = np.exp(np.array([0.5, 1.0]) / np.sqrt(2))
    w /= w.sum()
    np.testing.assert_allclose(out.numpy(), [[w @ [1.0, 3.0]], [0.0]], atol=1e-12)


@pytest.mark.parametrize("scale", ["big", float("nan"), float("inf")])
def test_the_bulk_path_refuses_a_bad_scale_by_name(scale):
    with pytest.raises(ValueError, match="scale"):
        attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), scale=scale)
