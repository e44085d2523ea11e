"""Why this key: one attention score split into (query source × key source) terms.

The residual stream entering a layer is a sum of what wrote it: the token's embedding, its position embedding (a
family with learned positions), every earlier head's output (``result``, through its slice of W_O), every earlier
MLP's output, and constants (biases). With each norm on the way frozen at the scale (and mean) it had in this run,
every step from the stream to a query or key is linear, so the query at position i and the key at position j are
sums over the same sources, each rotated by its own position on a rotary model, and

    score(i, j) = q_i · k_j = Σ_a Σ_b (query part a) · (key part b) = terms.sum()

exactly (float64; the score before the scale and any soft-cap). The frozen norms: the layer's own ln1 (and the
embeddings' norm, and a post-LN encoder's norms between layers, and a post-attention norm of the families that have
one), and a per-head or per-projection q/k norm (Qwen3, Gemma 3, OLMo-2): each is x ↦ (x − mean x) · w / σ (+ b)
for a LayerNorm, x ↦ x · w / rms for an RMSNorm, with σ and rms taken from the whole input, so a source's part is
its own share of the same linear map. Biases (W_O's, the q/k projections', the norms', BERT's token type) are
the source "bias".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch

from ..sites import Hooks
from .targets import position_index

if TYPE_CHECKING:
    from ..layers import Linear, Norm

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py imports this module, which does not import
it back (no import cycle, not even a type-only one)."""


class QKPair(NamedTuple):
    """One term: its ``value``, the ``query`` and ``key`` source names, and ``text`` in words."""

    value: float
    query: str
    key: str
    text: str


def describe(source: str) -> str:
    """A source's name in words ("3.1" → "head 3.1's output")."""
    if source == "embed":
        return "the token's embedding"
    if source == "pos":
        return "its position embedding"
    if source == "bias":
        return "the biases"
    if source.startswith("mlp "):
        return f"MLP {source[4:]}'s output"
    return f"head {source}'s output"


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class QKTerms:
    """Head ``head`` of ``layer``, query ``query``, key ``key``: ``terms`` (query sources × key sources) float64
    whose sum is ``score`` (q·k before the ``scale``); ``query_sources`` and ``key_sources`` name the rows and
    columns ("embed", "pos", "L.h", "mlp L", "bias"). ``other_key`` set: a ``contrast``'s terms of
    score(key) − score(other_key). ``top(n)``: the largest terms in words."""

    layer: int
    head: int
    query: int
    key: int
    query_sources: tuple[str, ...]
    key_sources: tuple[str, ...]
    terms: np.ndarray
    score: float
    scale: float
    length: int
    other_key: int | None = None
    _key_parts: Callable[[int], np.ndarray] | None = field(default=None, repr=False, compare=False)
    _query_part: np.ndarray | None = field(default=None, repr=False, compare=False)

    def contrast(self, other_key: Any) -> QKTerms:
        """The terms of score(key) − score(other_key) (the same query): what makes this key win over that one."""
        assert self._key_parts is not None and self._query_part is not None
        j = position_index(other_key, self.length)
        diff = self._query_part @ (self._key_parts(self.key) - self._key_parts(j)).T
        return replace(self, terms=diff, score=float(diff.sum()), other_key=j)

    def top(self, n: int = 5) -> list[QKPair]:
        """The ``n`` terms largest in size (either sign), largest first, each with its sentence."""
        flat = np.argsort(-np.abs(self.terms), axis=None, kind="stable")[:max(0, int(n))]
        out = []
        for f in flat:
            a, b = np.unravel_index(int(f), self.terms.shape)
            qs, ks = self.query_sources[a], self.key_sources[b]
            out.append(QKPair(float(self.terms[a, b]), qs, ks,
                              f"key side: {describe(ks)} × query side: {describe(qs)}"))
        return out


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else np.asarray(t.detach().double().cpu().numpy())


def _freeze(norm: Norm, parts: np.ndarray, bias_row: int) -> np.ndarray:
    """``parts`` (S, ..., n), whose sum over sources is the norm's input, through the norm with its scale (and
    mean) frozen at that input's: each source's share of the output; the norm's bias goes to ``bias_row``."""
    total = parts.sum(axis=0)
    w = _np(norm.weight)
    assert w is not None
    if norm.kind == "layer":
        mu = total.mean(axis=-1, keepdims=True)
        sigma = np.sqrt(((total - mu) ** 2).mean(axis=-1, keepdims=True) + norm.eps)
        out = (parts - parts.mean(axis=-1, keepdims=True)) * (w / sigma)
        if norm.bias is not None:
            out[bias_row] += _np(norm.bias)
        return np.asarray(out)
    rms = np.sqrt((total ** 2).mean(axis=-1, keepdims=True) + norm.eps)
    return np.asarray(parts * (((1.0 + w) if norm.kind == "gemma" else w) / rms))


def _projections(model: PretrainedModel, layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(W_Q (d_model, H·d_head), b_Q, W_K (d_model, KV·d_head), b_K) float64 of a layer, whatever the layout."""
    spec, lw = model.spec, model.weights.layers[layer]
    hd, kvd, dh = spec.n_heads * spec.d_head, spec.n_kv_heads * spec.d_head, spec.d_head

    def io(lin: Linear) -> tuple[np.ndarray, np.ndarray]:
        w = _np(lin.weight)
        assert w is not None
        w = w if lin.in_out else w.T
        b = _np(lin.bias)
        return w, (np.zeros(w.shape[1]) if b is None else b)

    if lw.qkv is not None:
        w, b = io(lw.qkv)
        if lw.qkv_layout == "neox":  # per head [q_h | k_h | v_h]
            w4, b3 = w.reshape(w.shape[0], spec.n_heads, 3, dh), b.reshape(spec.n_heads, 3, dh)
            return (w4[:, :, 0].reshape(w.shape[0], hd), b3[:, 0].reshape(hd), w4[:, :, 1].reshape(w.shape[0], hd),
                    b3[:, 1].reshape(hd))
        return w[:, :hd], b[:hd], w[:, hd:hd + kvd], b[hd:hd + kvd]
    assert lw.q is not None and lw.k is not None
    (wq, bq), (wk, bk) = io(lw.q), io(lw.k)
    return wq, bq, wk, bk


def qk_attribution(model: PretrainedModel, text_or_ids: Any, layer: int, head: int, query: Any, key: Any
                   ) -> QKTerms:
    """The score of ``head`` of ``layer`` at (``query``, ``key``) split into source × source terms (see the
    module's docstring); ``ValueError`` for a layer, head or position out of range, before any work."""
    spec = model.spec
    if not (isinstance(layer, (int, np.integer)) and 0 <= layer < spec.n_layers):
        raise ValueError(f"layer {layer!r} out of range: 0 to {spec.n_layers - 1}")
    if not (isinstance(head, (int, np.integer)) and 0 <= head < spec.n_heads):
        raise ValueError(f"head {head!r} out of range: 0 to {spec.n_heads - 1}")
    layer, head = int(layer), int(head)
    ids, _ = model.ids_of(text_or_ids)
    t = len(ids)
    qi, kj = position_index(query, t), position_index(key, t)
    read = [f"{kind}.{li}" for li in range(layer) for kind in ("result", "mlp_out")]
    hooks = Hooks(read=read)
    if layer > 0:  # the sources' values: a pass up to the layer before
        model.forward(ids, hooks=hooks, logits=False, stop_after=layer - 1)
    got = {name: hooks.values[name][0].cpu().numpy() for name in read}
    w = model.weights
    learned = w.pos_embed is not None
    names = ["embed"] + (["pos"] if learned else [])
    for li in range(layer):
        names += [f"{li}.{h}" for h in range(spec.n_heads)] + [f"mlp {li}"]
    names.append("bias")
    row = {n: i for i, n in enumerate(names)}
    bias = row["bias"]
    wq, bq, wk, bk = _projections(model, layer)
    group = spec.n_heads // spec.n_kv_heads
    lw = w.layers[layer]
    dh = spec.d_head

    def stream(p: int) -> np.ndarray:
        """(S, d_model): the sources of the residual stream entering ``layer`` at position p."""
        d = np.zeros((len(names), spec.d_model))
        d[row["embed"]] = np.asarray(_np(w.embed[int(ids[p])])) * float(spec.embed_scale)
        if learned:
            assert w.pos_embed is not None
            d[row["pos"]] = _np(w.pos_embed[p + spec.position_offset])
        if w.token_type is not None:
            d[bias] += _np(w.token_type)
        if w.embed_norm is not None:
            d = _freeze(w.embed_norm, d, bias)
        for li in range(layer):
            lwi = w.layers[li]
            attn = np.zeros_like(d)
            attn[[row[f"{li}.{h}"] for h in range(spec.n_heads)]] = got[f"result.{li}"][:, p].astype(np.float64)
            if lwi.o.bias is not None:
                attn[bias] += _np(lwi.o.bias)
            if lwi.post1 is not None:
                attn = _freeze(lwi.post1, attn, bias)
            d = d + attn
            if spec.norm_place == "after":  # BERT: a norm after each residual add
                assert lwi.ln1 is not None and lwi.ln2 is not None
                d = _freeze(lwi.ln1, d, bias)
                d[row[f"mlp {li}"]] += got[f"mlp_out.{li}"][p]
                d = _freeze(lwi.ln2, d, bias)
            else:
                d[row[f"mlp {li}"]] += got[f"mlp_out.{li}"][p]
        if lw.ln1 is not None and spec.norm_place != "after":
            d = _freeze(lw.ln1, d, bias)
        return d

    def side(p: int, wm: np.ndarray, bm: np.ndarray, norm: Norm | None, heads: int, h: int) -> np.ndarray:
        """(S, d_head): head h's query or key at position p, per source, normed (frozen) and rotated."""
        x = stream(p) @ wm
        x[bias] += bm
        if norm is not None and spec.qk_norm == "proj":
            x = _freeze(norm, x, bias)
        x = x.reshape(len(names), heads, dh)[:, h]
        if norm is not None and spec.qk_norm == "head":
            x = _freeze(norm, x, bias)
        if spec.positions == "rotary":
            dev = model.device
            turned = model.forward_pass._rotate_at(torch.as_tensor(x, device=dev)[:, None],
                                                   torch.tensor([p], device=dev), layer)
            x = turned[:, 0].cpu().numpy()
        return x

    def key_parts(p: int) -> np.ndarray:
        return side(p, wk, bk, lw.k_norm, spec.n_kv_heads, head // group)

    qpart = side(qi, wq, bq, lw.q_norm, spec.n_heads, head)
    terms = qpart @ key_parts(kj).T
    return QKTerms(layer, head, qi, kj, tuple(names), tuple(names), terms, float(terms.sum()),
                   float(spec.scales[layer]), t, None, key_parts, qpart)
