"""The forward pass does no work its results do not need, and its numbers stay the whole computation's.

- A short trace's attention maps and head outputs are written by the forward pass straight into the trace's own
  arrays (a 1,024-token Qwen2-0.5B-shaped trace spent a fifth of its time copying 1.4 GB of maps into numpy).
- ``attention_weights`` runs its steps in one array (``out`` when given); gelu_new and the MLP overwrite their
  temporaries: each op is the same one, so the numbers are bitwise the ones written out.
- With ``logit_positions`` (the ablation scan's losses) a causal model runs the positions up to the last of them
  only and its last layer those positions' outputs only; a layer whose every head is replaced (the batched scan's
  first layer) does not run its attention.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from attention_core import load_pretrained  # noqa: E402
from attention_core.phenomena import ablation_scan  # noqa: E402
from attention_core.pretrained import forward as forward_module  # noqa: E402
from attention_core.pretrained.forward import ForwardPass  # noqa: E402
from attention_core.pretrained.layers import activation, attention_weights  # noqa: E402
from tests.tolerance import assert_close

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"


@pytest.mark.parametrize("name", ["gpt2", "llama", "qwen2"])
def test_a_trace_keeps_the_arrays_the_forward_pass_wrote_not_copies(hf_models, name):
    model = load_pretrained(hf_models[name])
    t = model.trace(TEXT)
    for arr in (t.attentions, t.head_outputs):
        assert not arr.flags.owndata and arr.base is not None  # a view of the array written during the run
        assert arr.dtype == np.float32
    out = model.forward(t.ids, record={"weights", "head_out"})
    np.testing.assert_array_equal(t.attentions, torch.stack(out.records["weights"])[:, 0].numpy())
    np.testing.assert_array_equal(t.head_outputs, torch.stack(out.records["head_out"])[:, 0].numpy())
    off = model.trace(TEXT, ablate={(1, 2): "zero"})
    assert np.all(off.head_outputs[1, 2] == 0) and np.array_equal(off.attentions[0], t.attentions[0])


def test_attention_weights_run_in_one_array_with_the_same_numbers():
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 3, 7, 8, generator=gen), torch.randn(1, 3, 7, 8, generator=gen)
    mask = torch.tril(torch.ones(7, 7, dtype=torch.bool))
    expected = torch.softmax((q @ k.transpose(-1, -2) * 0.3).masked_fill(~mask, float("-inf")), dim=-1)
    buf = torch.empty(1, 3, 7, 7)
    w = attention_weights(q, k, 0.3, None, mask, out=buf)
    assert w.data_ptr() == buf.data_ptr()
    assert torch.equal(w, expected) and torch.equal(attention_weights(q, k, 0.3, None, mask), expected)


def test_activations_in_place_are_bitwise_the_written_out_ones():
    from transformers.activations import NewGELUActivation

    x = torch.randn(40, 96, generator=torch.Generator().manual_seed(1)) * 3
    written = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    before = x.clone()
    assert torch.equal(activation("gelu_new", x), written) and torch.equal(written, NewGELUActivation()(x))
    assert torch.equal(x, before)  # not fresh: its input untouched
    assert torch.equal(activation("silu", x.clone(), fresh=True), torch.nn.functional.silu(x))


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neox", "gpt_neo", "qwen2", "mistral"])
def test_logits_of_some_positions_equal_the_whole_runs(hf_models, name):
    model = load_pretrained(hf_models[name])
    ids, _ = model.ids_of(TEXT)
    heads = model.spec.n_heads
    for ablate in ({}, {(1, 2): "zero"}, {(0, h): "zero" for h in range(heads)}):
        whole = model.forward(ids, ablate=ablate, record={"head_out"}).logits  # a record: every position, run
        for part in (slice(3, 9), slice(5, len(ids) - 1), slice(0, len(ids))):
            some = model.forward(ids, ablate=ablate, logit_positions=part).logits
            assert_close(some.numpy(), whole[:, part].numpy())


def test_the_scan_runs_no_attention_it_replaces_and_only_the_needed_rows(hf_models, monkeypatch):
    model = load_pretrained(hf_models["gpt2"])
    layers, heads = model.spec.n_layers, model.spec.n_heads
    from attention_core.phenomena.ablation import _setup

    text, repeat, _ = _setup(model, TEXT, "zero", 8, 3, 1, [])
    lengths = [text.ids.shape[1], repeat.ids.shape[1]]
    targets = [len(range(lengths[0])[text.positions]), len(range(lengths[1])[repeat.positions])]
    last = model.weights.layers[-1]
    qkv_calls: list[int] = []
    last_rows: list[int] = []
    real_qkv, real_mlp = forward_module._qkv, ForwardPass._mlp

    def qkv(spec, lw, h):
        qkv_calls.append(next(i for i, layer in enumerate(model.weights.layers) if layer is lw))
        return real_qkv(spec, lw, h)

    def mlp(self, lw, h):
        if lw is last:
            last_rows.append(h.shape[1])
        return real_mlp(self, lw, h)

    monkeypatch.setattr(forward_module, "_qkv", qkv)
    monkeypatch.setattr(ForwardPass, "_mlp", mlp)
    ablation_scan(model, TEXT, seq_len=8, seed=3)
    # two clean runs (text, repeated tokens) of every layer; then per layer l one batched run per probe, from l:
    # layer l's heads are all replaced, so its attention is not run, only the layers after it
    assert len(qkv_calls) == 2 * layers + 2 * sum(layers - 1 - li for li in range(layers))
    assert sorted(qkv_calls) == sorted(list(range(layers)) * 2 + [j for li in range(layers)
                                                                   for j in range(li + 1, layers)] * 2)
    # the clean runs compute every row; the scan's runs only the positions whose loss counts (the text: all but
    # the last token, which predicts nothing; the repeat: the second copy's targets)
    assert targets[0] == lengths[0] - 1 and targets[1] < lengths[1] - 1
    assert sorted(last_rows) == sorted(lengths + targets * layers)
    assert heads > 1
