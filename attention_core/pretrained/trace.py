"""``Trace``: one text through a model, everything a view needs as numpy arrays, and ``ModelInfo``.

A trace is computed once and then only read: heatmaps, the top next tokens and a head's steps all come from it
without running the model again. ``head_setting`` gives one head's parts as the model has them — q and k *before*
rotation (turned back exactly from the rotated ones the trace keeps, with the model's own cos/sin tables, so a trace
holds one copy of q and k), the positions, rotary base and width, window, soft-cap, scale and K/V group — and
``head_steps`` rebuilds that head through ``attention_steps`` from them, so the Playground's step views show a real
head's rotation and their weights are the model's (to float32 rounding).
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
        """JSON-ready: name, ids, tokens, info and the note (and ``heads_off`` when some were)."""
        out: dict[str, Any] = {"model": self.name, "ids": [int(i) for i in self.ids],
                               "tokens": list(self.tokens), "info": self.info.to_dict(), "note": self.note}
        if self.ablated:
            out["heads_off"] = [list(p) for p in self.ablated]
        return out
