"""Text ↔ ids, and each id as a string a person can read in a heatmap's axis.

Hugging Face ``tokenizer.json`` files are read with the ``tokenizers`` package (the same Rust code transformers
uses), so ids equal theirs, special tokens (a Llama BOS) included. Display strings: byte-level BPE (GPT-2, Pythia,
Qwen2) spells a leading space ``Ġ`` and sentencepiece (Llama, Mistral) ``▁``; both are shown as ``␣`` (U+2423, OPEN
BOX), a newline as ``↵`` and a tab as ``⇥``, so "the" and " the" stay distinguishable; a byte that is only part of a
UTF-8 character shows as ``\\xNN``, and so does any other control or invisible character (``visible``). This app's
own models have no text vocabulary: their ids are written as numbers, with 0 and 1 as PAD and SEP
(``attention_core.tiny.vocab``), and text is those names separated by spaces or commas.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import PretrainedError

SPACE, NEWLINE, TAB = "␣", "↵", "⇥"


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet reversed: the printable stand-in character → the byte it stands for."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    codes = keep[:]
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, codes)}


_BYTES = _byte_decoder()


_MARKS = {" ": SPACE, "\n": NEWLINE, "\t": TAB}


def visible(text: str) -> str:
    """A token string as every label shows it (one rule): a space as ␣, a newline as ↵, a tab as ⇥, and every other
    control or invisible character (a carriage return, a vertical tab, NUL, a no-break space, a zero-width joiner …)
    as its code — ``\\x0d``, ``\\xa0``, ``\\u200d`` — like a byte that is only part of a UTF-8 character
    (``\\xNN``). Drawn raw, such a token was a blank row or a "▯" box."""
    out = []
    for c in text:
        if c in _MARKS:
            out.append(_MARKS[c])
        elif unicodedata.category(c)[0] in "CZ":  # control, format, unassigned, private; separators
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)


def _bytes_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if b < 0x80 else f"\\x{b:02x}" for b in data)


def _mentions(node: Any, kind: str) -> bool:
    """Does a tokenizer.json component (or any in its Sequence) have this ``type``?"""
    if isinstance(node, dict):
        return node.get("type") == kind or any(_mentions(v, kind) for v in node.values())
    if isinstance(node, list):
        return any(_mentions(v, kind) for v in node)
    return False


class HFTokenizer:
    """A ``tokenizer.json``: ``encode(text)``, ``display(ids)``, ``decode(ids)``, ``special_ids``, ``size``."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        try:
            self._tok = Tokenizer.from_file(str(path))
            spec = json.loads(path.read_text(encoding="utf-8"))
        except Exception as exc:  # tokenizers raises a plain Exception for a damaged file
            raise PretrainedError(f"{path}: not a valid tokenizer.json ({exc})") from None
        self.path = path
        self.byte_level = _mentions(spec.get("decoder"), "ByteLevel") or _mentions(spec.get("pre_tokenizer"),
                                                                                   "ByteLevel")
        self.special_ids = {int(t["id"]) for t in spec.get("added_tokens") or [] if t.get("special")}
        self.size = int(self._tok.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str) -> list[int]:
        """Ids as transformers' tokenizer gives them (``add_special_tokens=True``: a Llama BOS is added)."""
        return list(self._tok.encode(text).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=False))

    def display_one(self, token_id: int) -> str:
        piece = self._tok.id_to_token(int(token_id))
        if piece is None:
            return f"<{int(token_id)}>"
        if token_id in self.special_ids:
            return visible(piece)
        if self.byte_level and all(c in _BYTES for c in piece):
            return visible(_bytes_text(bytes(_BYTES[c] for c in piece)))
        if piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:  # sentencepiece byte fallback
            try:
                return visible(_bytes_text(bytes([int(piece[3:5], 16)])))
            except ValueError:
                pass
        return visible(piece.replace("▁", " "))

    def display(self, ids: Sequence[int]) -> list[str]:
        return [self.display_one(int(i)) for i in ids]


class OwnVocab:
    """This app's models: ids 0 … vocab-1, 0 = PAD, 1 = SEP, the rest written as their numbers."""

    def __init__(self, size: int, path: Path) -> None:
        self.size = size
        self.path = path
        self.special_ids = {0, 1}

    def encode(self, text: str) -> list[int]:
        from ..tiny.vocab import PAD, SEP

        names = {"PAD": PAD, "SEP": SEP}
        out = []
        for word in text.replace(",", " ").split():
            if word.upper() in names:
                out.append(names[word.upper()])
                continue
            try:
                value = int(word)
            except ValueError:
                raise PretrainedError(f"{self.path}: {word!r} is not a token of this model: give numbers 0-"
                                      f"{self.size - 1}, PAD or SEP, separated by spaces") from None
            if not 0 <= value < self.size:
                raise PretrainedError(f"{self.path}: token {value} is outside the vocabulary 0-{self.size - 1}")
            out.append(value)
        return out

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.display(ids))

    def display(self, ids: Sequence[int]) -> list[str]:
        from ..tiny.vocab import token_labels

        return token_labels([int(i) for i in ids])
