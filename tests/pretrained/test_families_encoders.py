"""BERT, RoBERTa and DistilBERT against transformers' eager attention (masked-LM logits and every attention weight,
to 1e-5 in float32): no causal mask, post-LN blocks, token type and position offsets, the masked-LM head. Their trace
says it predicts the masked tokens, at the [MASK] / <mask> positions."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from family_models import ENCODERS, build, reference  # noqa: E402

from attention_core import load_pretrained  # noqa: E402
from tests.tolerance import assert_close

MASKED = {"bert": "The quick brown [MASK] jumps over the lazy dog. Mary went to the [MASK].",
          "distilbert": "The quick brown [MASK] jumps over the lazy dog. Mary went to the [MASK].",
          "roberta": "The quick brown <mask> jumps over the lazy dog. Mary went to the <mask>."}


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    return build(tmp_path_factory.mktemp("encoders"), ENCODERS)


@pytest.mark.parametrize("name", ENCODERS)
def test_masked_logits_and_every_attention_equal_transformers(encoders, name):
    from transformers import PreTrainedTokenizerFast

    model = load_pretrained(encoders[name])
    text = MASKED[name]
    trace = model.trace(text)
    hf_tok = PreTrainedTokenizerFast(tokenizer_file=str(encoders[name] / "tokenizer.json"))
    assert trace.ids.tolist() == hf_tok(text)["input_ids"]
    ref = reference(encoders[name], encoder=True)
    with torch.no_grad():
        out = ref(torch.as_tensor(trace.ids)[None], output_attentions=True)
    attentions = torch.stack(out.attentions)[:, 0].numpy()
    assert_close(trace.logits, out.logits[0].numpy())
    assert_close(trace.attentions, attentions)
    assert all(m is None for m in trace.masks)  # bidirectional: every token sees every other
    assert np.all(trace.attentions[:, :, 0, -1] > 0)  # the first token attends to the last
    for layer in range(model.info.layers):
        for head in range(model.info.heads):
            setting = trace.head_setting(layer, head)
            assert setting["causal"] is False and setting["rotary_base"] is None
            assert_close(trace.head_steps(layer, head).weights, attentions[layer, head])
    # the trace predicts the masked tokens, at the mask positions
    assert trace.prediction == "masked"
    mask_word = "<mask>" if name == "roberta" else "[MASK]"
    assert [trace.tokens[p] for p in trace.masked_positions] == [mask_word, mask_word]
    guesses = trace.masked_predictions(3)
    assert sorted(guesses) == list(trace.masked_positions)
    for pos, top in guesses.items():
        assert top[0][1] == int(np.argmax(out.logits[0, pos].numpy()))


def test_a_decoder_trace_has_no_masked_predictions(hf_models):
    trace = load_pretrained(hf_models["gpt2"]).trace("The quick brown fox")
    assert trace.prediction == "next" and trace.masked_positions == () and trace.masked_predictions() == {}


def test_roberta_positions_start_after_the_padding_index(encoders):
    model = load_pretrained(encoders["roberta"])
    assert model.spec.position_offset == 1 and model.info.max_positions == 127  # table of 128, pad id 0
    assert load_pretrained(encoders["bert"]).info.max_positions == 128


def test_the_model_tab_says_an_encoder_predicts_the_masked_token(encoders, hf_models):
    from app.model_tab.model.views import next_token_html

    trace = load_pretrained(encoders["bert"]).trace(MASKED["bert"])
    pos = trace.masked_positions[0]
    text = next_token_html(trace, pos, trace.top_next(3)[pos])
    assert text.startswith("<b>Predicted for '[MASK]'</b>") and "Next token" not in text
    gpt2 = load_pretrained(hf_models["gpt2"]).trace("The quick brown fox")
    assert next_token_html(gpt2, 1, gpt2.top_next(3)[1]).startswith("<b>Next token after")


def test_the_model_tab_names_the_last_mask_until_another_position_is_hovered(encoders):
    """With nothing hovered the list was about the last token ('[SEP]': "Predicted at (no mask here)") although
    the text asked the encoder to fill in its [MASK]s."""
    from app.model_tab.model.session import InspectSession
    from app.model_tab.model.views import next_token_html

    s = InspectSession()
    s.load(encoders["bert"])
    assert s.wait_idle(120)
    s.set_text(MASKED["bert"])
    assert s.wait_idle(120) and s.trace is not None
    last_mask = max(s.trace.masked_positions)
    assert s.trace.tokens[last_mask] == "[MASK]" and last_mask < len(s.trace) - 1
    assert s.shown_position == last_mask
    assert [i for _n, i, _p in s.top_next()] == list(np.argsort(-s.trace.logits[last_mask], kind="stable")[:5])
    assert next_token_html(s.trace, s.shown_position, s.top_next()).startswith("<b>Predicted for '[MASK]'</b>")
    s.hover(1)  # a hovered position is still the one shown
    assert s.shown_position == 1
