"""One rule for showing a token string, in every label (the token strip, the maps' axes, the next-token list, the
Detect view's probe, a head opened in the Playground): a space, a newline and a tab as ␣ ↵ ⇥, every other control
or invisible character as its code, like a byte that is only part of a UTF-8 character (\\xNN). Control characters
were drawn raw (a blank row, a "▯"), and a token the Playground names "␣" lost its "@pos" beside a real "␣"."""

from __future__ import annotations

import unicodedata

import pytest

from app.model_tab.model.playground_head import unique_names
from attention_core.pretrained.tokenizer import visible

CODES = {"\x00": "\\x00", "\x0b": "\\x0b", "\x0c": "\\x0c", "\r": "\\x0d", "\x1b": "\\x1b", "\x7f": "\\x7f",
         "\x85": "\\x85", "\xa0": "\\xa0", "\u200b": "\\u200b", "\u2028": "\\u2028", "\ufeff": "\\ufeff"}


def _drawable(s: str) -> bool:
    return all(unicodedata.category(c)[0] not in "CZ" for c in s)


@pytest.mark.parametrize("char", list(CODES))
def test_control_and_invisible_characters_are_written_as_their_codes(char):
    assert visible(f"a{char}b") == f"a{CODES[char]}b"


def test_marks_and_printable_characters_stay():
    assert visible(" the\n\t") == "␣the↵⇥"
    assert visible("héllo ☕ 日本") == "héllo␣☕␣日本"


def test_a_real_tokenizers_control_bytes_are_escaped_like_its_partial_bytes(hf_models):
    pytest.importorskip("transformers")
    from attention_core import load_pretrained

    model = load_pretrained(hf_models["gpt2"])
    text = "a\x0bb\x1bc\x00d\re ☕"
    ids = model.encode(text)
    shown = model.token_strings(ids)
    assert all(_drawable(t) for t in shown), shown  # nothing drawn raw
    joined = "".join(shown)
    for code in ("\\x0b", "\\x1b", "\\x00", "\\x0d"):
        assert code in joined
    trace = model.trace(text)
    assert trace.tokens == shown and all(_drawable(t) for t, _i, _p in trace.top_next(20)[-1])


def test_the_playground_names_tokens_apart_by_what_they_show():
    names = unique_names(["␣", "a", " ", "b"])  # a lone space and a token shown as "␣"
    assert names == ["␣@0", "a", "␣@2", "b"] and len(set(names)) == len(names)
    assert unique_names(["x", "y"]) == ["x", "y"]
