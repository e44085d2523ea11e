"""What a head is for, by switching it off: loss on a text and on repeated random tokens, with and without it.

``repeated_tokens`` is the in-context-learning probe: on random tokens the first copy is unpredictable (loss near
log(vocab)), and a model with induction heads predicts the second copy from the first (loss near 0). Knocking out
an induction head raises the second copy's loss; that is the causal check the attention pattern alone cannot give.

Ablation replaces a head's output (weights · v) before the output projection: ``"zero"`` with zeros, ``"mean"``
with the head's mean output over every position of the inputs being measured (the text and the repeated batch,
pooled), which removes what the head says about *this* token while keeping its average contribution. Layers and
heads count from 0.

A scan reuses the unablated run: the residual stream entering layer l is recorded once, and the heads of layer l are
measured by running layers l … L−1 only, and only the positions whose loss counts get logits. The heads of one layer
run together as one batch (copy i has head i off and the layer's other heads given their clean outputs, which they
would compute anyway: their inputs are the clean run's), so each weight matrix, the unembedding's included, is read
once per layer instead of once per head.

``also_off``: heads kept off in the baseline and in every ablated run. Heads are often redundant (this app's induction
recipe grows four induction heads in layer 2, each enough alone), so knocking out one shows little; with its twins
kept off, the one left carries the circuit and its ablation shows what it does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .detect import bos_offset, fit_seq_len, repeated_ids

if TYPE_CHECKING:
    from ..pretrained import PretrainedModel


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class RepeatTrace:
    """``losses`` (batch, n − 1): entry t = −log p(token t+1 | tokens ≤ t) on [BOS] x x; ``first_half_loss`` over
    the first copy's predicted tokens, ``second_half_loss`` over the second copy's S tokens (its first token
    included, as in the TransformerLens tutorial: nothing announces where the repeat starts)."""

    ids: np.ndarray
    losses: np.ndarray
    seq_len: int
    offset: int

    @property
    def first_half_loss(self) -> float:
        o, s = self.offset, self.seq_len
        return float(self.losses[:, max(o - 1, 0):o + s - 1].mean())

    @property
    def second_half_loss(self) -> float:
        o, s = self.offset, self.seq_len
        return float(self.losses[:, o + s - 1:].mean())

    def to_json(self) -> dict[str, Any]:
        return {"seq_len": self.seq_len, "first_half_loss": self.first_half_loss,
                "second_half_loss": self.second_half_loss, "ids": self.ids.tolist()}


def repeated_tokens(model: PretrainedModel, seq_len: int | None = None, seed: int = 0, *, batch: int = 4,
                    ablate: dict[tuple[int, int], Any] | None = None) -> RepeatTrace:
    """Per-position next-token loss on ``batch`` seeded random sequences repeated twice (see ``detect``)."""
    s = fit_seq_len(model, seq_len)
    ids = repeated_ids(model, s, seed, batch)
    return RepeatTrace(ids, model.losses(ids, ablate=ablate), s, bos_offset(model))


@dataclass(frozen=True)
class AblationResult:
    """Losses (nats, mean per predicted token) with the heads on and off: on the text and on the second copy of
    the repeated random tokens."""

    heads: tuple[tuple[int, int], ...]
    how: str
    text_loss: float
    text_loss_ablated: float
    repeat_loss: float
    repeat_loss_ablated: float

    @property
    def text_change(self) -> float:
        return self.text_loss_ablated - self.text_loss

    @property
    def repeat_change(self) -> float:
        return self.repeat_loss_ablated - self.repeat_loss

    def to_json(self) -> dict[str, Any]:
        return {"heads": [list(h) for h in self.heads], "how": self.how, "text_loss": self.text_loss,
                "text_loss_ablated": self.text_loss_ablated, "text_change": self.text_change,
                "repeat_second_half_loss": self.repeat_loss,
                "repeat_second_half_loss_ablated": self.repeat_loss_ablated, "repeat_change": self.repeat_change}


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class AblationScan:
    """Every head ablated alone: ``text_change`` and ``repeat_change`` (layers, heads), loss off − on (NaN where a
    cancelled scan did not reach); baselines ``text_loss``, ``repeat_loss``; ``completed``."""

    how: str
    text_loss: float
    repeat_loss: float
    text_change: np.ndarray
    repeat_change: np.ndarray
    completed: bool

    def to_json(self) -> dict[str, Any]:
        def clean(a: np.ndarray) -> list[Any]:
            return [[None if not np.isfinite(v) else round(float(v), 6) for v in row] for row in a]

        return {"how": self.how, "text_loss": self.text_loss, "repeat_second_half_loss": self.repeat_loss,
                "text_change": clean(self.text_change), "repeat_change": clean(self.repeat_change),
                "completed": self.completed}


class _Probe:
    """One input whose loss is measured over a range of predicted positions, its clean run kept for restarts."""

    def __init__(self, model: PretrainedModel, ids: np.ndarray, first_target: int, mean: bool,
                 base: dict[tuple[int, int], Any]) -> None:
        self.model = model
        self.base = base
        self.ids = torch.as_tensor(ids, dtype=torch.long, device=model.device)
        if self.ids.dim() == 1:
            self.ids = self.ids[None]
        n = self.ids.shape[1]
        self.positions = slice(first_target - 1, n - 1)
        self.targets = self.ids[:, first_target:]
        out = model.forward(self.ids, ablate=base, record={"resid", "head_out"}, logit_positions=self.positions)
        self.resid = out.records["resid"]
        self.head_out = out.records["head_out"]  # (B, heads, T, d_head) per layer: what a batched scan keeps on
        self.head_sum = (torch.stack([h.sum(dim=(0, 2)) for h in self.head_out])
                         if mean else None)  # (layers, heads, d_head)
        self.count = self.ids.shape[0] * n
        assert out.logits is not None
        self.loss = self.loss_of(out.logits)

    def loss_of(self, logits: torch.Tensor) -> float:
        logp = torch.log_softmax(logits, dim=-1)
        return float(-logp.gather(-1, self.targets[..., None]).mean())

    def ablated(self, ablate: dict[tuple[int, int], Any]) -> float:
        """Loss with ``ablate``'s heads off as well as the baseline's (restarting at the first ablated layer)."""
        start = min(layer for layer, _ in ablate)
        out = self.model.forward(self.ids, ablate={**self.base, **ablate}, start_layer=start,
                                 resid=self.resid[start], logit_positions=self.positions)
        assert out.logits is not None
        return self.loss_of(out.logits)


    def layer_changes(self, layer: int, plan: dict[int, Any]) -> dict[int, float]:
        """Loss change with each head of ``plan`` (head → "zero" or a mean vector) of ``layer`` off alone, one
        batched run from the layer: copy i of the input has head i off; every other scanned head of the layer keeps
        its clean output (its inputs are the clean run's, so that is what it computes)."""
        heads = sorted(plan)
        n, b = len(heads), self.ids.shape[0]
        clean = self.head_out[layer]
        ablate: dict[tuple[int, int], Any] = dict(self.base)
        for i, h in enumerate(heads):
            value = clean[:, h].repeat(n, 1, 1)  # (n·B, T, d_head)
            how = plan[h]
            value[i * b:(i + 1) * b] = 0.0 if isinstance(how, str) else torch.as_tensor(np.asarray(how))
            ablate[(layer, h)] = value
        out = self.model.forward(self.ids.repeat(n, 1), ablate=ablate, start_layer=layer,
                                 resid=self.resid[layer].repeat(n, 1, 1), logit_positions=self.positions)
        assert out.logits is not None
        return {h: self.loss_of(out.logits[i * b:(i + 1) * b]) - self.loss for i, h in enumerate(heads)}


def _heads(model: PretrainedModel, heads: Sequence[tuple[int, int]], what: str) -> list[tuple[int, int]]:
    out = []
    for pair in heads:
        li, h = (int(x) for x in pair)
        if not (0 <= li < model.spec.n_layers and 0 <= h < model.spec.n_heads):
            raise ValueError(f"{what}: no layer {li} head {h} (0-based; {model.spec.n_layers} layers × "
                             f"{model.spec.n_heads} heads)")
        out.append((li, h))
    return out


def _setup(model: PretrainedModel, text_or_ids: Any, how: str, seq_len: int | None, seed: int, batch: int,
           also_off: list[tuple[int, int]], truncate: bool = False) -> tuple[_Probe, _Probe, np.ndarray | None]:
    if how not in ("zero", "mean"):
        raise ValueError(f"how must be 'zero' or 'mean', got {how!r}")
    ids, _ = model.ids_of(text_or_ids, truncate=bool(truncate))  # too long: refused, naming truncate=True
    if len(ids) < 2:
        raise ValueError(f"{model.name}: the text needs at least 2 tokens for a next-token loss")
    s = fit_seq_len(model, seq_len)
    rep = repeated_ids(model, s, seed, batch)
    mean = how == "mean"
    base = {pair: "zero" for pair in also_off}
    text = _Probe(model, ids, 1, mean, base)
    repeat = _Probe(model, rep, bos_offset(model) + s, mean, base)
    means = None
    if mean:
        assert text.head_sum is not None and repeat.head_sum is not None
        means = ((text.head_sum + repeat.head_sum) / (text.count + repeat.count)).cpu().numpy()
    return text, repeat, means


def _plan(heads: Sequence[tuple[int, int]], means: np.ndarray | None) -> dict[tuple[int, int], Any]:
    return {(int(li), int(h)): ("zero" if means is None else means[int(li), int(h)]) for li, h in heads}


def ablate(model: PretrainedModel, text_or_ids: Any, heads: Sequence[tuple[int, int]], how: str = "zero", *,
           seq_len: int | None = None, seed: int = 0, batch: int = 4,
           also_off: Sequence[tuple[int, int]] = (), truncate: bool = False) -> AblationResult:
    """Loss on the text and on the repeated tokens' second copy with ``heads`` (0-based (layer, head)) off. A text
    longer than the model's positions is refused, or cut to its first ones with ``truncate=True`` (as ``trace``)."""
    heads = _heads(model, heads, "ablate")
    if not heads:
        raise ValueError("ablate: name at least one (layer, head)")
    text, repeat, means = _setup(model, text_or_ids, how, seq_len, seed, batch, _heads(model, also_off, "also_off"),
                                 truncate)
    plan = _plan(heads, means)
    return AblationResult(tuple(heads), how, text.loss, text.ablated(plan), repeat.loss, repeat.ablated(plan))


def ablation_scan(model: PretrainedModel, text_or_ids: Any, how: str = "zero", *, seq_len: int | None = None,
                  seed: int = 0, batch: int = 1, progress: Callable[[int, int], Any] | None = None,
                  cancel: Callable[[], bool] | None = None, also_off: Sequence[tuple[int, int]] = (),
                  truncate: bool = False) -> AblationScan:
    """Ablate each head alone; ``progress(done, total)`` after each, ``cancel()`` checked before each (a cancelled
    scan returns what it measured, the rest NaN, ``completed`` False). Heads in ``also_off`` stay off throughout
    and are not scanned (NaN). ``truncate`` as in ``ablate``."""
    layers, heads = model.spec.n_layers, model.spec.n_heads
    off = _heads(model, also_off, "also_off")
    text, repeat, means = _setup(model, text_or_ids, how, seq_len, seed, batch, off, truncate)
    text_change = np.full((layers, heads), np.nan)
    repeat_change = np.full((layers, heads), np.nan)
    total, done = layers * heads, 0
    for li in range(layers):
        changes: tuple[dict[int, float], dict[int, float]] | None = None
        for h in range(heads):
            if cancel is not None and cancel():
                return AblationScan(how, text.loss, repeat.loss, text_change, repeat_change, False)
            if (li, h) in off:
                done += 1
                continue
            if changes is None:  # the layer's heads in one batched run per probe
                plan = {hh: p for (_, hh), p in _plan([(li, hh) for hh in range(heads) if (li, hh) not in off],
                                                      means).items()}
                changes = (text.layer_changes(li, plan), repeat.layer_changes(li, plan))
            text_change[li, h], repeat_change[li, h] = changes[0][h], changes[1][h]
            done += 1
            if progress is not None:
                progress(done, total)
    return AblationScan(how, text.loss, repeat.loss, text_change, repeat_change, True)
