"""A text of only spaces: Trace refused it ("Type some text to trace.") but opening a model traced it (GPT-2 reads
spaces as tokens). One rule now, Trace's: refused both ways, with the same words; the model opens all the same."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from app.model_tab.model.session import NO_TEXT, InspectSession  # noqa: E402


@pytest.mark.parametrize("blank", ["   ", " \t\n", ""])
def test_a_blank_text_is_refused_on_load_as_by_trace(hf_models, blank):
    s = InspectSession()
    try:
        s.set_text(blank)  # no model yet: kept for the load
        s.load(hf_models["gpt2"])
        assert s.wait_idle(60)
        assert s.model is not None and s.load_state == "ready"  # the model opened
        assert s.trace is None and s.error == NO_TEXT and s.status == NO_TEXT
        s.set_text("The quick brown fox")
        assert s.wait_idle(60) and s.trace is not None and s.error == ""
        s.set_text(blank)  # Trace: the same refusal, the last trace kept
        assert s.error == NO_TEXT and s.trace is not None and s.traced_text == "The quick brown fox"
    finally:
        s.shutdown()
