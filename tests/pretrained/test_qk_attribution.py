"""Why this key: the QK terms of one score sum to the score, against our own q·k and transformers' attentions.

HF exposes the weights, not the scores; but within one row the softmax's normaliser cancels: log α_ij − log α_ik =
scale · (s_ij − s_ik) (no soft-cap). So a ``contrast``'s sum times the scale must equal the difference of HF's
log-weights. Families: GPT-2 (learned positions, LayerNorm with biases, the fused projection), Llama (rotary,
grouped-query, RMSNorm), Qwen3 (per-head q/k norms), OLMo-2 (q/k norms over the projection, norms after the
sublayers and none before), GPT-NeoX (per-head fused q|k|v, half the dimensions rotated), Phi-3 (partial rotary),
Gemma 2 (scaled embeddings, (1 + w) norms; a soft-capped score, so only the sum is checked), BERT (post-LN: a norm
after every residual add).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.pretrained.conftest import TEXT

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    from tests.pretrained.family_models import build

    return build(tmp_path_factory.mktemp("qk"), ("qwen3", "olmo2", "phi3-partial", "gemma2", "bert"))


def _folder(name, hf_models, families):
    return hf_models[name] if name in hf_models else families[name]


def _hf_attentions(folder, ids, encoder):
    from tests.pretrained.family_models import reference

    with torch.no_grad():
        out = reference(folder, encoder)(torch.tensor([ids]), output_attentions=True)
    return [a[0].double().numpy() for a in out.attentions]


@pytest.mark.parametrize("name", ["gpt2", "llama", "gpt_neox", "qwen3", "olmo2", "phi3-partial", "gemma2", "bert"])
def test_terms_sum_to_the_score_and_contrasts_to_hf_log_weights(hf_models, families, name):
    from attention_core.pretrained import load_pretrained

    folder = _folder(name, hf_models, families)
    model = load_pretrained(folder, threads=1)
    trace = model.trace(TEXT)
    ids = trace.ids.tolist()
    t, spec = len(ids), model.spec
    att = _hf_attentions(folder, ids, name == "bert")
    layer, head = spec.n_layers - 1, spec.n_heads - 1
    query, keys = t - 1, (0, t // 2, t - 2)
    terms = model.qk_attribution(ids, layer, head, query, keys[1])
    assert terms.terms.shape == (len(terms.query_sources), len(terms.key_sources))
    assert terms.terms.sum() == pytest.approx(terms.score, rel=1e-12)  # float64: the sum is the score
    raw = float(trace.scores[layer, head, query, keys[1]])
    scale_of = float(np.abs(trace.scores[layer, head]).max())
    assert abs(terms.score - raw) <= 1e-4 * scale_of  # our q·k (float32) from the pass itself
    names = terms.query_sources
    assert names[0] == "embed" and names[-1] == "bias"
    assert ("pos" in names) == (name in ("gpt2", "bert"))
    assert f"{layer - 1}.0" in names and f"mlp {layer - 1}" in names and f"{layer}.0" not in names
    for other in (keys[0], keys[2]) if spec.softcap is None else ():  # Gemma 2: c·tanh(s/c) is not linear
        c = terms.contrast(other)
        assert c.other_key == other
        expect = np.log(att[layer][head, query, keys[1]]) - np.log(att[layer][head, query, other])
        assert c.score * terms.scale == pytest.approx(expect, abs=1e-4 * max(1.0, abs(expect)))
        assert c.terms.sum() == pytest.approx(c.score, rel=1e-12)
    top = terms.top(3)
    assert len(top) == 3 and abs(top[0].value) >= abs(top[1].value) >= abs(top[2].value)
    assert top[0].text.startswith("key side: ") and " × query side: " in top[0].text


def test_words_and_refusals(hf_models):
    from attention_core.pretrained import load_pretrained
    from attention_core.pretrained.cause.qk import describe

    assert describe("0.3") == "head 0.3's output" and describe("embed") == "the token's embedding"
    assert describe("mlp 1") == "MLP 1's output"
    model = load_pretrained(hf_models["gpt2"], threads=1)
    first = model.qk_attribution(TEXT, 0, 1, 5, 2)  # layer 0: only embeddings and biases
    assert first.query_sources == ("embed", "pos", "bias")
    with pytest.raises(ValueError, match="layer"):
        model.qk_attribution(TEXT, 5, 0, 1, 0)
    with pytest.raises(ValueError, match="head"):
        model.qk_attribution(TEXT, 0, 9, 1, 0)
    with pytest.raises(ValueError, match="position"):
        model.qk_attribution(TEXT, 0, 0, 100, 0)
