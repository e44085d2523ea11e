"""The Detect view's two long runs, as plain functions the ``HeadsAnalysis`` hands its runner: every detector from
one probe run (``iter_detectors``, ``run_detectors``: the whole batch at once for a short probe, one sequence and
layer at a time past ``LONG_PROBE`` positions, ``detect_long``) and an ablation scan that reports each head as it
goes (``scan_items``), and the results they deliver (``Detection``, ``ScanResult``). Qt-free; torch only inside the
functions that run a model."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.model_tab.model.detect_long import LONG_PROBE, LongProbe, ProbeProgress, long_probe

KINDS = ("previous-token", "duplicate-token", "induction", "first-token")
"""``attention_core.phenomena.KINDS`` (copied: importing the library loads torch, and views import this module)."""
THRESHOLD = 0.4
BATCH = 4
SEED = 0
SCAN_HOWS = ("zero", "mean")
SCAN_MEASURES = ("repeat", "text")
Head = tuple[int, int]
__all__ = ["KINDS", "Detection", "iter_detectors", "run_detectors", "scan_items"]


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class Detection:
    """Every detector on one probe run of ``model`` with ``off`` switched off. ``scores``: kind → ``HeadScores``;
    ``attentions`` (layers, heads, n, n) and ``tokens``: the first probe sequence; ``masks``: per layer, True = may
    attend (None: no mask); ``repeat``: the probe's losses (``RepeatTrace``); ``clean_repeat``: the same with every
    head on (None when none is off). A long probe (``is_long``) keeps no full map: ``attentions`` is a ``NotKept``
    (reading it raises) and ``first``, the first sequence as a long ``Trace``, gives any ``window`` exactly."""

    model: str
    off: tuple[Head, ...]
    scores: dict[str, Any]
    attentions: np.ndarray
    tokens: list[str]
    masks: tuple[np.ndarray | None, ...]
    repeat: Any
    clean_repeat: Any
    seconds: float = 0.0
    first: Any = None

    @property
    def is_long(self) -> bool:
        return self.first is not None

    @property
    def positions(self) -> int:
        """n: the probe's length in positions (BOS + 2 × seq_len, or 2 × seq_len)."""
        return int(self.repeat.ids.shape[1])

    def window(self, layer: int, head: int, query: int, key: int, size: int) -> np.ndarray:
        """(rows, cols) float32: head ``layer``.``head``'s exact weights of queries query … query + size − 1 on
        keys key … key + size − 1 (cut at the probe's end): read from the maps kept, or computed for those queries
        alone from the first sequence's q and k (``Trace.head_map``)."""
        q1, k1 = min(self.positions, query + size), min(self.positions, key + size)
        if self.first is None:
            return np.asarray(self.attentions[layer, head, query:q1, key:k1])
        return np.asarray(self.first.head_map(layer, head, slice(query, q1))[:, key:k1])

    @property
    def seq_len(self) -> int:
        return int(self.repeat.seq_len)

    @property
    def offset(self) -> int:
        return int(self.repeat.offset)


@dataclass(frozen=True, eq=False)
class ScanResult:
    """An ``AblationScan`` (``scan``) made with ``off`` kept off, ``done`` of ``total`` heads reached."""

    scan: Any
    off: tuple[Head, ...]
    done: int
    total: int
    seconds: float


@dataclass(frozen=True)
class ScanProgress:
    """How far an ablation scan is: ``done`` heads measured of ``total``."""

    done: int
    total: int


@dataclass(frozen=True)
class Failed:
    message: str


def run_detectors(model: Any, off: Iterable[Head] = (), *, seq_len: int | None = None, seed: int = SEED,
                  batch: int = BATCH, clean_repeat: Any = None, long: bool | None = None) -> Detection:
    """One run of the repeated-token probe (``off`` switched off): every detector's scores, the first sequence's
    maps and every position's loss. With no head off the scores equal ``head_scores(model, kind, seq_len=seq_len,
    seed=seed, batch=batch)`` and the losses ``repeated_tokens(model, seq_len, seed, batch=batch)``. ``long``: run
    it as a long probe (True) or whole (False); None: long past ``LONG_PROBE`` positions."""
    items = iter_detectors(model, off, seq_len=seq_len, seed=seed, batch=batch, clean_repeat=clean_repeat, long=long)
    result = [item for item in items if isinstance(item, Detection)]
    return result[-1]


def iter_detectors(model: Any, off: Iterable[Head] = (), *, seq_len: int | None = None, seed: int = SEED,
                   batch: int = BATCH, clean_repeat: Any = None, long: bool | None = None,
                   cancelled: Callable[[], bool] | None = None) -> Iterator[object]:
    """``run_detectors`` as the runner runs it: a long probe yields a ``ProbeProgress`` per layer run (and stops,
    yielding no result, once ``cancelled()``), then the ``Detection``; a short one yields the ``Detection``."""
    from attention_core.phenomena.detect import bos_offset, fit_seq_len

    s, o = fit_seq_len(model, seq_len), bos_offset(model)
    if (o + 2 * s > LONG_PROBE) if long is None else long:
        yield from _long_detection(model, tuple(sorted(off)), s, o, seed, batch, clean_repeat, cancelled)
        return
    yield _short_detection(model, tuple(sorted(off)), s, o, seed, batch, clean_repeat)


def _long_detection(model: Any, off: tuple[Head, ...], s: int, o: int, seed: int, batch: int, clean_repeat: Any,
                    cancelled: Callable[[], bool] | None) -> Iterator[object]:
    from attention_core.phenomena import HeadScores, RepeatTrace
    from attention_core.phenomena.detect import repeated_ids

    t0 = time.perf_counter()
    ids = repeated_ids(model, s, seed, batch)
    for item in long_probe(model, ids, s, o, KINDS, off, clean=bool(off) and clean_repeat is None,
                           cancelled=cancelled):
        if isinstance(item, ProbeProgress):
            yield item
            continue
        assert isinstance(item, LongProbe)
        first = item.first
        scores = {kind: HeadScores(kind, item.scores[kind], ids, s, model=model.name, offset=o) for kind in KINDS}
        clean = clean_repeat if item.clean_losses is None else RepeatTrace(ids, item.clean_losses, s, o)
        yield Detection(model.name, off, scores, first.attentions, list(first.tokens), first.masks,
                        RepeatTrace(ids, item.losses, s, o), clean if off else None, time.perf_counter() - t0,
                        first=first)


def _short_detection(model: Any, off: tuple[Head, ...], s: int, o: int, seed: int, batch: int,
                     clean_repeat: Any) -> Detection:
    import torch

    from attention_core.phenomena import HeadScores, RepeatTrace, repeated_tokens, score_attention
    from attention_core.phenomena.detect import repeated_ids
    from attention_core.pretrained import token_losses

    t0 = time.perf_counter()
    ids = repeated_ids(model, s, seed, batch)
    out = model.forward(ids, ablate={p: "zero" for p in off} or None, record={"weights"})
    att = torch.stack(out.records["weights"], dim=1).cpu().numpy()  # (batch, layers, heads, n, n)
    losses = token_losses(out.logits, torch.as_tensor(ids, device=out.logits.device)).cpu().numpy()
    scores = {kind: HeadScores(kind, score_attention(kind, att, s, o), ids, s, model=model.name, offset=o)
              for kind in KINDS}
    masks = tuple(None if m is None else m.cpu().numpy() for m in model.forward_pass.masks(ids.shape[1]))
    if off and clean_repeat is None:
        clean_repeat = repeated_tokens(model, s, seed, batch=batch)
    return Detection(model.name, off, scores, np.array(att[0]), model.token_strings(ids[0].tolist()), masks,
                     RepeatTrace(ids, losses, s, o), clean_repeat if off else None, time.perf_counter() - t0)


def scan_items(run: Callable[[Callable[[int, int], None]], Any]) -> Iterator[object]:
    """Run ``run(progress)`` (an ``ablation_scan``) on a helper thread and yield a ``ScanProgress`` per head it
    reports, then its result: the runner delivers each as it comes (a callback cannot yield)."""
    q: queue.Queue[tuple[str, Any]] = queue.Queue()

    def target() -> None:
        try:
            q.put(("result", run(lambda done, total: q.put(("progress", ScanProgress(done, total))))))
        except Exception as exc:  # noqa: BLE001 — handed to the runner's thread, which reports it
            q.put(("error", exc))

    thread = threading.Thread(target=target, name="ablation-scan", daemon=True)
    thread.start()
    while True:
        what, item = q.get()
        if what == "progress":
            yield item
            continue
        thread.join()
        if what == "error":
            raise item
        yield item
        return
