"""A target token and a position as a person gives them, checked before any work.

A token is an id or a string that is exactly one token of the model's vocabulary. Strings are encoded with the
model's own tokenizer; the special tokens its post-processor adds to every text (a Llama ``<s>``, BERT's
``[CLS]`` … ``[SEP]``) are the ones ``encode("")`` yields, and only those are dropped, so ``"<s>"`` written on
purpose still means ``<s>``. The display marks (␣ for a space, ↵ for a newline, ⇥ for a tab) are read as the
characters they stand for, so a token copied from a label (``"␣Paris"``) is found.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py reaches this module (through ``lens`` and
``attribution``), which does not import it back (no import cycle, not even a type-only one)."""

_MARKS = {"␣": " ", "↵": "\n", "⇥": "\t"}


def token_id(model: PretrainedModel, token: Any, what: str = "target") -> int:
    """The id of ``token`` (an int id, or a string that is one token); ``ValueError`` naming ``what`` and why."""
    vocab = model.spec.vocab_size
    if isinstance(token, (bool, np.bool_)):
        raise ValueError(f"{what}: give a token id or a token string, not {token!r}")
    if isinstance(token, (int, np.integer)):
        if not 0 <= int(token) < vocab:
            raise ValueError(f"{what}: token id {int(token)} is outside the vocabulary (0 to {vocab - 1})")
        return int(token)
    if not isinstance(token, str):
        raise ValueError(f"{what}: give a token id or a token string, not {type(token).__name__}")
    if not token:
        raise ValueError(f"{what}: an empty string is no token")
    text = "".join(_MARKS.get(c, c) for c in token)
    try:
        ids = model.encode(text)
    except ValueError as exc:  # this app's own vocabulary refuses words that are not its tokens
        raise ValueError(f"{what}: {token!r} is not a token of this model ({exc})") from None
    added = Counter(model.encode(""))  # what the post-processor adds to every text
    kept = []
    for i in ids:
        if added[i]:
            added[i] -= 1
        else:
            kept.append(i)
    if len(kept) != 1:
        pieces = ", ".join(repr(s) for s in model.token_strings(kept)) or "none"
        raise ValueError(f"{what}: {token!r} is {len(kept)} tokens ({pieces}), not one; give one token or its id")
    return int(kept[0])


def position_index(position: Any, length: int) -> int:
    """``position`` (negative counts from the end) as an index 0 … length-1; ``ValueError`` when out of range."""
    if isinstance(position, (bool, np.bool_)) or not isinstance(position, (int, np.integer)):
        raise ValueError(f"position must be an integer, got {position!r}")
    p = int(position)
    if not -length <= p < length:
        raise ValueError(f"position {p} is outside the text's {length} tokens (0 to {length - 1}, or {-length} "
                         "to -1)")
    return p % length
