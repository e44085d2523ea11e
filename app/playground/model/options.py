"""The Playground's modern attention options, Qt-free: rotary positions, ALiBi, soft-capping, the sliding window
with sinks, grouped-query K/V heads and FlashAttention's block sizes — their values, their checks (``ValueError``
naming the reason; the caller keeps the old value) and their part of a snapshot.

Apart from ``state.py`` by responsibility: the state holds one ``AttentionOptions`` (``state.options``) and asks here
what the options mean for its matrix widths, its mask and the arguments of ``attention_steps``.

Choices written once here:

- Rotary rotates the first ``rotary_dims`` columns of Q and K (all of d_k when None) in the rotate-half layout, at
  positions 0…L−1, over the whole d_k the Steps view shows (one head over all columns, as the Steps view computes).
- ALiBi's bias is ``alibi_bias(num_heads, Lq, Lk)[0]``: head 0's slope of the Playground's heads (with one head,
  the slope a one-head model would get), because the Steps view shows one head. The multi-head split gives each
  head its own slope, rotates each head's own first columns (at most its width) and soft-caps every head.
- K/V heads (grouped-query attention): K is Lk × (d_k·kv/heads) and V Lk × (d_v·kv/heads) wide, W_K and W_V as wide.
  Fewer K/V heads keep the first columns (K/V head g keeps the columns it had); undo brings the others back. The
  Steps view reads K and V with each K/V head repeated for the query heads of its group, as one head over all of
  d_k sees them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

DEFAULT_BASE = 10000.0
DEFAULT_WINDOW = 3
DEFAULT_BLOCK = 2
MAX_BASE = 1e9
MAX_SOFTCAP = 1e6
MAX_BLOCK = 64


@dataclass
class AttentionOptions:
    """The options' values; the defaults are the attention of 2017 (every modern step off)."""

    rotary_base: float | None = None
    """None: no rotary positions; else the base of the rotation frequencies (10000 in Llama)."""
    rotary_dims: int | None = None
    """How many leading columns rotate (even, at most d_k); None: all of d_k."""
    alibi: bool = False
    softcap: float | None = None
    window: int = DEFAULT_WINDOW
    """The sliding window's width W (query i sees keys i−W+1…i), used while the mask mode is "sliding"."""
    sinks: int = 0
    """The first keys every query may see under the sliding mask (attention sinks)."""
    num_kv_heads: int | None = None
    """K/V heads (grouped-query attention); None: as many as query heads."""
    block_q: int = DEFAULT_BLOCK
    block_k: int = DEFAULT_BLOCK

    def snapshot(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any], dims: dict[str, int], heads: int) -> AttentionOptions:
        """The options a snapshot holds (a key missing: its default, so an older session opens), checked against
        ``dims`` and ``heads``; ValueError naming the first problem."""
        o = cls()
        values = {f.name: snap.get(f.name, getattr(o, f.name)) for f in fields(cls)}
        o.set_rotary(values["rotary_base"], values["rotary_dims"], dims["d_k"])
        if not isinstance(values["alibi"], bool):
            raise ValueError(f"alibi must be true or false, got {values['alibi']!r}")
        o.alibi = values["alibi"]
        o.softcap = check_softcap(values["softcap"])
        o.window, o.sinks = check_window(values["window"], values["sinks"])
        o.num_kv_heads = check_kv_heads(values["num_kv_heads"], heads)
        o.block_q, o.block_k = check_blocks(values["block_q"], values["block_k"])
        return o

    def set_rotary(self, base: float | None, dims: int | None, d_k: int) -> None:
        self.rotary_base, self.rotary_dims = check_rotary(base, dims, d_k)

    def kv_heads(self, heads: int) -> int:
        """The K/V heads in use (the query heads' count when not grouped)."""
        return heads if self.num_kv_heads is None else self.num_kv_heads

    def on(self, mask_mode: str) -> list[str]:
        """Which options are on, as short names (for titles, the story and Copy as code)."""
        out = []
        if self.rotary_base is not None:
            out.append("rotary")
        if self.alibi:
            out.append("alibi")
        if self.softcap is not None:
            out.append("softcap")
        if mask_mode == "sliding":
            out.append("sliding")
        if self.num_kv_heads is not None:
            out.append("kv_heads")
        return out


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer)) or not float(value).is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(value)


def check_rotary(base: Any, dims: Any, d_k: int) -> tuple[float | None, int | None]:
    """(base, dims) when rotary fits d_k; (None, None) for base None (rotary off)."""
    if base is None:
        return None, None
    if isinstance(base, bool) or not isinstance(base, (int, float, np.number)):
        raise ValueError(f"the rotary base must be a number, got {base!r}")
    b = float(base)
    if not (math.isfinite(b) and 1.0 < b <= MAX_BASE):
        raise ValueError(f"the rotary base must be above 1 and at most {MAX_BASE:g}, got {base}")
    if dims is None:
        if d_k % 2:
            raise ValueError(f"rotary positions turn pairs of columns: d_k = {d_k} is odd; make d_k even, or "
                             "rotate fewer (even) columns")
        return b, None
    n = _int(dims, "the rotary dims")
    if n < 2 or n % 2:
        raise ValueError(f"the rotary dims must be even (columns turn in pairs) and at least 2, got {n}")
    if n > d_k:
        raise ValueError(f"the rotary dims ({n}) cannot be more than d_k = {d_k}")
    return b, (None if n == d_k else n)


def check_softcap(cap: Any) -> float | None:
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, (int, float, np.number)):
        raise ValueError(f"the soft-cap must be a number, got {cap!r}")
    c = float(cap)
    if not (math.isfinite(c) and 0 < c <= MAX_SOFTCAP):
        raise ValueError(f"the soft-cap must be above 0 (and at most {MAX_SOFTCAP:g}), got {cap}")
    return c


def check_window(size: Any, sinks: Any = 0) -> tuple[int, int]:
    w, s = _int(size, "the window"), _int(sinks, "the sinks")
    if w < 1:
        raise ValueError(f"a window of {w} lets a query see no key: the window must be at least 1")
    if s < 0:
        raise ValueError(f"the sinks cannot be negative, got {s}")
    return w, s


def check_kv_heads(n: Any, heads: int) -> int | None:
    """None (standard: as many K/V heads as heads) or a count that divides ``heads``; n == heads is None."""
    if n is None:
        return None
    k = _int(n, "the K/V heads")
    if k < 1 or heads % k:
        raise ValueError(f"{k} K/V heads do not divide {heads} head{'s' if heads != 1 else ''}: each K/V head "
                         "serves a whole group of query heads")
    return None if k == heads else k


def check_blocks(block_q: Any, block_k: Any) -> tuple[int, int]:
    bq, bk = _int(block_q, "the query block"), _int(block_k, "the key block")
    for name, b in (("query", bq), ("key", bk)):
        if not 1 <= b <= MAX_BLOCK:
            raise ValueError(f"the {name} block must be between 1 and {MAX_BLOCK} rows, got {b}")
    return bq, bk


def kv_widths(dims: dict[str, int], heads: int, options: AttentionOptions) -> tuple[int, int]:
    """The widths of K and V (and of W_K, W_V): d_k and d_v, or their share for the K/V heads."""
    kv = options.kv_heads(heads)
    return dims["d_k"] * kv // heads, dims["d_v"] * kv // heads


def expand_kv(x: np.ndarray, heads: int, kv_heads: int) -> np.ndarray:
    """K or V with each of its ``kv_heads`` column groups repeated for the query heads of its group (heads/kv_heads
    copies each, side by side): what one head over all of d_k reads."""
    if kv_heads == heads:
        return x
    parts = np.split(x, kv_heads, axis=-1)
    return np.concatenate([p for p in parts for _ in range(heads // kv_heads)], axis=-1)


def sliding_mask(lq: int, lk: int, options: AttentionOptions) -> np.ndarray:
    """The sliding-window mask (True = may attend): key j for query i when i − W < j ≤ i, or j < sinks."""
    from attention_core import sliding_window_mask

    _keys_at_least_queries(lq, lk, "a sliding window")
    return np.asarray(sliding_window_mask(lq, lk, window=options.window, sinks=options.sinks), dtype=bool)


def _keys_at_least_queries(lq: int, lk: int, what: str) -> None:
    """The queries sit at the last positions of the keys (as rows decoded after a prompt): more queries than keys
    have no positions."""
    if lq > lk:
        raise ValueError(f"{what} needs at least as many keys as queries (the queries are the last positions); "
                         f"Lq = {lq} > Lk = {lk}")


def step_options(options: AttentionOptions, heads: int, lq: int, lk: int) -> dict[str, Any]:
    """The keyword arguments of ``attention_steps`` for the options that are on."""
    out: dict[str, Any] = {}
    if options.rotary_base is not None:
        out.update(rotary_base=options.rotary_base, rotary_dims=options.rotary_dims)
    if options.alibi:
        from attention_core import alibi_bias

        _keys_at_least_queries(lq, lk, "ALiBi")
        out["bias"] = np.asarray(alibi_bias(heads, lq, lk), dtype=np.float64)[0]
    if options.softcap is not None:
        out["softcap"] = options.softcap
    return out


def head_rotary_dims(options: AttentionOptions, d_head: int) -> int | None:
    """How many columns of each head rotate in the multi-head split: the Steps view's rotary width, at most the
    head's own width; None (no rotation per head) when rotary is off or a head is an odd number of columns wide."""
    if options.rotary_base is None or d_head % 2:
        return None
    return min(options.rotary_dims or d_head, d_head)


def head_options(options: AttentionOptions, heads: int, d_k: int, lq: int, lk: int) -> dict[str, Any]:
    """The keyword arguments of ``multi_head_steps``: the K/V heads, and per head the options of the Steps view —
    rotary on each head's own columns (``head_rotary_dims``), ALiBi with each head's own slope, the soft-cap."""
    out: dict[str, Any] = {} if options.num_kv_heads is None else {"num_kv_heads": options.num_kv_heads}
    dims = head_rotary_dims(options, d_k // heads)
    if dims is not None:
        out.update(rotary_base=options.rotary_base, rotary_dims=dims)
    if options.alibi:
        from attention_core import alibi_bias

        out["bias"] = np.asarray(alibi_bias(heads, lq, lk), dtype=np.float64)
    if options.softcap is not None:
        out["softcap"] = options.softcap
    return out


def apply_head_options(state: Any, options: dict[str, Any]) -> None:
    """Put a real head's own options into a state that has just loaded its inputs: ``rotary_base`` and
    ``rotary_dims``, ``softcap``, and ``window`` (with ``sinks``: the sliding mask, which must equal the mask the head
    brought). ValueError when one does not fit the head."""
    o = state.options
    if options.get("rotary_base") is not None:
        o.set_rotary(options["rotary_base"], options.get("rotary_dims"), state.dims["d_k"])
    if options.get("softcap") is not None:
        o.softcap = check_softcap(options["softcap"])
    if options.get("window") is not None:
        o.window, o.sinks = check_window(options["window"], options.get("sinks", 0))
        before = state.mask()
        state.mask_mode = "sliding"
        if before is None or not np.array_equal(before, state.mask()):
            raise ValueError("the head's mask is not the sliding window it names")
