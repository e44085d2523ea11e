"""Attention knockout: block chosen query → key cells before the softmax and see what the prediction does.

A cell is blocked as a mask blocks it: its score is −∞ before the softmax, so the query's weight goes to its other
keys (the row still sums to 1), in the chosen layers only (every head of a layer, or chosen (layer, head) pairs).
The pass runs one layer at a time from the first knocked layer (``ForwardPass.run``'s ``mask`` is AND-ed into
every layer of a run, so each run is one layer with that layer's mask, (heads, T, T), broadcast over the batch).
Geva et al. 2023 ("Dissecting Recall of Factual Associations") used this to find where information moves; here it
shows that a cell a map paints bright can often be blocked with no change to the next token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .targets import position_index

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py imports this module, which does not import
it back (no import cycle, not even a type-only one)."""

Top = list[tuple[str, int, float]]


def _top(model: PretrainedModel, probs: np.ndarray, k: int) -> Top:
    best = np.argsort(-probs, kind="stable")[:k]
    names = model.token_strings([int(i) for i in best])
    return [(names[j], int(i), float(probs[i])) for j, i in enumerate(best)]


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class Knockout:
    """``edges`` ((query, key), ...) blocked in ``heads`` ((layer, head), ...); at ``position``: the next-token
    distribution ``before`` and ``after`` (float64, (vocab,)), their ``top_before`` / ``top_after`` ((token, id,
    probability), best first) and ``kl`` = KL(before ‖ after) in nats (0: nothing moved)."""

    edges: tuple[tuple[int, int], ...]
    heads: tuple[tuple[int, int], ...]
    position: int
    before: np.ndarray
    after: np.ndarray
    top_before: Top
    top_after: Top
    kl: float

    def moved(self, model: PretrainedModel, k: int = 5) -> Top:
        """The ``k`` tokens whose probability changed most, as (token, id, after − before), largest change first."""
        change = self.after - self.before
        best = np.argsort(-np.abs(change), kind="stable")[:k]
        names = model.token_strings([int(i) for i in best])
        return [(names[j], int(i), float(change[i])) for j, i in enumerate(best)]


def _heads(model: PretrainedModel, layers: Any) -> list[tuple[int, int]]:
    spec = model.spec
    if layers is None:
        return [(li, h) for li in range(spec.n_layers) for h in range(spec.n_heads)]
    out: list[tuple[int, int]] = []
    for item in layers:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            pairs = [(int(item), h) for h in range(spec.n_heads)]
        else:
            try:
                li, h = (int(x) for x in item)
            except (TypeError, ValueError):
                raise ValueError(f"layers: {item!r} is neither a layer nor a (layer, head) pair") from None
            pairs = [(li, h)]
        for li, h in pairs:
            if not (0 <= li < spec.n_layers and 0 <= h < spec.n_heads):
                raise ValueError(f"layers: no layer {li} head {h} (0-based; {spec.n_layers} layers × "
                                 f"{spec.n_heads} heads)")
        out += [p for p in pairs if p not in out]
    if not out:
        raise ValueError("layers: name at least one layer or (layer, head)")
    return out


def knockout(model: PretrainedModel, text_or_ids: Any, edges: Sequence[Any], *, layers: Any = None,
             position: Any = -1, top_k: int = 10) -> Knockout:
    """Block ``edges`` ((query, key) positions) in ``layers`` (None: every layer; else layers and/or (layer, head)
    pairs) and compare the distribution at ``position`` (default the last) before and after. ``ValueError``
    before any work for a cell out of range, a key the query cannot see anyway (after it in a causal model, outside
    a window), or a query left with no key at all in some layer."""
    ids, _ = model.ids_of(text_or_ids)
    t = len(ids)
    p = position_index(position, t)
    heads = _heads(model, layers)
    cells: list[tuple[int, int]] = []
    for e in edges:
        try:
            qi, kj = (int(x) for x in e)
        except (TypeError, ValueError):
            raise ValueError(f"edges: {e!r} is not a (query, key) pair of positions") from None
        if not (0 <= qi < t and 0 <= kj < t):
            raise ValueError(f"edges: ({qi}, {kj}) is outside the text's {t} positions (0 to {t - 1})")
        if (qi, kj) not in cells:
            cells.append((qi, kj))
    if not cells:
        raise ValueError("edges: name at least one (query, key) cell")
    fp = model.forward_pass
    base = fp.masks(t)
    blocked = torch.zeros(t, t, dtype=torch.bool, device=model.device)
    blocked[[c[0] for c in cells], [c[1] for c in cells]] = True
    masks: dict[int, torch.Tensor] = {}
    for li in sorted({li for li, _ in heads}):
        own = base[li]
        for qi, kj in cells:
            if own is not None and not bool(own[qi, kj]):
                raise ValueError(f"edges: in layer {li} query {qi} cannot see key {kj} anyway (the model's mask: "
                                 "causal or windowed), so there is nothing to block")
        m = torch.ones(model.spec.n_heads, t, t, dtype=torch.bool, device=model.device)
        for _, h in (pair for pair in heads if pair[0] == li):
            m[h] &= ~blocked
        left = m if own is None else m & own
        empty = (~left.any(dim=-1)).nonzero()
        if empty.numel():
            h, qi = (int(x) for x in empty[0])
            raise ValueError(f"edges: query {qi} would have no key left in layer {li} head {h} (a softmax over "
                             "nothing); keep at least one of its keys")
        masks[li] = m
    rows = slice(p, p + 1)
    run = model.forward(ids, record={"resid"}, logit_positions=rows)
    before = run.logits
    first, last = min(masks), model.spec.n_layers - 1
    x = run.records["resid"][first]
    for li in range(first, last + 1):  # one layer at a time from the first knocked one: each with its own mask
        out = model.forward(ids, start_layer=li, stop_after=li, resid=x, mask=masks.get(li),
                            record=() if li == last else {"final"}, logits=li == last,
                            logit_positions=rows if li == last else None)
        x = out.records["final"][0] if li < last else x
    after = out.logits
    assert before is not None and after is not None
    lp_b = torch.log_softmax(before[0, 0].double(), dim=-1)
    lp_a = torch.log_softmax(after[0, 0].double(), dim=-1)
    kl = float((lp_b.exp() * (lp_b - lp_a)).sum())
    pb, pa = lp_b.exp().cpu().numpy(), lp_a.exp().cpu().numpy()
    return Knockout(tuple(cells), tuple(heads), p, pb, pa, _top(model, pb, top_k), _top(model, pa, top_k), kl)
