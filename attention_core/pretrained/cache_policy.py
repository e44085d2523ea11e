"""Which keys a decoding cache keeps, and what it costs: the policies ``full``, ``window`` and ``sinks``.

``full`` keeps every past key and value. ``window`` keeps the last ``window`` positions (the query's own included),
as Mistral's sliding window does. ``sinks`` keeps the first ``sinks`` positions and the last ``window - sinks``
(StreamingLLM: the first tokens soak up attention that has nowhere else to go, so dropping them hurts more than
dropping any other). Each is a rule on positions: query position q may see key position k (k <= q) when

- full:   always;
- window: q - k < window;
- sinks:  k < sinks or q - k < window - sinks.

Because the rule depends only on positions, a prompt run in one pass under the rule's mask leaves the same cache as
the same tokens fed one at a time with eviction, which is what makes a whole-sequence reference possible.

``KVCache`` is the cache itself: what a policy keeps, layer by layer, and what ``ForwardPass.run(cache=...)`` reads and
appends to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

CACHE_POLICIES = ("full", "window", "sinks")


def _int(name: str, value: Any, *, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


@dataclass(frozen=True)
class CachePolicy:
    """A checked policy: ``cache`` one of ``CACHE_POLICIES``; ``window`` (None for full) and ``sinks`` (0 unless
    ``cache == "sinks"``)."""

    cache: str = "full"
    window: int | None = None
    sinks: int = 0

    @classmethod
    def make(cls, cache: Any = "full", window: Any = None, sinks: Any = 4) -> CachePolicy:
        """Check the options and build the policy; bad ones raise ``ValueError`` naming the option."""
        if cache not in CACHE_POLICIES:
            raise ValueError(f"cache must be one of {', '.join(CACHE_POLICIES)}, got {cache!r}")
        if window is not None:
            window = _int("window", window, low=1)
        sinks = _int("sinks", sinks, low=0)
        if cache == "full":
            if window is not None:  # a window the caller believes is in force, silently ignored, misleads
                raise ValueError(f"window={window} applies to cache='window' and cache='sinks' only: a full cache "
                                 "keeps every position (leave window out, or choose a windowed cache)")
            return cls("full", None, 0)
        if window is None:
            raise ValueError(f"cache={cache!r} needs a window (how many positions the cache keeps)")
        if cache == "window":
            return cls("window", window, 0)
        if sinks >= window:
            raise ValueError(f"sinks ({sinks}) must be smaller than the window ({window}): the cache keeps the first "
                             f"sinks positions and the last window - sinks")
        return cls("sinks", window, sinks)

    @property
    def full(self) -> bool:
        return self.cache == "full"

    def sees(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Bool, broadcast of q and k positions: True where the policy keeps key k for query q (k <= q assumed)."""
        if self.window is None:
            return torch.ones(torch.broadcast_shapes(q.shape, k.shape), dtype=torch.bool, device=q.device)
        recent = q - k < self.window - self.sinks
        return recent | (k < self.sinks) if self.sinks else recent

    def mask(self, positions: torch.Tensor) -> torch.Tensor | None:
        """(T, T) mask of a whole run over ``positions`` (None for full: the model's own causal mask is enough)."""
        if self.full:
            return None
        return self.sees(positions[:, None], positions[None, :])

    def kept(self, query_position: int, length: int) -> list[int]:
        """The positions a query at ``query_position`` sees among 0..length-1 (sorted)."""
        k = torch.arange(min(length, query_position + 1))
        return k[self.sees(torch.tensor(query_position), k)].tolist()

    def describe(self) -> str:
        if self.full:
            return "full"
        if self.cache == "window":
            return f"window {self.window}"
        return f"sinks {self.sinks} + last {self.window - self.sinks}"  # type: ignore[operator]


def kv_bytes(layers: int, kv_heads: int, positions: int, d_head: int, bytes_per_element: int) -> int:
    """Keys and values of every layer: 2 × layers × kv heads × positions × d_head × bytes per element."""
    return 2 * layers * kv_heads * positions * d_head * bytes_per_element


_INTS: list[int] = []
"""0, 1, 2, ... one object each, shared by the lists ``position_list`` makes. Replaced whole as it grows (another
thread sees the old list or the new one, both right)."""


def position_list(positions: torch.Tensor) -> list[int]:
    """``positions.tolist()`` made of shared int objects: a decoding step's ``cache_positions`` is a list of up to a
    context of ints, and fresh from ``tolist`` each int above 256 is its own 28-byte object (~18 MB over 1,000 steps
    of GPT-2, beside ~500 MB of attention rows and logits)."""
    global _INTS
    values, ints = positions.tolist(), _INTS
    if values and max(values) >= len(ints):
        ints = _INTS = list(range(max(max(values) + 1, 2 * len(ints), 1024)))
    return [ints[v] for v in values]


def kl_divergence(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """KL(p ‖ q) in nats of the softmax distributions of two logit vectors (p: the reference)."""
    logp = torch.log_softmax(p_logits.double(), dim=-1)
    logq = torch.log_softmax(q_logits.double(), dim=-1)
    value = float((logp.exp() * (logp - logq)).sum())
    return max(value, 0.0) if math.isfinite(value) else math.inf


@dataclass
class KVCache:
    """Per layer the keys (after rotation), the values, both (B, kv heads, S, d_head) in the model's dtype, and the
    positions they were computed at (S,) long; None for a layer not run yet. ``ForwardPass.run(cache=...)`` appends
    the new tokens' keys and values; between runs a caller may keep a subset (``keep``). Tensors are never written
    in place (a run makes new ones), so a shallow ``copy`` is a snapshot to go back to."""

    keys: list[torch.Tensor | None]
    values: list[torch.Tensor | None]
    positions: list[torch.Tensor | None]
    limit: int | None = None
    """``append``'s buffers never hold more entries than this (the model's positions), None: no cap."""
    _buffers: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]] = field(
        default_factory=dict, repr=False, compare=False)

    @classmethod
    def empty(cls, layers: int, limit: int | None = None) -> KVCache:
        return cls([None] * layers, [None] * layers, [None] * layers, limit)

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Add a run's keys and values (B, kv heads, T, d_head) and positions (T,) to one layer; returns, and keeps
        as the layer's, its whole keys, values and positions: the numbers ``torch.cat`` of old and new gives, as
        views of buffers that double when full, so a decoding step copies one token's entries instead of the whole
        cache (``torch.cat`` each step is O(T) a step, O(T²) over a decoding). Written in place only past the end of
        every view handed out: a layer whose tensors are not the buffer's latest view (after ``keep``, ``rewind``
        or an assignment) starts a new buffer, so a tensor once handed out never changes."""
        old_k, old_v, old_pos = self.keys[layer], self.values[layer], self.positions[layer]
        n, t = (0 if old_pos is None else int(old_pos.shape[0])), int(k.shape[-2])
        buf = self._buffers.get(layer)
        if (buf is None or old_k is None or old_v is None or old_pos is None or buf[3] != n
                or old_k.data_ptr() != buf[0].data_ptr() or old_v.data_ptr() != buf[1].data_ptr()
                or old_pos.data_ptr() != buf[2].data_ptr() or n + t > buf[2].shape[0]
                or buf[0].shape[:2] != k.shape[:2] or buf[0].dtype != k.dtype):
            cap = max(2 * (n + t), 16) if self.limit is None else max(min(2 * (n + t), self.limit), n + t)
            bk = k.new_empty((*k.shape[:2], cap, k.shape[3]))
            bv = v.new_empty((*v.shape[:2], cap, v.shape[3]))
            bp = positions.new_empty(cap)
            if n and old_k is not None and old_v is not None and old_pos is not None:
                bk[:, :, :n], bv[:, :, :n], bp[:n] = old_k, old_v, old_pos
            buf = (bk, bv, bp, n)
        bk, bv, bp, _ = buf
        bk[:, :, n:n + t], bv[:, :, n:n + t], bp[n:n + t] = k, v, positions
        self._buffers[layer] = (bk, bv, bp, n + t)
        out = bk[:, :, :n + t], bv[:, :, :n + t], bp[:n + t]
        self.keys[layer], self.values[layer], self.positions[layer] = out
        return out

    def copy(self) -> KVCache:
        return KVCache(list(self.keys), list(self.values), list(self.positions), self.limit)

    def length(self, layer: int = 0) -> int:
        pos = self.positions[layer]
        return 0 if pos is None else int(pos.shape[0])

    def keep(self, layer: int, index: torch.Tensor) -> None:
        """Keep only the cached entries ``index`` (indices into the cached order, or a bool mask) of one layer."""
        k, v, pos = self.keys[layer], self.values[layer], self.positions[layer]
        if k is None or v is None or pos is None:
            return
        self.keys[layer], self.values[layer], self.positions[layer] = k[:, :, index], v[:, :, index], pos[index]

    def evict(self, keep: torch.Tensor) -> Evicted:
        """Keep only the entries where ``keep`` (bool over the cached order, every layer alike) is True, and return
        the others (copies: nothing of the cache's own tensors stays alive through them) for ``rewind``."""
        drop = torch.nonzero(~keep).flatten()
        out = Evicted(drop, tuple(None if k is None else k[:, :, drop] for k in self.keys),
                      tuple(None if v is None else v[:, :, drop] for v in self.values),
                      tuple(None if p is None else p[drop] for p in self.positions))
        for layer in range(len(self.keys)):
            self.keep(layer, keep)
        return out

    def rewind(self, length: int | None, evicted: Evicted | None = None) -> None:
        """Take back one run of new tokens and the eviction before it: the cache as it was, ``length`` entries,
        when the run began. The entries that stayed are the first ``length - len(evicted)`` (a run only appends);
        the evicted ones go back to their places. Without evictions this is a slice (a view, no copy)."""
        if length is None:
            raise ValueError("rewind: no length (a cache built by the step is dropped, not rewound)")
        gone = 0 if evicted is None else int(evicted.index.numel())
        stayed = length - gone
        for layer in range(len(self.keys)):
            k, v, pos = self.keys[layer], self.values[layer], self.positions[layer]
            if k is None or v is None or pos is None:
                continue
            k, v, pos = k[:, :, :stayed], v[:, :, :stayed], pos[:stayed]
            if evicted is not None and gone:
                ek, ev, ep = evicted.keys[layer], evicted.values[layer], evicted.positions[layer]
                assert ek is not None and ev is not None and ep is not None
                back = torch.zeros(length, dtype=torch.bool, device=pos.device)
                back[evicted.index] = True
                k, v = _merge(k, ek, back), _merge(v, ev, back)
                pos = _merge(pos[None, None], ep[None, None], back)[0, 0]
            self.keys[layer], self.values[layer], self.positions[layer] = k, v, pos

    def nbytes(self) -> int:
        """Bytes of the storages its tensors hold (a view counts its whole storage: it keeps it alive)."""
        return _storage_bytes([*self.keys, *self.values, *self.positions])


def _merge(stayed: torch.Tensor, back: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """Entries along dim 2 (B, heads, S, ...): ``back`` at the places ``where`` is True, ``stayed`` at the others,
    each in its order."""
    out = stayed.new_empty((*stayed.shape[:2], where.shape[0], *stayed.shape[3:]))
    out[:, :, where] = back
    out[:, :, ~where] = stayed
    return out


def _storage_bytes(tensors: Any) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if t is None:
            continue
        storage = t.untyped_storage()
        if storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            total += storage.nbytes()
    return total


@dataclass(frozen=True)
class Evicted:
    """What ``KVCache.evict`` dropped, to put back (``KVCache.rewind``): ``index`` (E,) long, where the entries sat
    in the cached order; per layer their keys and values (B, kv heads, E, d_head) and positions (E,), copies. A
    window or sinks policy drops one position a step once the window is full, so this stays the size of one token's
    keys and values, whatever the length."""

    index: torch.Tensor
    keys: tuple[torch.Tensor | None, ...]
    values: tuple[torch.Tensor | None, ...]
    positions: tuple[torch.Tensor | None, ...]

    def nbytes(self) -> int:
        return _storage_bytes([self.index, *self.keys, *self.values, *self.positions])


@dataclass(frozen=True)
class Rewind:
    """How to take one decoding step back on one cache (``KVCache.rewind``): ``length``, its entries before the step
    (None: there was no cache yet, the step built it), and what the step's policy evicted."""

    length: int | None
    evicted: Evicted | None = None

    def nbytes(self) -> int:
        return 0 if self.evicted is None else self.evicted.nbytes()
