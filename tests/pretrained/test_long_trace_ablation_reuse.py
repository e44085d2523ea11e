"""The ablation scan restarts each head's run at its layer from the recorded residual stream (the stream up to layer
L is the same for every head of layer L; benchmarks/bench_pretrained.py --side-by-side times it against runs from
the embeddings). Its numbers must be the whole forward pass's: every head's change in loss equals the loss computed
from a whole run with that head off (``PretrainedModel.losses``, from the embeddings, every position's logits)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from attention_core import load_pretrained  # noqa: E402
from attention_core.phenomena import ablation_scan  # noqa: E402
from attention_core.phenomena.detect import bos_offset, fit_seq_len, repeated_ids  # noqa: E402
from tests.tolerance import assert_close


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neo"])
def test_the_restarting_scan_equals_whole_runs_for_every_head(hf_models, name):
    model = load_pretrained(hf_models[name])
    text = "The quick brown fox and Mary went to the café. The quick brown fox"
    scan = ablation_scan(model, text, seq_len=8, seed=3)
    ids, _ = model.ids_of(text)
    s = fit_seq_len(model, 8)
    rep = repeated_ids(model, s, 3, 1)
    first = bos_offset(model) + s - 1  # the second copy's predicted positions, as RepeatTrace counts them
    base_text = float(model.losses(ids).mean())
    base_rep = float(model.losses(rep)[:, first:].mean())
    assert scan.text_loss == pytest.approx(base_text, abs=1e-5)
    assert scan.repeat_loss == pytest.approx(base_rep, abs=1e-5)
    layers, heads = model.spec.n_layers, model.spec.n_heads
    text_change, repeat_change = np.zeros((layers, heads)), np.zeros((layers, heads))
    for li in range(layers):
        for h in range(heads):
            off = {(li, h): "zero"}
            text_change[li, h] = float(model.losses(ids, ablate=off).mean()) - base_text
            repeat_change[li, h] = float(model.losses(rep, ablate=off)[:, first:].mean()) - base_rep
    assert np.abs(text_change).max() > 1e-3  # heads matter here: the comparison is not of zeros
    # differences of float32 losses: their rounding is the losses', not the differences' own
    assert_close(scan.text_change, text_change, scale=base_text, dtype=np.float32)
    assert_close(scan.repeat_change, repeat_change, scale=base_rep, dtype=np.float32)
