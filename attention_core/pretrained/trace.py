"""``Trace``: one text through a model, everything a view needs as numpy arrays, and ``ModelInfo``.

A trace is computed once and then only read: heatmaps, the top next tokens and a head's steps all come from it
without running the model again. ``head_setting`` gives one head's parts as the model has them — q and k *before*
rotation (turned back exactly from the rotated ones the trace keeps, with the model's own cos/sin tables, so a trace
holds one copy of q and k), the positions, rotary base and width, window, soft-cap, scale and K/V group — and
``head_steps`` rebuilds that head through ``attention_steps`` from them, so the Playground's step views show a real
head's rotation and their weights are the model's (to float32 rounding).

Long texts (more than ``LONG_TRACE_TOKENS``): every head's full T × T map would not fit (a 24-layer, 14-head model at
4,096 tokens: 22 GB), so a long trace keeps what the views need small — ``overview`` (each head's map block-pooled
to at most 128 × 128, max and mean, and each query's largest weight) — and ``head_map(layer, head, rows)`` computes a
head's exact weights on demand from the q and k it keeps (the model's scale, soft-cap, mask and window), equal to the
full computation. Its ``attentions``, ``scores``, ``head_outputs``, ``logits`` and ``probabilities`` are not kept:
reading them raises ``LongTraceError`` saying what to use instead (``is_long`` tells the two apart; ``top_next``
works on both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..steps import AttentionSteps, attention_steps
from .memory import size_text

LONG_TRACE_TOKENS = 1024
"""A text longer than this is traced long (``Trace.is_long``): no full maps kept, ``overview`` and ``head_map``."""
TOP_KEPT = 20
"""A long trace keeps each position's TOP_KEPT likeliest tokens (with their log-probabilities), not its logits."""


class LongTraceError(ValueError):
    """Something a long trace does not keep was read; the message says what to use instead."""


class NotKept:
    """Stands in for an array a long trace does not keep (``attentions``, ``logits``): it has the full array's
    ``shape``, and any reading of its values raises ``LongTraceError`` naming what to use instead."""

    def __init__(self, what: str, shape: tuple[int, ...], instead: str, tokens: int) -> None:
        self.what, self.shape, self.instead, self.tokens = what, shape, instead, tokens
        self.ndim = len(shape)

    def message(self) -> str:
        size = int(np.prod(self.shape, dtype=np.int64)) * 4
        return (f"this trace is {self.tokens:,} tokens long: "
                f"its {self.what} {self.shape} ({size_text(size)}) are not kept; use {self.instead}")

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise LongTraceError(self.message())

    def __getitem__(self, key: Any) -> Any:
        raise LongTraceError(self.message())

    def __len__(self) -> int:
        return int(self.shape[0])

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"{name}: {self.message()}")

    def __repr__(self) -> str:
        return f"NotKept({self.what}, shape={self.shape})"


@dataclass(frozen=True, eq=False)
class Overview:
    """Every head's map reduced (float32): ``max`` and ``mean`` (layers, heads, P, P), block ``block`` × ``block``
    of the T × T map each (the last block of a side may be shorter; P = ceil(T / block)); ``best_key`` (layers,
    heads, T) int32 and ``best_weight``: each query's largest weight and its key. The mosaic draws ``max`` (a sharp
    head stays visible when pooled), the hover reads ``best_*``."""

    block: int
    max: np.ndarray
    mean: np.ndarray
    best_key: np.ndarray
    best_weight: np.ndarray

    @classmethod
    def of(cls, attentions: np.ndarray) -> Overview:
        """The overview of full maps (layers, heads, T, T): what a long trace records while it runs."""
        import torch

        from .layers import overview_block

        a = torch.as_tensor(np.asarray(attentions, dtype=np.float32))
        t = a.shape[-1]
        block = overview_block(t)
        side = -(-t // block)
        pad = side * block - t
        tiles = torch.nn.functional.pad(a, (0, pad, 0, pad)).reshape(*a.shape[:2], side, block, side, block)
        counts = torch.full((side,), float(block))
        counts[-1] = t - (side - 1) * block
        top = a.max(dim=-1)
        return cls(block, tiles.amax(dim=(3, 5)).numpy(),
                   (tiles.sum(dim=(3, 5)) / (counts[:, None] * counts[None, :])).numpy(),
                   top.indices.to(torch.int32).numpy(), top.values.numpy())

    @property
    def nbytes(self) -> int:
        return int(self.max.nbytes + self.mean.nbytes + self.best_key.nbytes + self.best_weight.nbytes)


@dataclass(frozen=True)
class ModelInfo:
    """A loaded model's shape and size. ``bytes``: the weights in memory (a tied unembedding counted once)."""

    family: str
    model_type: str
    layers: int
    heads: int
    kv_heads: int
    d_model: int
    d_head: int
    vocab: int
    parameters: int
    max_positions: int
    dtype: str
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _unrotate(q: np.ndarray, k: np.ndarray, theta: float, scaling: dict[str, Any], dims: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """q and k (T, d) as they were before the model rotated them: each pair turned back by the angle the model
    turned it, with the model's float32 cos/sin tables (``layers.rope_tables``), in float64."""
    import torch

    from .layers import rope_inv_freq, rope_tables

    cos_t, sin_t = rope_tables(q.shape[0], rope_inv_freq(dims, theta, scaling), torch.float32, "cpu")
    cos, sin = cos_t.double().numpy(), sin_t.double().numpy()
    half = dims // 2

    def back(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        rot = x[:, :dims]
        turned = np.concatenate((rot[:, half:], -rot[:, :half]), axis=-1)  # rotate-half turned the other way
        out = x.copy()
        out[:, :dims] = rot * cos + turned * sin
        return out

    return back(q), back(k)


def _check_index(name: str, value: int, count: int) -> int:
    if not isinstance(value, (int, np.integer)) or not 0 <= int(value) < count:
        raise ValueError(f"{name} {value!r} out of range: 0 to {count - 1}")
    return int(value)


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class Trace:
    """``ids`` (T,), ``tokens`` (display strings, see ``tokenizer``), ``logits`` (T, vocab) float32, ``attentions``
    (layers, heads, T, T) float32 (row = query, column = key), ``info``, ``note`` (e.g. that the text was cut).

    Per layer and head, as the model computed them (float32): ``q`` (layers, heads, T, d_head), ``k`` and ``v``
    (layers, kv_heads, T, d_head; query head h reads key/value head h // (heads / kv_heads)), ``head_outputs``
    (weights · v); ``scores`` (the raw q·kᵀ before the scale, (layers, heads, T, T)) is computed from q and k on
    first use, which keeps a long trace's memory to one (T, T) array per head. ``ablated``: the (layer, head) pairs
    whose outputs were switched off in this run (``PretrainedModel.trace(ablate=...)``), sorted; their own weights
    are still computed, the layers after them see the model without them. Layers and heads count from 0 here.
    """

    name: str
    ids: np.ndarray
    tokens: list[str]
    logits: np.ndarray
    attentions: np.ndarray
    info: ModelInfo
    note: str | None = None
    q: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    k: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    v: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    head_outputs: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    scales: tuple[float, ...] = ()
    masks: tuple[np.ndarray | None, ...] = field(default=(), repr=False)
    display: Callable[[Sequence[int]], list[str]] | None = field(default=None, repr=False, compare=False)
    ablated: tuple[tuple[int, int], ...] = ()
    prediction: str = "next"
    """What row t of ``logits`` predicts: "next" (the token after t: a decoder) or "masked" (the token at t, which
    ``[MASK]``/``<mask>`` hides: BERT, RoBERTa, DistilBERT); ``masked_positions`` are the positions holding it."""
    masked_positions: tuple[int, ...] = ()
    spec: Any = field(default=None, repr=False, compare=False)  # the model's ``ArchSpec`` (rotary, windows, caps)
    pooled: Overview | None = field(default=None, repr=False)  # a long trace's overview, recorded as it ran
    top_kept: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    """A long trace's (ids (T, TOP_KEPT), log-probabilities (T, TOP_KEPT) float32), best first, for ``top_next``."""
    o_weight: Callable[[int], np.ndarray] | None = field(default=None, repr=False, compare=False)
    """layer → W_O (heads, d_head, d_model): the model's output projection, read when ``value_norms`` needs it."""

    @cached_property
    def value_norms(self) -> np.ndarray:
        """(layers, heads, T, T) float32 ‖α_ij · v_j · W_O^h‖: what key j moves into head h's output at query i
        (``cause.importance.value_norms``); a long trace raises ``LongTraceError``."""
        from .cause.importance import value_norms

        return value_norms(self.attentions, self.v, self.o_weight, self.info.heads, self.info.kv_heads)

    def rollout(self) -> np.ndarray:
        """(layers, T, T) float32 attention rollout (Abnar & Zuidema 2020; ``cause.importance.rollout``): [l, i, j]
        how much of token j reaches position i after layer l; ``[-1]`` is the whole model's."""
        from .cause.importance import rollout

        return rollout(self.attentions)

    @property
    def is_long(self) -> bool:
        """True when the full maps are not kept (a text longer than ``LONG_TRACE_TOKENS``): read ``overview`` and
        ``head_map``; ``attentions`` and ``logits`` raise ``LongTraceError``."""
        return isinstance(self.attentions, NotKept)

    @cached_property
    def overview(self) -> Overview:
        """Every head's map pooled to at most 128 × 128, and each query's best key (see ``Overview``): recorded by
        a long trace, computed from ``attentions`` (once) for a short one."""
        return self.pooled if self.pooled is not None else Overview.of(self.attentions)

    def head_map(self, layer: int, head: int, rows: slice | None = None) -> np.ndarray:
        """One head's exact softmax weights (T, T) float32 — or only the queries ``rows`` (a slice) — as the model
        computed them: read from ``attentions`` when kept, else computed from the trace's q and k (after rotary)
        with the layer's scale, soft-cap and mask (causal, window), one row block at a time."""
        layer = _check_index("layer", layer, self.info.layers)
        head = _check_index("head", head, self.info.heads)
        r = slice(None) if rows is None else rows
        if not self.is_long:
            return np.asarray(self.attentions[layer, head, r])
        import torch

        from .layers import attention_weights

        start, stop, _ = r.indices(len(self))
        mask = self.masks[layer]
        k0, k1 = 0, len(self)
        if mask is not None and stop > start:  # only the keys these rows may see (causal: none after the last)
            seen = np.flatnonzero(mask[start:stop].any(axis=0))
            k0, k1 = (int(seen[0]), int(seen[-1]) + 1) if seen.size else (0, len(self))
        q = torch.as_tensor(self.q[layer, head, start:stop])
        k = torch.as_tensor(self.k[layer, self.kv_head(head), k0:k1])
        m = None if mask is None else torch.as_tensor(mask[start:stop, k0:k1])
        softcap = None if self.spec is None else self.spec.softcap
        out = np.zeros((max(0, stop - start), len(self)), dtype=np.float32)
        out[:, k0:k1] = attention_weights(q, k, float(self.scales[layer]), softcap, m).numpy()
        return out

    @property
    def kept_bytes(self) -> int:
        """The bytes this trace holds in arrays (maps or overview, q, k, v, head outputs, logits or top tokens,
        masks counted once each): what the status reports."""
        arrays = [a for a in (self.ids, self.q, self.k, self.v, self.head_outputs, self.attentions, self.logits)
                  if isinstance(a, np.ndarray)]
        arrays += list(self.top_kept or ())
        seen = {id(m): m for m in self.masks if m is not None}
        total = sum(int(a.nbytes) for a in arrays) + sum(int(m.nbytes) for m in seen.values())
        return total + (self.pooled.nbytes if self.pooled is not None else 0)

    @cached_property
    def scores(self) -> np.ndarray:
        """(layers, heads, T, T) float32 raw scores q·kᵀ (what step ① shows), before scale and mask."""
        if self.is_long:
            raise LongTraceError(NotKept("scores", (self.info.layers, self.info.heads, len(self), len(self)),
                                         "head_steps(layer, head) or head_setting for one head", len(self)).message())
        group = self.info.heads // self.info.kv_heads
        k = np.repeat(self.k, group, axis=1) if group > 1 else self.k
        return np.asarray(self.q @ np.swapaxes(k, -1, -2), dtype=np.float32)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def _repr_html_(self) -> str:  # Jupyter draws the layer × head grid (attention_core.notebook)
        from ..notebook import html_block, trace_svg

        return html_block(trace_svg(self))

    @property
    def probabilities(self) -> np.ndarray:
        """(T, vocab) float64 softmax of the logits: row t is the model's distribution for the token after t."""
        if self.is_long:
            raise LongTraceError(NotKept("probabilities", tuple(self.logits.shape),
                                         f"top_next(k) (k <= {TOP_KEPT})", len(self)).message())
        z = self.logits.astype(np.float64)
        z = z - z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return np.asarray(e / e.sum(axis=-1, keepdims=True))

    def top_next(self, k: int = 5, positions: Sequence[int] | None = None) -> list[list[tuple[str, int, float]]]:
        """Per position (or one of ``positions``) the ``k`` likeliest tokens (display string, id, probability), best
        first: a decoder's (``prediction`` "next") the token *after* it, an encoder's ("masked") the token *at* it."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if self.top_kept is not None:
            if k > self.top_kept[0].shape[1]:
                raise LongTraceError(f"this trace is {len(self):,} tokens long: it keeps each position's "
                                     f"{self.top_kept[0].shape[1]} likeliest tokens, not {k}")
            ids_kept, logp = self.top_kept
            out_kept = []
            for t in range(len(self)) if positions is None else positions:
                names = self.decoded_tokens(ids_kept[t, :k].tolist())
                out_kept.append([(names[j], int(ids_kept[t, j]), float(np.exp(logp[t, j]))) for j in range(k)])
            return out_kept
        probs = self.probabilities
        k = min(k, probs.shape[-1])
        # the stable argsort's first k, without sorting the whole vocabulary (a full argsort of 60 × 50k took
        # ~0.2 s of the GUI thread per trace): every id at least as likely as the k-th largest, in id order, then a
        # stable sort of those few by probability; ties fall as in ``np.argsort(-probs, kind="stable")[:, :k]``
        kth = -np.partition(-probs, k - 1, axis=-1)[:, k - 1]
        out = []
        for t in range(probs.shape[0]) if positions is None else positions:
            candidates = np.flatnonzero(probs[t] >= kth[t])
            best = candidates[np.argsort(-probs[t, candidates], kind="stable")][:k]
            ids = [int(i) for i in best]
            names = self.decoded_tokens(ids)
            out.append([(names[j], ids[j], float(probs[t, ids[j]])) for j in range(k)])
        return out

    def decoded_tokens(self, ids: Sequence[int]) -> list[str]:
        """Display strings of any ids, by the model's tokenizer (``<id>`` without one)."""
        return self.display(ids) if self.display is not None else [f"<{int(i)}>" for i in ids]

    def kv_head(self, head: int) -> int:
        """The key/value head a query head reads (grouped-query attention shares one among several)."""
        return int(head) // (self.info.heads // self.info.kv_heads)

    def mask(self, layer: int) -> np.ndarray | None:
        """(T, T) bool, True = may attend (causal; within the window on a local / sliding layer); None = no mask."""
        return self.masks[_check_index("layer", layer, self.info.layers)]

    def masked_predictions(self, k: int = 5) -> dict[int, list[tuple[str, int, float]]]:
        """An encoder's guesses for each masked position: position → its ``k`` likeliest tokens (as ``top_next``);
        empty for a decoder or a text without a mask token."""
        if self.prediction != "masked" or not self.masked_positions:
            return {}
        top = self.top_next(k)
        return {p: top[p] for p in self.masked_positions}

    def head_setting(self, layer: int, head: int) -> dict[str, Any]:
        """One head's parts as the model has them, for ``attention_steps`` (and the Playground): ``q`` (T, d_head)
        and ``k`` *before* rotation, ``v``, ``positions`` (T,), ``rotary_base`` and ``rotary_dims`` (None when the
        layer has no rotary or the head is given already rotated, ``note`` says why), ``window`` (None or the keys
        a query sees, its own included), ``softcap`` (None or c), ``scale``, ``causal``, ``kv_head`` (the K/V head
        it reads), ``kv_heads``, ``heads``, ``note``."""
        layer = _check_index("layer", layer, self.info.layers)
        head = _check_index("head", head, self.info.heads)
        kv = self.kv_head(head)
        q, k = self.q[layer, head], self.k[layer, kv]
        spec = self.spec
        base: float | None = None
        dims: int | None = None
        note = ""
        if spec is None:
            note = "no architecture recorded with this trace: q and k as the attention used them"
        elif spec.positions == "rotary" and spec.rotary_style != "half":
            note = ("this app's rotary layout turns neighbouring pairs (2i, 2i+1), not the rotate-half pairs the "
                    "rotate step shows: q and k are given already rotated")
        elif spec.positions == "rotary":
            rope = spec.rope_of(layer)
            if rope is None:
                note = f"layer {layer} has no rotary positions (NoPE): q and k carry no position"
            else:
                theta, scaling = rope
                kind = scaling.get("rope_type", "default")
                if kind in ("default", "dynamic"):
                    q, k = _unrotate(q, k, theta, scaling, spec.rotary_dim)
                    base, dims = theta, spec.rotary_dim
                    if kind == "dynamic":
                        note = "dynamic rope equals the plain base within the trained length"
                else:
                    note = (f"{kind} rope scaling (factor {scaling.get('factor')}) changes the frequencies in a "
                            "way a plain base cannot express: q and k are given already rotated")
        elif spec.positions == "learned":
            note = "positions are learned embeddings added before the first layer: q and k are not rotated"
        return {"q": q, "k": k, "v": self.v[layer, kv], "positions": np.arange(len(self)), "rotary_base": base,
                "rotary_dims": dims, "window": None if spec is None else spec.windows[layer],
                "softcap": None if spec is None else spec.softcap, "scale": float(self.scales[layer]),
                "causal": self.masks[layer] is not None, "kv_head": kv, "kv_heads": self.info.kv_heads,
                "heads": self.info.heads, "note": note}

    def head_steps(self, layer: int, head: int) -> AttentionSteps:
        """That head's steps through ``attention_steps`` from ``head_setting``: its q and k rotated there (when
        the model's rotary is a plain base), the model's scale (GPT-Neo: 1.0), soft-cap and mask (causal, window)."""
        s = self.head_setting(layer, head)
        rotary = s["rotary_base"] is not None
        return attention_steps(s["q"], s["k"], s["v"], mask=self.masks[layer], scale=s["scale"],
                               positions=s["positions"] if rotary else None, rotary_base=s["rotary_base"],
                               rotary_dims=s["rotary_dims"], softcap=s["softcap"])

    def summary(self) -> dict[str, Any]:
        """JSON-ready: name, ids, tokens, info, note, ``prediction`` (and ``heads_off`` when some were)."""
        out: dict[str, Any] = {"model": self.name, "ids": [int(i) for i in self.ids], "tokens": list(self.tokens),
                               "info": self.info.to_dict(), "note": self.note, "prediction": self.prediction}
        if self.ablated:
            out["heads_off"] = [list(p) for p in self.ablated]
        if self.is_long:
            out["long"] = {"tokens": len(self), "kept_bytes": self.kept_bytes, "overview_block": self.overview.block}
        return out
