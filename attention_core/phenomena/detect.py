"""Head detectors: how much each head attends where a known mechanism would, on random tokens repeated twice.

The probe is Olsson et al.'s ("In-context learning and induction heads", 2022): S random tokens x, then x again,
after a BOS token when the model's config has a ``bos_token_id`` the model can embed (``probe_bos``: one outside the
vocabulary, as in a config copied from a larger model, is skipped and the probe starts without it). With o = 1 (BOS)
or 0, the first copy sits at o … o+S−1 and the second at o+S … o+2S−1; query i of the second copy holds the same
token as i − S. Per head, the
score is the mean attention weight on the mechanism's key, over the queries that have one, over the batch:

- ``previous-token``: key i − 1, every query i ≥ 1 (TransformerLens' previous-token pattern).
- ``duplicate-token``: key i − S (the earlier occurrence of the same token), second-copy queries.
- ``induction``: key i − S + 1 (the token that followed the earlier occurrence): the attention diagonal at offset
  1 − S, second-copy queries (Olsson et al.; TransformerLens' induction score).
- ``first-token``: key 0, every query i ≥ 1: the "attention sink" share.

A head that does exactly that scores 1.0. Where this differs from TransformerLens: its ``detect_head`` divides the
weight on the pattern by the weight on the whole matrix (every query, including those with no target, so an exact
head scores below 1 unless told to exclude rows) and runs on one given text, and its induction-score tutorial
averages the whole offset diagonal, which also takes in two first-copy queries (the ones whose key is the BOS or
the first token). Random tokens are drawn without replacement from the non-special tokens, so "the earlier
occurrence" is one position (with a 50k vocabulary the difference from independent draws is negligible; this app's
own models need it, their vocabularies being ~14 tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..pretrained import PretrainedModel

KINDS = ("previous-token", "duplicate-token", "induction", "first-token")
THRESHOLD = 0.4
DEFAULT_SEQ_LEN = 50


def probe_bos(model: PretrainedModel) -> int | None:
    """The BOS id the probe starts with: the config's ``bos_token_id`` if it lies in the model's vocabulary, else
    None (an id the embedding has no row for would crash the forward pass; the text traces fine without one)."""
    bos = model.spec.bos_token_id
    return int(bos) if bos is not None and 0 <= bos < model.spec.vocab_size else None


def bos_offset(model: PretrainedModel) -> int:
    return 1 if probe_bos(model) is not None else 0


def seq_len_room(model: PretrainedModel) -> int:
    """The largest S the repeated probe fits in this model (``fit_seq_len``): BOS + 2S within its usable positions,
    S distinct tokens within its vocabulary. A caller that names S otherwise (a CLI flag) checks against it."""
    from ..pretrained.config import OWN_FAMILY

    usable = model.spec.max_positions - (1 if model.spec.family == OWN_FAMILY else 0)
    return min((usable - bos_offset(model)) // 2, len(candidate_tokens(model)))


def fit_seq_len(model: PretrainedModel, seq_len: int | None) -> int:
    """S for the repeated probe: the given one (refused if it does not fit), else 50 cut to what fits the model's
    positions (BOS + 2S) and its vocabulary (S distinct tokens).

    This app's models read one token fewer than their ``max_seq_len`` in training (the last token of an example is
    only a target), so their last position embedding is untrained and the probe leaves it out: an induction model
    (L = 6, 12 positions) gets S = 5, a period it was trained on (periods L/2 … L)."""
    room = seq_len_room(model)
    if seq_len is None:
        seq_len = min(DEFAULT_SEQ_LEN, room)
    elif not isinstance(seq_len, (int, np.integer)) or not 2 <= seq_len <= room:
        raise ValueError(f"seq_len {seq_len!r} does not fit {model.name}: 2 to {room} (BOS + 2 × seq_len tokens "
                         f"within {model.spec.max_positions} positions, seq_len distinct tokens)")
    if seq_len < 2:
        raise ValueError(f"{model.name} is too small for the repeated-token probe (room for {room} tokens)")
    return int(seq_len)


def candidate_tokens(model: PretrainedModel) -> np.ndarray:
    """Ids the probe may draw: the tokenizer's and the embedding's common range, special tokens removed."""
    size = min(model.spec.vocab_size, int(model.tokenizer.size))
    keep = np.ones(size, dtype=bool)
    special = [i for i in model.tokenizer.special_ids if 0 <= i < size]
    keep[special] = False
    bos = probe_bos(model)
    if bos is not None and bos < size:
        keep[bos] = False
    return np.flatnonzero(keep)


def repeated_ids(model: PretrainedModel, seq_len: int, seed: int, batch: int) -> np.ndarray:
    """(batch, o + 2·seq_len) int64: [BOS] x x per row, x drawn without replacement (seeded)."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    rng = np.random.default_rng(seed)
    pool = candidate_tokens(model)
    rows = []
    for _ in range(batch):
        x = rng.choice(pool, size=seq_len, replace=False)
        bos = probe_bos(model)
        head = [] if bos is None else [bos]
        rows.append(np.concatenate([np.asarray(head, dtype=np.int64), x, x]).astype(np.int64))
    return np.stack(rows)


def score_attention(kind: str, attentions: Any, seq_len: int, offset: int) -> np.ndarray:
    """(layers, heads) scores of ``kind`` from attention weights (layers, heads, n, n) or (batch, layers, heads,
    n, n) on repeated sequences (``offset`` = 1 with BOS, else 0; n = offset + 2·seq_len). See the module doc."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: choose one of {', '.join(KINDS)}")
    a = np.asarray(attentions, dtype=np.float64)
    if a.ndim == 4:
        a = a[None]
    n = a.shape[-1]
    if a.ndim != 5 or a.shape[-2] != n or n != offset + 2 * seq_len:
        raise ValueError(f"attentions of shape {a.shape} do not fit {offset} + 2 × {seq_len} positions")
    second = np.arange(offset + seq_len, n)
    if kind == "previous-token":
        q = np.arange(1, n)
        k = q - 1
    elif kind == "first-token":
        q = np.arange(1, n)
        k = np.zeros_like(q)
    elif kind == "duplicate-token":
        q, k = second, second - seq_len
    else:
        q, k = second, second - seq_len + 1
    return np.asarray(a[..., q, k].mean(axis=(0, -1)))


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class HeadScores:
    """``scores`` (layers, heads), 0-based, of ``kind`` on ``ids`` (the probe sequences); ``threshold`` 0.4."""

    kind: str
    scores: np.ndarray
    ids: np.ndarray
    seq_len: int
    threshold: float = THRESHOLD
    model: str = ""
    offset: int = 0
    attentions: np.ndarray | None = field(default=None, repr=False)

    def heads_above(self, threshold: float | None = None) -> list[tuple[int, int]]:
        """(layer, head) pairs scoring above the threshold, best first."""
        t = self.threshold if threshold is None else threshold
        layers, heads = np.nonzero(self.scores > t)
        pairs = [(int(li), int(h)) for li, h in zip(layers, heads)]
        return sorted(pairs, key=lambda p: -float(self.scores[p]))

    def best(self) -> tuple[int, int]:
        li, h = np.unravel_index(int(np.argmax(self.scores)), self.scores.shape)
        return int(li), int(h)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model, "seq_len": self.seq_len, "threshold": self.threshold,
                "scores": np.round(self.scores, 6).tolist(), "ids": self.ids.tolist(),
                "heads_above": [list(p) for p in self.heads_above()]}


def probe_attentions(model: PretrainedModel, ids: np.ndarray) -> np.ndarray:
    """(batch, layers, heads, n, n) float32 attention weights of our forward pass (no logits computed)."""
    out = model.forward(ids, record={"weights"}, logits=False)
    import torch

    return torch.stack(out.records["weights"], dim=1).cpu().numpy()


def head_scores(model: PretrainedModel, kind: str, *, seq_len: int | None = None, seed: int = 0, batch: int = 4,
                keep_attentions: bool = False) -> HeadScores:
    """Score every head of ``model`` for ``kind`` on ``batch`` seeded repeated random sequences."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: choose one of {', '.join(KINDS)}")
    s = fit_seq_len(model, seq_len)
    ids = repeated_ids(model, s, seed, batch)
    att = probe_attentions(model, ids)
    offset = bos_offset(model)
    return HeadScores(kind, score_attention(kind, att, s, offset), ids, s, model=model.name, offset=offset,
                      attentions=att if keep_attentions else None)


def all_head_scores(model: PretrainedModel, *, seq_len: int | None = None, seed: int = 0, batch: int = 4
                    ) -> dict[str, HeadScores]:
    """Every kind from one run (they read the same attention): kind → HeadScores."""
    s = fit_seq_len(model, seq_len)
    ids = repeated_ids(model, s, seed, batch)
    att = probe_attentions(model, ids)
    offset = bos_offset(model)
    return {kind: HeadScores(kind, score_attention(kind, att, s, offset), ids, s, model=model.name, offset=offset)
            for kind in KINDS}
