"""How the next token is picked from the logits: greedy, or a draw after temperature, top-k and top-p.

Order as Hugging Face's generate applies them: logits / temperature → keep the k largest (top-k) → keep the smallest
set of most probable tokens whose probabilities sum to at least p (top-p, nucleus) → renormalise → draw.
``temperature == 0`` is greedy: the largest logit, whatever top-k and top-p say (they never remove it). Any
temperature > 0 is drawn from, however small: the logits are shifted by their largest first, so the division never
overflows (a temperature of 1e-320 draws the largest logit, as greedy picks it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Sampling:
    """Checked sampling options (see ``make``)."""

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None

    @classmethod
    def make(cls, temperature: Any = 0.0, top_k: Any = None, top_p: Any = None) -> Sampling:
        """Bad values raise ``ValueError`` naming the option: temperature >= 0, top_k >= 1, top_p in (0, 1]."""
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or not math.isfinite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be a number >= 0 (0 = greedy), got {temperature!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be an integer >= 1 (or None for all tokens), got {top_k!r}")
        if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float))
                                  or not 0 < top_p <= 1):
            raise ValueError(f"top_p must lie in (0, 1] (or None for no cut), got {top_p!r}")
        return cls(float(temperature), top_k, None if top_p is None else float(top_p))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def distribution(self, logits: torch.Tensor) -> torch.Tensor:
        """The probabilities the next token is drawn from (vocab,), float64: one-hot on the argmax when greedy."""
        logits = logits.double()
        if self.greedy:
            out = torch.zeros_like(logits)
            out[int(torch.argmax(logits))] = 1.0
            return out
        # shifted by the largest first (softmax does not change): (logits - max) / T is <= 0, so a tiny T sends the
        # others to -inf (probability 0) instead of overflowing every logit to inf (inf - inf = nan): a temperature
        # like 1e-320 then acts as greedy (ties share the draw) instead of failing
        top = logits.max()
        shifted = logits - top if bool(torch.isfinite(top)) else logits
        return torch.softmax(filter_logits(shifted / self.temperature, self.top_k, self.top_p), dim=-1)

    def pick(self, logits: torch.Tensor, generator: torch.Generator) -> tuple[int, torch.Tensor | None]:
        """(token id, the distribution it was drawn from). Greedy draws nothing (the generator is untouched) and
        returns None for the distribution (one-hot on the id: not built, a decoding step's time is its cost)."""
        if self.greedy:
            return int(torch.argmax(logits)), None
        probs = self.distribution(logits)
        return int(torch.multinomial(probs, 1, generator=generator)), probs


def filter_logits(logits: torch.Tensor, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """Logits with the tokens top-k and top-p remove set to -inf.

    top-k keeps the k largest (ties at the k-th value all kept, as a threshold on the value does). top-p keeps,
    in order of probability, every token whose preceding tokens' probabilities sum to less than p: the smallest
    head of the sorted list that reaches p (the most probable token always stays)."""
    out = logits.clone()
    if top_k is not None and top_k < out.shape[-1]:
        kth = torch.topk(out, top_k).values[-1]
        out[out < kth] = -math.inf
    if top_p is not None and top_p < 1.0:
        probs = torch.softmax(out, dim=-1)
        order = torch.argsort(probs, descending=True, stable=True)
        before = torch.cumsum(probs[order], dim=-1) - probs[order]
        drop = order[before >= top_p]
        out[drop] = -math.inf
    return out


def top_list(probs: torch.Tensor, n: int, display: Any) -> list[tuple[int, str, float]]:
    """The ``n`` most probable (id, display string, probability), zero probabilities left out."""
    values, ids = torch.topk(probs, min(n, probs.shape[-1]))
    keep = [(int(i), float(v)) for v, i in zip(values.tolist(), ids.tolist()) if v > 0]
    names = display([i for i, _ in keep]) if keep else []
    return [(i, name, p) for (i, p), name in zip(keep, names)]
