"""One mask contract at every entry point: any rank that broadcasts to (..., Lq, Lk), bool or 0/1, numpy, torch
or lists — the same weights and outputs from attention_steps, attention, multi_head_steps, MultiHeadAttention and
TinyTransformer as from one float64 reference written here."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import (
    MultiHeadAttention,
    TinyTransformer,
    attention,
    attention_steps,
    multi_head_steps,
)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray, scale: float):
    """float64 masked softmax attention, blocked rows all zero; ``allowed`` already (Lq, Lk)."""
    scores = np.where(allowed, q @ k.T * scale, -np.inf)
    w = np.zeros_like(scores)
    for i in range(scores.shape[0]):
        if allowed[i].any():
            e = np.exp(scores[i] - scores[i][allowed[i]].max())
            w[i] = e / e.sum()
    return w, w @ v


def squeeze_to(x, shape: tuple[int, ...]) -> np.ndarray:
    """A batched mask adds leading dims of size 1 (broadcasting): drop them, nothing else."""
    x = np.asarray(x.detach() if isinstance(x, torch.Tensor) else x)
    assert x.shape[-len(shape):] == shape and int(np.prod(x.shape[:-len(shape)])) == 1, (x.shape, shape)
    return x.reshape(shape)


@st.composite
def masks(draw, lq: int, lk: int):
    """A mask of random rank (0 … 4) that broadcasts to (Lq, Lk), in a random container and dtype."""
    full = draw(st.lists(st.lists(st.booleans(), min_size=lk, max_size=lk), min_size=lq, max_size=lq))
    full = np.array(full, dtype=bool)
    shape_kind = draw(st.sampled_from(["0d", "row", "col", "full", "batched", "4d"]))
    if shape_kind == "0d":
        m = np.array(draw(st.booleans()))
    elif shape_kind == "row":
        m = full[0]  # (Lk,): the same keys for every query
    elif shape_kind == "col":
        m = full[:, :1]  # (Lq, 1)
    elif shape_kind == "full":
        m = full
    elif shape_kind == "batched":
        m = full[None]
    else:
        m = full[None, None]
    allowed = np.broadcast_to(m.reshape(m.shape[-2:]) if m.ndim > 2 else m, (lq, lk)).copy()
    container = draw(st.sampled_from(["bool", "int", "float", "torch-bool", "torch-int", "list"]))
    if container == "int":
        m = m.astype(np.int64)
    elif container == "float":
        m = m.astype(np.float32)
    elif container == "torch-bool":
        m = torch.as_tensor(m)
    elif container == "torch-int":
        m = torch.as_tensor(m.astype(np.int64))
    elif container == "list":
        m = m.tolist()
    return m, allowed


@settings(max_examples=150, deadline=None, derandomize=True)
@given(data=st.data(), lq=st.integers(1, 4), lk=st.integers(1, 4), heads=st.sampled_from([1, 2]))
def test_every_entry_point_accepts_the_same_masks(data, lq, lk, heads):
    rng = np.random.default_rng(lq * 10 + lk)
    d = 4
    q, k, v = rng.standard_normal((lq, d)), rng.standard_normal((lk, d)), rng.standard_normal((lk, d))
    mask, allowed = data.draw(masks(lq, lk))
    w_ref, out_ref = reference(q, k, v, allowed, 1 / np.sqrt(d))

    steps = attention_steps(q, k, v, mask=mask)
    np.testing.assert_allclose(squeeze_to(steps.weights, w_ref.shape), w_ref, atol=1e-12)
    np.testing.assert_allclose(squeeze_to(steps.output, out_ref.shape), out_ref, atol=1e-12)

    bulk = attention(q, k, v, mask=mask)
    np.testing.assert_allclose(squeeze_to(bulk, out_ref.shape), out_ref, atol=1e-10)  # blocked rows: 0, not NaN

    mh = multi_head_steps(q, k, v, heads, mask=mask)
    dh = d // heads
    for h in range(heads):
        w_h, _ = reference(q[:, h * dh:(h + 1) * dh], k[:, h * dh:(h + 1) * dh], v, allowed, 1 / np.sqrt(dh))
        np.testing.assert_allclose(mh.heads.weights[h], w_h, atol=1e-12)

    torch.manual_seed(0)
    module = MultiHeadAttention(d, heads).double()
    x_q, x_kv = torch.tensor(q[None]), torch.tensor(k[None])
    out, weights = module(x_q, x_kv, x_kv, mask=mask)
    with torch.no_grad():
        qp, kp = module.W_q(x_q)[0].numpy(), module.W_k(x_kv)[0].numpy()
    for h in range(heads):
        w_h, _ = reference(qp[:, h * dh:(h + 1) * dh], kp[:, h * dh:(h + 1) * dh], v, allowed, 1 / np.sqrt(dh))
        np.testing.assert_allclose(weights[0, h].detach().numpy(), w_h, atol=1e-10)
    assert torch.isfinite(out).all()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data(), n=st.integers(1, 5))
def test_the_model_gives_the_same_output_for_every_form_of_a_mask(data, n):
    torch.manual_seed(1)
    model = TinyTransformer(vocab_size=8, d_model=8, num_heads=2, num_layers=1, max_seq_len=8).eval()
    tokens = torch.randint(2, 8, (1, n))
    mask, allowed = data.draw(masks(n, n))
    with torch.no_grad():
        logits, weights = model(tokens, mask)
        logits_ref, weights_ref = model(tokens, torch.as_tensor(allowed))
    torch.testing.assert_close(logits, logits_ref)
    torch.testing.assert_close(weights[0], weights_ref[0])
