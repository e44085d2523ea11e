"""A real head's parts (``Trace.head_setting``) and its steps rebuilt from them (``Trace.head_steps``): q and k before
rotation, the positions, the rotary base and width, the window, the K/V group. Rotating them again in
``attention_steps`` gives the model's rotated q and k, and the weights equal transformers' eager attention."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core import load_pretrained, rotate  # noqa: E402
from tests.tolerance import assert_close

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"  # = conftest.TEXT
KEYS = {"q", "k", "v", "positions", "rotary_base", "rotary_dims", "window", "softcap", "scale", "causal", "kv_head",
        "kv_heads", "heads", "note"}


def _hf_attentions(hf_reference, name, ids):
    with torch.no_grad():
        out = hf_reference(name)(torch.as_tensor(ids)[None], output_attentions=True)
    return torch.stack(out.attentions)[:, 0].numpy()


@pytest.mark.parametrize("name, base, dims", [("llama", 10000.0, 8), ("gpt_neox", 10000.0, 4),
                                              ("mistral", 10000.0, 8)])
def test_a_rotary_head_comes_unrotated_and_rotates_back_to_the_model(hf_models, hf_reference, name, base, dims):
    model = load_pretrained(hf_models[name])
    trace = model.trace(TEXT)
    attentions = _hf_attentions(hf_reference, name, trace.ids)
    for layer in range(model.info.layers):
        for head in range(model.info.heads):
            s = trace.head_setting(layer, head)
            assert set(s) == KEYS
            assert (s["rotary_base"], s["rotary_dims"]) == (base, dims)  # GPT-NeoX: rotary_pct 0.5 of d_head 8
            assert s["kv_head"] == trace.kv_head(head) and (s["heads"], s["kv_heads"]) == (4, model.info.kv_heads)
            np.testing.assert_array_equal(s["positions"], np.arange(len(trace)))
            kv = s["kv_head"]
            # before rotation: rotating them with the library's rotate gives the model's rotated q and k
            assert_close(rotate(s["q"], s["positions"], base=base, dims=dims), trace.q[layer, head])
            assert not np.allclose(s["q"][1:], trace.q[layer, head][1:], atol=1e-3)  # not the rotated ones
            if dims < model.info.d_head:  # partial rotary: the columns past dims are not turned
                assert_close(s["k"][:, dims:], trace.k[layer, kv][:, dims:])
            steps = trace.head_steps(layer, head)
            assert_close(steps.q_rotated, trace.q[layer, head])
            assert_close(steps.k_rotated, trace.k[layer, kv])
            assert_close(steps.weights, attentions[layer, head])


def test_windows_and_the_mask_come_with_the_head(hf_models):
    trace = load_pretrained(hf_models["mistral"]).trace(TEXT)  # sliding_window 6, one K/V head
    s = trace.head_setting(1, 3)
    assert s["window"] == 6 and s["causal"] is True and s["kv_head"] == 0 and s["softcap"] is None
    steps = trace.head_steps(1, 3)
    assert np.all(steps.weights[10, :5] == 0) and steps.weights[10, 5] > 0  # keys 5..10: the last 6


def test_scaled_rope_is_given_rotated_with_a_note(hf_models, hf_reference):
    trace = load_pretrained(hf_models["llama-tied"]).trace(TEXT)  # llama3 rope scaling
    s = trace.head_setting(0, 1)
    assert s["rotary_base"] is None and s["rotary_dims"] is None and "llama3" in s["note"]
    np.testing.assert_array_equal(s["q"], trace.q[0, 1])
    attentions = _hf_attentions(hf_reference, "llama-tied", trace.ids)
    assert_close(trace.head_steps(0, 1).weights, attentions[0, 1])


def test_learned_positions_and_no_positions(hf_models, own_model_dir):
    gpt2 = load_pretrained(hf_models["gpt2"]).trace(TEXT).head_setting(0, 0)
    assert gpt2["rotary_base"] is None and "learned" in gpt2["note"] and gpt2["window"] is None
    own = load_pretrained(own_model_dir)
    s = own.trace(own.encode("3 5 7 3 5")).head_setting(0, 0)
    assert s["rotary_base"] is None and s["note"]
