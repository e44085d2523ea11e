"""``Trace``: one text through a model, everything a view needs as numpy arrays, and ``ModelInfo``.

A trace is computed once and then only read: heatmaps, the top next tokens and a head's five steps all come from it
without running the model again. ``head_steps`` rebuilds one head's attention through ``attention_steps`` from the
q, k, v the model really computed, with the model's own scale and mask, so the Playground's step views can show a
real head and their weights are the model's (to float32 rounding).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..steps import AttentionSteps, attention_steps


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

    @cached_property
    def scores(self) -> np.ndarray:
        """(layers, heads, T, T) float32 raw scores q·kᵀ (what step ① shows), before scale and mask."""
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
        z = self.logits.astype(np.float64)
        z = z - z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return np.asarray(e / e.sum(axis=-1, keepdims=True))

    def top_next(self, k: int = 5) -> list[list[tuple[str, int, float]]]:
        """Per position, the ``k`` likeliest next tokens as (display string, id, probability), best first."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        probs = self.probabilities
        k = min(k, probs.shape[-1])
        # the stable argsort's first k, without sorting the whole vocabulary (a full argsort of 60 × 50k took
        # ~0.2 s of the GUI thread per trace): every id at least as likely as the k-th largest, in id order, then a
        # stable sort of those few by probability; ties fall as in ``np.argsort(-probs, kind="stable")[:, :k]``
        kth = -np.partition(-probs, k - 1, axis=-1)[:, k - 1]
        out = []
        for t in range(probs.shape[0]):
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

    def head_steps(self, layer: int, head: int) -> AttentionSteps:
        """That head's five steps from its real q, k, v, with the model's scale (GPT-Neo: 1.0) and mask."""
        layer = _check_index("layer", layer, self.info.layers)
        head = _check_index("head", head, self.info.heads)
        kv = self.kv_head(head)
        return attention_steps(self.q[layer, head], self.k[layer, kv], self.v[layer, kv], mask=self.masks[layer],
                               scale=self.scales[layer])

    def summary(self) -> dict[str, Any]:
        """JSON-ready: name, ids, tokens, info and the note (and ``heads_off`` when some were)."""
        out: dict[str, Any] = {"model": self.name, "ids": [int(i) for i in self.ids],
                               "tokens": list(self.tokens), "info": self.info.to_dict(), "note": self.note}
        if self.ablated:
            out["heads_off"] = [list(p) for p in self.ablated]
        return out
