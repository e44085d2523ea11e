"""The Detect view's two long runs, as plain functions the ``HeadsAnalysis`` hands its runner: every detector from
one probe run (``run_detectors``) and an ablation scan that reports each head as it goes (``scan_items``), and the
results they deliver (``Detection``, ``ScanResult``). Qt-free; torch only inside the functions that run a model."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = ("previous-token", "duplicate-token", "induction", "first-token")
"""``attention_core.phenomena.KINDS`` (copied: importing the library loads torch, and views import this module)."""
THRESHOLD = 0.4
BATCH = 4
SEED = 0
SCAN_HOWS = ("zero", "mean")
SCAN_MEASURES = ("repeat", "text")
Head = tuple[int, int]


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class Detection:
    """Every detector on one probe run of ``model`` with ``off`` switched off. ``scores``: kind → ``HeadScores``;
    ``attentions`` (layers, heads, n, n) and ``tokens``: the first probe sequence; ``masks``: per layer, True = may
    attend (None: no mask); ``repeat``: the probe's losses (``RepeatTrace``); ``clean_repeat``: the same with every
    head on (None when none is off)."""

    model: str
    off: tuple[Head, ...]
    scores: dict[str, Any]
    attentions: np.ndarray
    tokens: list[str]
    masks: tuple[np.ndarray | None, ...]
    repeat: Any
    clean_repeat: Any
    seconds: float = 0.0

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
                  batch: int = BATCH, clean_repeat: Any = None) -> Detection:
    """One forward pass on the repeated-token probe (``off`` switched off): every detector's scores, the first
    sequence's maps and every position's loss. With no head off the scores equal ``head_scores(model, kind,
    seed=seed, batch=batch)`` and the losses ``repeated_tokens(model, seed=seed, batch=batch)``."""
    import torch

    from attention_core.phenomena import HeadScores, RepeatTrace, repeated_tokens, score_attention
    from attention_core.phenomena.detect import bos_offset, fit_seq_len, repeated_ids
    from attention_core.pretrained import token_losses

    t0 = time.perf_counter()
    off = tuple(sorted(off))
    s, o = fit_seq_len(model, seq_len), bos_offset(model)
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
