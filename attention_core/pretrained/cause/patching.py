"""Activation patching and path patching: which activation, put back from a clean run, restores the answer.

"Denoising" (Heimersheim & Nanda's term): run the *corrupted* text, put in one activation from the *clean* run, and
read the metric logit(target) − logit(foil) at one position. ``restored`` = (value − corrupted) / (clean − corrupted):
1 where that one activation brings the clean answer back, 0 where it does nothing.

A sweep costs far less than one forward pass per cell, for three reasons, all exact:

- batched: a chunk of cells runs as one batch of copies of the corrupted ids, a writer (``sites.Hooks``) putting a
  different clean value into each copy;
- restarted: nothing before layer L depends on a patch in layer L, so each layer's chunk starts there from the
  corrupted run's recorded residual stream (``ForwardPass.run(start_layer=, resid=)``), and computes the logits of
  the metric's position only;
- skipped: a cell whose clean value equals the corrupted one bit for bit (a causal model's positions before the
  first token that differs), or that lies after the metric's position in a causal model, leaves the corrupted run
  as it is: its value is the corrupted metric, no pass run.

Path patching (Wang et al. 2022, "Interpretability in the Wild", appendix B): the senders' clean output reaches
only the receivers' chosen input (q, k or v). Run the corrupted text with every head's z frozen at its corrupted value
except the senders', which get their clean z (and, unless ``through_mlps``, every MLP's output frozen too: only the
direct path through the residual stream is left); read the receivers' q/k/v there; run the corrupted text again
with only those receiver inputs replaced and everything downstream recomputed; measure. The paper lets the MLPs in
between recompute (``through_mlps=True``); the default keeps the direct path only (nothing in between recomputed:
the senders reach the receivers through the residual stream alone, not through an MLP).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..sites import Hooks
from .sweeps import SWEEPS
from .targets import position_index, token_id

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py imports this module, which does not import
it back (no import cycle, not even a type-only one)."""

PATCH_BATCH_BYTES = 256 * 2**20
"""About this many bytes of activations per batched run (the chunk of cells is cut to fit)."""
Progress = Callable[[int, int], Any]
Cancel = Callable[[], bool]


def _same(clean: float, corrupted: float) -> bool:
    return abs(clean - corrupted) <= 1e-6 * max(1.0, abs(clean), abs(corrupted))


def _restored(values: Any, clean: float, corrupted: float) -> Any:
    if _same(clean, corrupted):
        return np.full_like(np.asarray(values, dtype=np.float64), np.nan)
    return (np.asarray(values, dtype=np.float64) - corrupted) / (clean - corrupted)


def _warning(clean: float, corrupted: float) -> str | None:
    if _same(clean, corrupted):
        return (f"the clean and corrupted runs give the same metric ({clean:.6g} and {corrupted:.6g}): the restored "
                "fraction is undefined (NaN); choose texts, target or foil that the model tells apart")
    return None


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class Patching:
    """A sweep's result. ``values`` (shape per ``axes``, float64): the metric with that one cell patched in (NaN
    where a cancelled sweep did not reach, ``completed`` False); ``clean`` and ``corrupted``: the metric of each run
    unpatched; metric = logit(``target``) − logit(``foil``) (or logit(target) alone) at ``position``; ``restored``:
    (values − corrupted) / (clean − corrupted), all NaN with ``warning`` saying why when clean equals corrupted.
    ``feeds`` (k/v sweeps): per key/value head, the query heads that read it. ``tokens``: the corrupted text's."""

    sweep: str
    axes: tuple[str, ...]
    values: np.ndarray
    clean: float
    corrupted: float
    target: int
    foil: int | None
    position: int
    tokens: tuple[str, ...]
    clean_tokens: tuple[str, ...]
    feeds: tuple[tuple[int, ...], ...] = ()
    completed: bool = True
    warning: str | None = None

    @property
    def restored(self) -> np.ndarray:
        return np.asarray(_restored(self.values, self.clean, self.corrupted))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as None)."""
        def clean(a: np.ndarray) -> Any:
            return [None if not np.isfinite(v) else float(v) for v in a] if a.ndim == 1 else [clean(r) for r in a]

        return {"sweep": self.sweep, "axes": list(self.axes), "values": clean(self.values),
                "restored": clean(self.restored), "clean": self.clean, "corrupted": self.corrupted,
                "target": self.target, "foil": self.foil, "position": self.position, "tokens": list(self.tokens),
                "clean_tokens": list(self.clean_tokens), "feeds": [list(f) for f in self.feeds],
                "completed": self.completed, "warning": self.warning}


@dataclass(frozen=True)
class PathPatching:
    """Path patching's result: ``value`` (the metric with the senders' clean output reaching only the receivers'
    inputs), ``clean``, ``corrupted``, ``restored`` (as ``Patching``), the ``senders`` and ``receivers`` as given,
    ``through_mlps`` (whether the MLPs between recomputed), ``warning``."""

    senders: tuple[tuple[int, int], ...]
    receivers: tuple[tuple[int, int, str], ...]
    value: float
    clean: float
    corrupted: float
    through_mlps: bool = False
    warning: str | None = None
    feeds: dict[tuple[int, int, str], tuple[int, ...]] = field(default_factory=dict)

    @property
    def restored(self) -> float:
        return float(_restored(self.value, self.clean, self.corrupted))


class _Setup:
    """The two texts checked (same length), the metric's ids and position, and the metric of a logits batch."""

    def __init__(self, model: PretrainedModel, clean: Any, corrupted: Any, target: Any, foil: Any,
                 position: Any) -> None:
        c_ids, _ = model.ids_of(clean)
        x_ids, _ = model.ids_of(corrupted)
        if len(c_ids) != len(x_ids):
            raise ValueError(f"clean and corrupted must have the same number of tokens: {len(c_ids)} and "
                             f"{len(x_ids)} (patching puts an activation of one position into the same position)")
        self.model = model
        self.target = token_id(model, target)
        self.foil = None if foil is None else token_id(model, foil, "foil")
        self.position = position_index(position, len(x_ids))
        self.clean_ids = torch.as_tensor(c_ids, dtype=torch.long, device=model.device)[None]
        self.ids = torch.as_tensor(x_ids, dtype=torch.long, device=model.device)[None]
        self.rows = slice(self.position, self.position + 1)

    def metric(self, logits: torch.Tensor) -> np.ndarray:
        """(B,) float64 from logits (B, 1, vocab) of the metric's position."""
        row = logits[:, 0].double()
        m = row[:, self.target] - (0.0 if self.foil is None else row[:, self.foil])
        return np.asarray(m.cpu().numpy(), dtype=np.float64)

    def run(self, ids: torch.Tensor, hooks: Hooks | None = None, **kwargs: Any) -> np.ndarray:
        out = self.model.forward(ids, hooks=hooks, logit_positions=self.rows, **kwargs)
        assert out.logits is not None
        return self.metric(out.logits)


def _row_bytes(model: PretrainedModel, t: int) -> int:
    s = model.spec
    return 4 * (3 * s.n_heads * t * t + t * (8 * s.d_model + 3 * s.d_mlp + 4 * s.n_heads * s.d_head))


def _cells(sweep: str, model: PretrainedModel, t: int) -> list[tuple[int, ...]]:
    s = model.spec
    if sweep in ("resid", "attn_out", "mlp_out"):
        return [(p,) for p in range(t)]
    if sweep == "heads_by_position":
        return [(h, p) for h in range(s.n_heads) for p in range(t)]
    return [(h,) for h in range(s.n_kv_heads if sweep in ("k", "v") else s.n_heads)]


def patch(model: PretrainedModel, clean: Any, corrupted: Any, *, target: Any, foil: Any = None, position: Any = -1,
          sweep: str, progress: Progress | None = None, cancel: Cancel | None = None) -> Patching:
    """Activation patching (denoising) over one ``sweep`` (see ``SWEEPS``); ``progress(done, total)`` after each
    batched run, ``cancel()`` checked before each (a cancelled sweep returns what it measured, the rest NaN,
    ``completed`` False). Bad input raises ``ValueError`` before any work."""
    if sweep not in SWEEPS:
        raise ValueError(f"sweep {sweep!r}: choose one of {', '.join(SWEEPS)}")
    su = _Setup(model, clean, corrupted, target, foil, position)
    spec, kind = model.spec, SWEEPS[sweep][0]
    n_layers, t = spec.n_layers, su.ids.shape[1]
    sites = [f"{kind}.{li}" for li in range(n_layers)]
    resid = [f"resid_pre.{li}" for li in range(n_layers)]
    clean_hooks = Hooks(read=sites)
    corrupt_hooks = Hooks(read=sorted(set(sites) | set(resid)))
    clean_metric = float(su.run(su.clean_ids, clean_hooks)[0])
    corrupted_metric = float(su.run(su.ids, corrupt_hooks)[0])
    cells = _cells(sweep, model, t)
    shape = (n_layers, spec.n_heads, t) if sweep == "heads_by_position" else (n_layers, max(c[0] for c in cells) + 1)
    values = np.full(shape, np.nan)
    todo: list[tuple[int, tuple[int, ...]]] = []
    for li in range(n_layers):
        a, b = clean_hooks.values[sites[li]][0], corrupt_hooks.values[sites[li]][0]
        for cell in cells:
            after = spec.causal and cell[-1] > su.position and sweep in ("resid", "attn_out", "mlp_out",
                                                                          "heads_by_position")
            if after or torch.equal(a[cell], b[cell]):
                values[(li,) + cell] = corrupted_metric  # the corrupted run itself
            else:
                todo.append((li, cell))
    chunk = max(1, min(len(todo) or 1, PATCH_BATCH_BYTES // _row_bytes(model, t)))
    total, done = len(cells) * n_layers, len(cells) * n_layers - len(todo)
    if progress is not None:
        progress(done, total)
    i = 0
    while i < len(todo):
        if cancel is not None and cancel():
            return _result(su, sweep, values, clean_metric, corrupted_metric, model, completed=False)
        li = todo[i][0]
        batch = [cell for layer, cell in todo[i:i + chunk] if layer == li]
        i += len(batch)
        n = len(batch)
        start = corrupt_hooks.values[resid[li]].repeat(n, 1, 1)
        source = clean_hooks.values[sites[li]][0]
        rows = torch.arange(n, device=start.device)
        idx = [torch.tensor([c[j] for c in batch], device=start.device) for j in range(len(batch[0]))]
        hooks = None
        if sweep == "resid":
            start[rows, idx[0]] = source[idx[0]].to(start.dtype)
        else:
            def write(x: torch.Tensor, idx: list[torch.Tensor] = idx, source: torch.Tensor = source,
                      rows: torch.Tensor = rows) -> torch.Tensor:
                x[(rows,) + tuple(idx)] = source[tuple(idx)]
                return x

            hooks = Hooks(write={sites[li]: write})
        got = su.run(su.ids.repeat(n, 1), hooks, start_layer=li, resid=start)
        for cell, v in zip(batch, got):
            values[(li,) + cell] = v
        done += n
        if progress is not None:
            progress(done, total)
    return _result(su, sweep, values, clean_metric, corrupted_metric, model, completed=True)


def _result(su: _Setup, sweep: str, values: np.ndarray, clean: float, corrupted: float, model: PretrainedModel,
            completed: bool) -> Patching:
    spec = model.spec
    group = spec.n_heads // spec.n_kv_heads
    feeds = tuple(tuple(range(kv * group, (kv + 1) * group)) for kv in range(spec.n_kv_heads)) \
        if sweep in ("k", "v") else ()
    names = model.token_strings
    return Patching(sweep, SWEEPS[sweep][1], values, clean, corrupted, su.target, su.foil, su.position,
                    tuple(names(su.ids[0].tolist())), tuple(names(su.clean_ids[0].tolist())), feeds, completed,
                    _warning(clean, corrupted))


def _pairs(items: Sequence[Any], n: int, what: str, model: PretrainedModel) -> list[tuple[Any, ...]]:
    spec = model.spec
    out = []
    for item in items:
        try:
            parts = tuple(item)
        except TypeError:
            raise ValueError(f"{what}: expected {'(layer, head)' if n == 2 else '(layer, head, q|k|v)'} tuples, "
                             f"got {item!r}") from None
        if len(parts) != n:
            raise ValueError(f"{what}: {item!r} is not {'(layer, head)' if n == 2 else '(layer, head, q|k|v)'}")
        li, h = int(parts[0]), int(parts[1])
        which = parts[2] if n == 3 else "z"
        if n == 3 and which not in ("q", "k", "v"):
            raise ValueError(f"{what}: {item!r}: the input must be 'q', 'k' or 'v'")
        count = spec.n_kv_heads if which in ("k", "v") else spec.n_heads
        if not (0 <= li < spec.n_layers and 0 <= h < count):
            heads = "key/value heads" if which in ("k", "v") else "heads"
            raise ValueError(f"{what}: no layer {li} head {h} (0-based; {spec.n_layers} layers × {count} {heads})")
        out.append((li, h) if n == 2 else (li, h, which))
    if not out:
        raise ValueError(f"{what}: name at least one")
    return out


def path_patch(model: PretrainedModel, clean: Any, corrupted: Any, *, senders: Sequence[Any],
               receivers: Sequence[Any], target: Any, foil: Any = None, position: Any = -1,
               through_mlps: bool = False) -> PathPatching:
    """The senders' ((layer, head), ...) clean output reaching only the receivers' ((layer, head, "q"|"k"|"v"),
    ...) chosen input; on a grouped-query model a k or v receiver's head counts key/value heads (``feeds`` names the
    query heads it serves). Every receiver needs a sender in an earlier layer (a head's output reaches only later
    layers): ``ValueError`` otherwise, before any work."""
    su = _Setup(model, clean, corrupted, target, foil, position)
    send = _pairs(senders, 2, "senders", model)
    recv = _pairs(receivers, 3, "receivers", model)
    first = min(li for li, _ in send)
    for r in recv:
        if r[0] <= first:
            raise ValueError(f"receivers: {r!r} is in layer {r[0]}, no sender is before it (senders start at "
                             f"layer {first}; a head's output reaches only later layers)")
    spec = model.spec
    last = max(r[0] for r in recv)
    frozen = range(first, last)
    z_sites = [f"z.{li}" for li in frozen]
    mlp_sites = [] if through_mlps else [f"mlp_out.{li}" for li in frozen]
    clean_hooks = Hooks(read=[f"z.{li}" for li in sorted({li for li, _ in send})])
    corrupt_hooks = Hooks(read=z_sites + mlp_sites + [f"resid_pre.{min(r[0] for r in recv)}"])
    clean_metric = float(su.run(su.clean_ids, clean_hooks)[0])
    corrupted_metric = float(su.run(su.ids, corrupt_hooks)[0])
    writes: dict[str, Any] = {}
    for li in frozen:  # every head frozen at its corrupted z, the senders at their clean z
        z = corrupt_hooks.values[f"z.{li}"].clone()
        for sl, h in send:
            if sl == li:
                z[:, h] = clean_hooks.values[f"z.{li}"][:, h]
        writes[f"z.{li}"] = z
    for name in mlp_sites:
        writes[name] = corrupt_hooks.values[name]
    reads = sorted({f"{w}.{li}.{h}" for li, h, w in recv})
    step = Hooks(read=reads, write=writes)
    model.forward(su.ids, hooks=step, logits=False, stop_after=last)
    start = min(r[0] for r in recv)
    final = Hooks(write={name: step.values[name] for name in reads})
    value = float(su.run(su.ids, final, start_layer=start, resid=corrupt_hooks.values[f"resid_pre.{start}"])[0])
    group = spec.n_heads // spec.n_kv_heads
    feeds = {r: (tuple(range(r[1] * group, (r[1] + 1) * group)) if r[2] in ("k", "v") else (r[1],)) for r in recv}
    return PathPatching(tuple(send), tuple(recv), value, clean_metric, corrupted_metric, through_mlps,
                        _warning(clean_metric, corrupted_metric), feeds)
