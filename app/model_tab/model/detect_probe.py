"""``DetectProbe``: the Detect view's probe length and the window of it shown (Qt-free, evented; ``heads.probe``).

- **Length**: ``tokens``, the random tokens of each copy (None: the library's default, 50 cut to fit the model).
  ``check(value, model)`` refuses, with the reason, a value that is not a whole number from 2 to ``room(model)``
  (BOS + 2 × tokens within the model's positions and ``PROBE_MAX_POSITIONS``, tokens distinct within its
  vocabulary) and changes nothing; the ``HeadsAnalysis`` sets it (``set_probe_length``) and runs the detectors again.
- **Window**: ``window`` = (first query, first key, positions a side): the picked head's map shows those queries
  and keys, the loss curve those positions. The wheel moves queries and keys together (``scroll``), Shift+wheel the
  keys alone, Ctrl+wheel zooms from ``WINDOW_MIN`` to ``WINDOW_MAX`` (``zoom``), as the head map's window; the
  scroll bars set each side (``set_window``); ``centre_on(kind)`` brings the detector's ideal cells to the middle.
  A new probe length opens with its queries around the start of the second copy (the loss drops there when the
  model copies) against the first copy's first keys, where induction and duplicate-token heads look, and the first
  token's column (the default probe fits a window whole: it shows as before).
"""

from __future__ import annotations

from typing import Any

from app.common.evented import Evented, ModelEvents, event

PROBE_MAX_POSITIONS = 4096
"""The longest probe the Detect view runs: its first sequence's q and k are kept (a 24-layer, 14-head model at
4,096 positions: ~400 MB), and every position's loss is computed on the CPU in minutes, not hours."""
WINDOW, WINDOW_MIN, WINDOW_MAX = 128, 16, 512
"""Positions a side of the window shown (zoom: MIN to MAX), as the head map's (``session.MAP_WINDOW``)."""


class ProbeEvents(ModelEvents):
    length = event()  # the probe length asked for (``tokens``)
    window = event()  # the window of positions shown (``window``, ``positions``)


def parse_tokens(value: Any) -> int | None:
    """The tokens a copy asked for: None for "", "default" or None; ValueError for anything but a whole number."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "default")):
        return None
    text = str(value).strip().replace(",", "").replace("_", "")
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"the probe length must be a whole number of tokens, got {str(value)!r}") from None
    if number != int(number):
        raise ValueError(f"the probe length must be a whole number of tokens, got {str(value)!r}")
    return int(number)


class DetectProbe(Evented):
    """See the module docstring."""

    events: ProbeEvents

    def __init__(self) -> None:
        super().__init__()
        self.tokens: int | None = None
        self.window = (0, 0, WINDOW)
        self.positions = 0  # of the detection shown (0 before one)
        self.status = ""
        self._shape: tuple[int, int, int] = (0, 0, 0)  # (positions, seq_len, offset) the window follows

    # ------------------------------------------------------------------ length
    @staticmethod
    def room(model: Any) -> int:
        """The most tokens a copy may have on ``model``."""
        from attention_core.phenomena.detect import bos_offset, seq_len_room

        return min(seq_len_room(model), (PROBE_MAX_POSITIONS - bos_offset(model)) // 2)

    @staticmethod
    def default(model: Any) -> int:
        from attention_core.phenomena.detect import fit_seq_len

        return fit_seq_len(model, None)

    def check(self, value: Any, model: Any) -> int | None:
        """``value`` as tokens per copy (None: the default), or ValueError saying why not."""
        tokens = parse_tokens(value)
        if tokens is None:
            return None
        if model is None:
            raise ValueError("open a model first: the probe's longest length is the model's")
        from attention_core.phenomena.detect import bos_offset, candidate_tokens, seq_len_room

        room, o = self.room(model), bos_offset(model)
        if not 2 <= tokens <= room:
            if room < seq_len_room(model):
                limit = f"the Detect view's longest probe is {PROBE_MAX_POSITIONS:,} positions"
            elif room == len(candidate_tokens(model)) and o + 2 * room + 2 < model.info.max_positions:
                limit = "the tokens of a copy are distinct: that many in its vocabulary"
            else:
                bos = "BOS + " if o else ""
                limit = f"{o + 2 * room:,} positions: {bos}2 × {room:,} within its {model.info.max_positions:,}"
            raise ValueError(f"the probe length must be 2 to {room:,} tokens on {model.name} ({limit}), got "
                             f"{tokens:,}")
        return tokens

    def set_tokens(self, value: Any, model: Any) -> bool:
        """Ask for ``value`` tokens a copy (checked first, see ``check``); whether it changed."""
        tokens = self.check(value, model)
        if model is not None and tokens == self.default(model):
            tokens = None
        if tokens == self.tokens:
            return False
        self.tokens = tokens
        self._announce("length")
        return True

    def seq_len(self, model: Any) -> int | None:
        """The seq_len the next run asks for (None: the default), the length asked for if it fits ``model``."""
        if self.tokens is None or model is None:
            return None
        return self.tokens if 2 <= self.tokens <= self.room(model) else None

    def forget_if_unfit(self, model: Any) -> bool:
        """A new model: a length it has no room for goes back to the default (True: it did)."""
        if self.tokens is not None and model is not None and self.seq_len(model) is None:
            self.tokens = None
            self._announce("length")
            return True
        return False

    # ------------------------------------------------------------------ window
    @property
    def side(self) -> int:
        """Positions a side shown now: the window's size, or the whole probe when shorter."""
        return min(self.window[2], self.positions) if self.positions else self.window[2]

    def follow(self, positions: int, seq_len: int, offset: int) -> None:
        """The detection shown has ``positions`` (seq_len, offset): a new length opens the window around the second
        copy's start, keys from the first; the same length keeps it."""
        shape = (int(positions), int(seq_len), int(offset))
        if shape == self._shape:
            return
        self._shape, self.positions = shape, shape[0]
        size = self.window[2]
        self._place(offset + seq_len - min(size, positions) // 2, 0, size, force=True)

    def forget(self) -> None:
        """No detection now (a new model): the window waits for the next."""
        self._shape, self.positions = (0, 0, 0), 0
        self.window = (0, 0, self.window[2])
        self._announce("window")

    def set_window(self, query: int | None = None, key: int | None = None, size: int | None = None) -> None:
        """Show queries query … and keys key … (``size`` a side, WINDOW_MIN to WINDOW_MAX), clamped into the probe."""
        q, k, s = self.window
        self._place(q if query is None else int(query), k if key is None else int(key),
                    s if size is None else min(WINDOW_MAX, max(WINDOW_MIN, int(size))))

    def scroll(self, notches: float, keys_only: bool = False) -> None:
        """The wheel: a quarter of the window a notch, towards the start for a positive ``notches`` (wheel up);
        queries and keys together, or the keys alone."""
        q, k, s = self.window
        step = round(notches * max(1, self.side // 4))
        self.set_window(q if keys_only else q - step, k - step)

    def zoom(self, notches: float) -> None:
        """Ctrl+wheel: halve the window a notch up (in), double it a notch down (out), around its middle."""
        q, k, s = self.window
        new = min(WINDOW_MAX, max(WINDOW_MIN, s // 2 if notches > 0 else s * 2))
        shown, after = self.side, min(new, self.positions) if self.positions else new
        self.set_window(q + shown // 2 - after // 2, k + shown // 2 - after // 2, new)

    def centre_on(self, kind: str) -> None:
        """Keys moved so that ``kind``'s ideal cells for the window's middle query run through the window's middle
        (a query of the second copy for duplicate-token and induction)."""
        n, seq_len, offset = self._shape
        if not n:
            return
        q, _k, _s = self.window
        side = self.side
        middle = q + side // 2
        if kind in ("duplicate-token", "induction"):
            middle = max(middle, offset + seq_len)
        key = {"previous-token": middle - 1, "first-token": 0, "duplicate-token": middle - seq_len,
               "induction": middle - seq_len + 1}.get(kind)
        if key is None:
            raise ValueError(f"unknown detector {kind!r}")
        self.set_window(middle - side // 2, key - side // 2)

    def _place(self, query: int, key: int, size: int, force: bool = False) -> None:
        n = self.positions
        top = max(0, n - (min(size, n) if n else size))
        window = (min(max(0, query), top), min(max(0, key), top), size)
        if window != self.window or force:
            self.window = window
            self._announce("window")
