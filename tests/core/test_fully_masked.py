"""The fully masked contract: a mask that blocks every key of a row, of any rank that broadcasts, bool or 0/1,
numpy, torch or a list, gives zero weights and a zero attention output (never NaN) at every entry point:
``attention_steps``, ``attention``, ``MultiHeadAttention`` (its heads; the module's output is then W_o's bias
alone) and ``TinyTransformer`` (zero weights, finite logits), with 2-D or batched (4-D) queries. CUDA cases run
only where a GPU is."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_core import MultiHeadAttention, TinyTransformer, attention, attention_steps
from tests.tolerance import assert_close

LQ = LK = 3
D = 4

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")),
]

# Every form of "nothing may be attended", by rank: scalars, a row, a column, (Lq, Lk), batched, per batch and head.
BLOCKED = {
    "float 0.0": 0.0,
    "int 0": 0,
    "False": False,
    "list [0, 0, 0]": [0, 0, 0],
    "list of bool rows": [[False] * LK] * LQ,
    "numpy 0-d bool": np.array(False),
    "numpy (Lk,) float": np.zeros(LK),
    "numpy (Lq, 1) int": np.zeros((LQ, 1), dtype=np.int64),
    "numpy (Lq, Lk) bool": np.zeros((LQ, LK), dtype=bool),
    "numpy (1, Lq, Lk) float32": np.zeros((1, LQ, LK), dtype=np.float32),
    "numpy (B, 1, 1, Lk) bool": np.zeros((2, 1, 1, LK), dtype=bool),
    "numpy (B, H, Lq, Lk) bool": np.zeros((2, 2, LQ, LK), dtype=bool),
    "torch 0-d bool": torch.tensor(False),
    "torch (Lq, Lk) float": torch.zeros(LQ, LK),
    "torch (B, 1, Lq, Lk) bool": torch.zeros(2, 1, LQ, LK, dtype=torch.bool),
    "torch (B, 1, 1, Lk) int": torch.zeros(2, 1, 1, LK, dtype=torch.int64),
}
FORMS = list(BLOCKED)


def _inputs(dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(2, n, D, generator=g, dtype=dtype) for n in (LQ, LK, LK))  # type: ignore[return-value]


def _max_abs(x: object) -> float:
    a = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    assert np.all(np.isfinite(a)), "NaN or infinity where the contract says zeros"
    return float(np.abs(a).max())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", FORMS)
def test_attention_steps_blocks_everything(form, device):
    q, k, v = _inputs()
    s = attention_steps(q, k, v, mask=BLOCKED[form], device=device)
    assert _max_abs(s.weights) == 0.0 and _max_abs(s.output) == 0.0
    assert s.fully_masked.all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("as_torch", [True, False], ids=["torch", "numpy"])
@pytest.mark.parametrize("form", FORMS)
def test_attention_bulk_blocks_everything(form, as_torch, device):
    q, k, v = _inputs()
    args = (q, k, v) if as_torch else (q.numpy(), k.numpy(), v.numpy())
    out = attention(*args, mask=BLOCKED[form], device=device)
    expected = attention_steps(q, k, v, mask=BLOCKED[form]).output
    assert tuple(out.shape) == expected.shape
    assert _max_abs(out) == 0.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("as_torch", [True, False], ids=["torch", "numpy"])
@pytest.mark.parametrize("form", FORMS)
def test_attention_bulk_blocks_everything_with_batched_queries(form, as_torch, device):
    """4-D queries (2, 2, Lq, D) against 3-D keys and values (1, Lk, D): every form, rank 0 to 4, broadcasts and
    gives zeros of the broadcast shape (a rank-0/1 mask used to fail inside the fused kernel with IndexError)."""
    g = torch.Generator().manual_seed(2)
    q = torch.randn(2, 2, LQ, D, generator=g, dtype=torch.float64)
    k, v = (torch.randn(1, LK, D, generator=g, dtype=torch.float64) for _ in range(2))
    args = (q, k, v) if as_torch else (q.numpy(), k.numpy(), v.numpy())
    out = attention(*args, mask=BLOCKED[form], device=device)
    steps = attention_steps(*args, mask=BLOCKED[form], device=device)
    assert tuple(out.shape) == steps.output.shape == (2, 2, LQ, D)
    assert _max_abs(out) == 0.0
    assert _max_abs(steps.output) == 0.0 and _max_abs(steps.weights) == 0.0 and steps.fully_masked.all()


@pytest.mark.parametrize("device", DEVICES)
def test_attention_bulk_blocks_one_batch_row_only(device):
    """A (B, 1, 1, Lk) padding mask with one sequence all padding: that sequence's output is zero, the other's is
    attention_steps' own."""
    q, k, v = _inputs()
    mask = torch.tensor([[[[False] * LK]], [[[True, True, False]]]])
    out = attention(q, k, v, mask=mask, device=device).cpu()
    ref = attention_steps(q, k, v, mask=mask).output
    assert out.shape == ref.shape
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)
    assert _max_abs(out[0]) == 0.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", FORMS)
def test_multi_head_attention_blocks_everything(form, device):
    torch.manual_seed(0)
    module = MultiHeadAttention(D, 2).double().to(device)
    q, k, v = (t.to(device) for t in _inputs())
    out, weights = module(q, k, v, mask=BLOCKED[form])
    assert _max_abs(weights) == 0.0
    # every head's output is zero, so the module's output is W_o's bias alone
    bias = module.W_o.bias.detach()
    assert _max_abs(out - bias) == 0.0
    no_bias = MultiHeadAttention(D, 2, bias=False).double().to(device)
    out0, _ = no_bias(q, k, v, mask=BLOCKED[form])
    assert _max_abs(out0) == 0.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", FORMS)
def test_tiny_transformer_blocks_everything(form, device):
    torch.manual_seed(0)
    model = TinyTransformer(vocab_size=8, d_model=D, num_heads=2, num_layers=2, max_seq_len=8).eval().to(device)
    tokens = torch.randint(2, 8, (2, LQ), device=device)
    with torch.no_grad():
        logits, weights = model(tokens, BLOCKED[form])
        model_free = TinyTransformer(vocab_size=8, d_model=D, num_heads=2, num_layers=2, max_seq_len=8).eval()
        model_free.load_state_dict(model.state_dict())
        model_free.to(device)
        for layer in model_free.layers:  # what "attention contributes nothing" means: W_o's bias alone
            layer.attention.W_o.weight.zero_()
        logits_free, _ = model_free(tokens, None)
    assert np.all(np.isfinite(logits.cpu().numpy()))
    for w in weights:
        assert _max_abs(w) == 0.0
    assert_close(logits, logits_free)


def test_attention_bulk_broadcasts_keys_with_more_leading_dims_than_queries():
    """k and v with leading dims that q lacks, and a mask over them: the same numbers as attention_steps."""
    g = torch.Generator().manual_seed(1)
    q = torch.randn(LQ, D, generator=g, dtype=torch.float64)
    k, v = torch.randn(2, LK, D, generator=g, dtype=torch.float64), torch.randn(2, LK, D, generator=g,
                                                                               dtype=torch.float64)
    mask = torch.tensor([[[False] * LK], [[True, False, True]]])  # (2, 1, Lk): the first batch entry all blocked
    out = attention(q, k, v, mask=mask)
    np.testing.assert_allclose(out.numpy(), attention_steps(q, k, v, mask=mask).output, atol=1e-12)
    assert _max_abs(out[0]) == 0.0


def test_multi_head_attention_keeps_its_shapes_for_a_mask_with_extra_leading_ones():
    """A blocked mask with more dims than (B, H, Lq, Lk), all of size 1, is the same mask: the weights stay
    (B, H, Lq, Lk), all zero; extra dims that are not 1 cannot be (B, H, Lq, Lk) and are refused by name."""
    torch.manual_seed(0)
    module = MultiHeadAttention(D, 2, bias=False).double()
    q, k, v = _inputs()
    out, weights = module(q, k, v, mask=torch.zeros(1, 1, 1, LQ, LK, dtype=torch.bool))
    assert tuple(weights.shape) == (2, 2, LQ, LK) and tuple(out.shape) == (2, LQ, D)
    assert _max_abs(weights) == 0.0 and _max_abs(out) == 0.0
    with pytest.raises(ValueError, match="does not broadcast"):
        module(q, k, v, mask=torch.zeros(3, 1, 1, LQ, LK, dtype=torch.bool))


@pytest.mark.parametrize("form", [f for f in FORMS if np.ndim(np.asarray(BLOCKED[f])) <= 2])
def test_the_step_by_step_heads_block_everything(form):
    """``multi_head_steps`` and ``MultiHeadAttention.explain`` (one sequence): zero weights and zero head outputs."""
    from attention_core import multi_head_steps

    q, k, v = (t[0].numpy() for t in _inputs())
    steps = multi_head_steps(q, k, v, 2, mask=BLOCKED[form])
    assert _max_abs(steps.heads.weights) == 0.0 and _max_abs(steps.heads.output) == 0.0
    assert _max_abs(steps.concat) == 0.0
    torch.manual_seed(0)
    explained = MultiHeadAttention(D, 2, bias=False).double().explain(q, k, v, mask=BLOCKED[form])
    assert _max_abs(explained.heads.weights) == 0.0 and _max_abs(explained.output) == 0.0
