"""The repeated-token probe at any length, without a T × T map per head (Qt-free; torch inside the functions).

A short probe (``detect_runs``) runs its whole batch at once and keeps every head's full map. Past ``LONG_PROBE``
positions that would not fit (a 24-layer, 14-head model at 4,096 positions: 4 × 336 maps of 16.8 M weights), so a
long probe runs one sequence and one layer at a time (``PretrainedModel.forward(start_layer=, resid=,
stop_after=)``, the restart the ablation scan uses), its attention computed ``ROWS`` queries at a time (the
forward pass's ``overview`` record) and:

- every detector's score from the same chunks: per layer, ``attention_weights`` (the function the forward pass and
  ``Trace.head_map`` use) on ``ROWS`` queries against the keys they may see, and only the cells
  ``score_attention`` reads (key q − 1, key 0, key q − S, key q − S + 1) summed, so the scores equal
  ``score_attention`` on the full maps;
- every position's loss from the last layer's output, ``LOGIT_ROWS`` positions of logits at a time (as
  ``token_losses`` on the whole logits);
- the first sequence's q and k, as a long ``Trace`` (``attentions`` not kept), whose ``head_map(layer, head,
  rows)`` gives any window of any head exactly: what the Detect view's pattern draws.

It yields a ``ProbeProgress`` per layer run (``cancelled()`` is asked between layers: a cancelled run yields no
result) and then a ``LongProbe``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LONG_PROBE = 128
"""A probe longer than this many positions is run long (no full maps); the default probe (BOS + 2 × 50) is short."""
ROWS = 256
"""Queries per chunk while scoring a long probe: (heads, ROWS, T) weights at a time."""
LOGIT_ROWS = 256
"""Positions of logits at a time for a long probe's losses (a 151,936-token vocabulary at 4,096: 2.5 GB whole)."""


@dataclass(frozen=True)
class ProbeProgress:
    """How far a long probe is: ``done`` layer runs of ``total`` (sequences × layers, twice with heads off: the
    losses with every head on too)."""

    done: int
    total: int


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class LongProbe:
    """``scores``: kind → (layers, heads); ``losses`` (batch, n − 1); ``clean_losses`` the same with every head on
    (None when none is off or they were given); ``first``: the first sequence as a long ``Trace`` (q, k, masks)."""

    scores: dict[str, np.ndarray]
    losses: np.ndarray
    clean_losses: np.ndarray | None
    first: Any


def cells(kind: str, r0: int, r1: int, seq_len: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """The (queries, keys) ``score_attention`` reads for ``kind`` among the queries r0 … r1 − 1."""
    if kind in ("previous-token", "first-token"):
        q = np.arange(max(1, r0), r1)
        return q, (q - 1 if kind == "previous-token" else np.zeros_like(q))
    q = np.arange(max(offset + seq_len, r0), r1)
    if kind == "duplicate-token":
        return q, q - seq_len
    if kind == "induction":
        return q, q - seq_len + 1
    raise ValueError(f"unknown detector {kind!r}")


def _layer_sums(q: Any, k: Any, scale: float, softcap: float | None, mask: Any, kinds: Sequence[str],
                seq_len: int, offset: int) -> np.ndarray:
    """(kinds, heads) sums of the weights on each kind's cells, for one layer of one sequence (q (H, T, d), k (H, T,
    d) already repeated for grouped K/V heads), ROWS queries at a time against the keys they may see."""
    import torch

    from attention_core.pretrained.layers import attention_weights

    t = q.shape[1]
    out = np.zeros((len(kinds), q.shape[0]))
    for r0 in range(0, t, ROWS):
        r1 = min(t, r0 + ROWS)
        k1 = t if mask is None else r1  # a causal chunk sees no key after its last query
        w = attention_weights(q[:, r0:r1], k[:, :k1], scale, softcap, None if mask is None else mask[r0:r1, :k1])
        for i, kind in enumerate(kinds):
            qs, ks = cells(kind, r0, r1, seq_len, offset)
            if qs.size:
                out[i] += w[:, torch.as_tensor(qs - r0), torch.as_tensor(ks)].double().sum(dim=-1).cpu().numpy()
    return out


def _losses(model: Any, final: Any, row: np.ndarray) -> np.ndarray:
    """(n − 1,) next-token losses of one sequence from its last layer's output (1, n, d), LOGIT_ROWS at a time."""
    import torch

    from attention_core.pretrained.layers import cpu_threads

    n = len(row)
    target = torch.as_tensor(row, dtype=torch.long, device=final.device)
    out = np.empty(n - 1, dtype=np.float32)
    with torch.no_grad(), cpu_threads(model.threads if model.device.type == "cpu" else None):
        for r0 in range(0, n - 1, LOGIT_ROWS):
            r1 = min(n - 1, r0 + LOGIT_ROWS)
            logp = torch.log_softmax(model.forward_pass.logits(final[:, r0:r1]).float(), dim=-1)[0]
            out[r0:r1] = (-logp.gather(-1, target[r0 + 1:r1 + 1, None])[:, 0]).cpu().numpy()
    return out


def long_probe(model: Any, ids: np.ndarray, seq_len: int, offset: int, kinds: Sequence[str],
               off: Sequence[tuple[int, int]] = (), *, clean: bool = False,
               cancelled: Callable[[], bool] | None = None) -> Iterator[object]:
    """Run the probe ``ids`` (batch, n) with ``off`` switched off (and, with ``clean``, the losses with every head
    on too), one sequence and one layer at a time; yield ``ProbeProgress`` items, then a ``LongProbe``."""
    from attention_core.pretrained import NotKept, Overview, Trace
    from attention_core.pretrained.layers import overview_block

    batch, n = ids.shape
    layers, heads, group = model.info.layers, model.info.heads, model.info.heads // model.info.kv_heads
    spec = model.spec
    masks = model.forward_pass.masks(n)
    ablate = {p: "zero" for p in off} or None
    total, done = batch * layers * (2 if clean else 1), 0
    sums = np.zeros((len(kinds), layers, heads))
    losses = np.empty((batch, n - 1), dtype=np.float32)
    clean_losses = np.empty((batch, n - 1), dtype=np.float32) if clean else None
    kept: dict[str, list[Any]] = {"q": [], "k": [], "pooled_max": [], "pooled_mean": [], "best_key": [],
                                  "best_weight": []}
    for run in (("probe", "clean") if clean else ("probe",)):
        for b in range(batch):
            x = None
            for li in range(layers):
                if cancelled is not None and cancelled():
                    return
                record = {"overview", "final"} | ({"qkv"} if run == "probe" else set())
                out = model.forward(ids[b], ablate=ablate if run == "probe" else None, record=record, logits=False,
                                    start_layer=li, resid=x, stop_after=li)
                r = out.records
                x = r["final"][0]
                if run == "probe":
                    q, k = r["q"][0][0], r["k"][0][0]  # (heads, n, d), (kv_heads, n, d)
                    kf = k.repeat_interleave(group, dim=0) if group > 1 else k
                    sums[:, li] += _layer_sums(q, kf, float(spec.scales[li]), spec.softcap, masks[li], kinds,
                                               seq_len, offset)
                    if b == 0:  # the first sequence's q and k: any window of any head, on demand
                        kept["q"].append(q.cpu().numpy())
                        kept["k"].append(k.cpu().numpy())
                        for name in ("pooled_max", "pooled_mean", "best_key", "best_weight"):
                            kept[name].append(r[name][0][0].cpu().numpy())
                del out, r
                done += 1
                yield ProbeProgress(done, total)
            (losses if run == "probe" else clean_losses)[b] = _losses(model, x, ids[b])  # type: ignore[index]
    counts = {kind: max(1, cells(kind, 0, n, seq_len, offset)[0].size) for kind in kinds}
    scores = {kind: sums[i] / (batch * counts[kind]) for i, kind in enumerate(kinds)}
    arrays: dict[int, np.ndarray] = {}  # layers sharing a mask share its array, as a trace's do
    mask_np = tuple(None if m is None else arrays.setdefault(id(m), m.cpu().numpy()) for m in masks)
    logits: Any = NotKept("logits", (n, spec.vocab_size), "the probe's losses", n)
    weights: Any = NotKept("attentions", (layers, heads, n, n), "head_map(layer, head, rows)", n)
    head_out: Any = NotKept("head outputs", (layers, heads, n, spec.d_head), "nothing: a probe keeps none", n)
    first = Trace(model.name, ids[0].copy(), model.token_strings(ids[0].tolist()), logits, weights, model.info,
                  q=np.stack(kept["q"]), k=np.stack(kept["k"]), v=np.zeros(0, dtype=np.float32), head_outputs=head_out,
                  scales=spec.scales, masks=mask_np, display=model.token_strings,
                  ablated=tuple(sorted(off)), spec=spec,
                  pooled=Overview(overview_block(n), np.stack(kept["pooled_max"]), np.stack(kept["pooled_mean"]),
                                  np.stack(kept["best_key"]), np.stack(kept["best_weight"])))
    yield LongProbe(scores, losses, clean_losses, first)
