"""The causality probe: does anything at or before position t depend on what comes after it?

Replace everything after ``t`` by random values N times and record, per position, the largest change it caused.
With a causal mask every position up to ``t`` cannot see the replaced part, so its change is **exactly 0.0** (a
masked key gets weight 0, and 0 times any value adds nothing); without the mask the earlier positions read the
future and change ("leak").

Two probes, one result type:

- ``probe_model_causality(model, sequence, t)``: a ``TinyTransformer`` (trained or not). The tokens after ``t``
  are replaced by random tokens (each one different from the token it replaces); the change is the largest
  ``|logit|`` difference over the vocabulary, per position.
- ``probe_attention_causality(q, k, v, t, mask=...)``: plain attention (``attention_steps``, numpy). Rows
  ``t+1 ..`` of K and V are replaced by random rows of the same spread; the change is the largest ``|output|``
  difference per query row.

Each trial runs alone with the very shapes of the unchanged run, so an unchanged position takes exactly the same
arithmetic and its change is 0.0 bit for bit, not merely small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..masks import causal_mask
from ..steps import attention_steps

if TYPE_CHECKING:
    from .model import TinyTransformer

MASK_KINDS = ("causal", "none")


@dataclass(frozen=True)
class CausalityProbe:
    """What the probe found. ``changes[i]``: the largest change at position i over all trials (logits for a model,
    output rows for plain attention); positions ``<= position`` are "before", the rest "after"."""

    position: int
    trials: int
    causal: bool
    changes: np.ndarray = field(repr=False)
    kind: str = "model"
    """"model" (logits of a TinyTransformer) or "attention" (output rows of plain attention)."""

    @property
    def max_change_before(self) -> float:
        """The largest change at positions 0..t (exactly 0.0 with a causal mask)."""
        return float(np.max(self.changes[: self.position + 1]))

    @property
    def max_change_after(self) -> float:
        """The largest change at positions after t (0.0 when there is none)."""
        after = self.changes[self.position + 1:]
        return float(np.max(after)) if after.size else 0.0

    @property
    def leaks(self) -> bool:
        """Whether a position up to t changed: it read the future."""
        return self.max_change_before > 0.0

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON: position, the two numbers and whether the mask was causal."""
        return {"position": self.position, "max_change_before": self.max_change_before,
                "max_change_after": self.max_change_after, "causal": self.causal}

    def to_dict(self) -> dict[str, Any]:
        """``to_json`` plus the trials, the kind and the change at every position."""
        return {**self.to_json(), "trials": self.trials, "kind": self.kind,
                "changes": [float(c) for c in self.changes]}


def _check(position: int, length: int, trials: int, what: str) -> None:
    if length < 2:
        raise ValueError(f"the {what} needs at least 2 positions to probe (got {length})")
    if not 0 <= position <= length - 2:
        raise ValueError(f"position must be in 0..{length - 2} (something must come after it), got {position}")
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")


def probe_model_causality(model: TinyTransformer, sequence: Any, position: int, *, causal: bool = True,
                          trials: int = 8, seed: int = 0) -> CausalityProbe:
    """Probe a model on one full reversal sequence (2L+1 tokens; like ``probe_attention`` the model reads all but
    the last). ``position`` indexes what the model reads: 0..2L-2. ``causal``: run with the causal mask (as the
    model was trained: a model trained without it is probed without it). Each trial replaces every token after
    ``position`` by a random token different from it (any of the vocabulary, SEP and PAD included)."""
    import torch

    from .analysis import _device, _mask

    dev = _device(model)
    x = torch.as_tensor(sequence, dtype=torch.long).reshape(1, -1)[:, :-1].to(dev)
    n = x.shape[1]
    _check(position, n, trials, "sequence")
    vocab = model.config.vocab_size
    mask = _mask(n, causal, dev)
    gen = torch.Generator().manual_seed(int(seed))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            base, _ = model(x, mask)
            changes = torch.zeros(n, dtype=torch.float64)
            for _ in range(trials):
                y = x.clone()
                shift = torch.randint(1, vocab, (n - position - 1,), generator=gen).to(dev)
                y[0, position + 1:] = (y[0, position + 1:] + shift) % vocab
                logits, _ = model(y, mask)
                diff = (logits - base).abs().amax(dim=-1)[0].double().cpu()
                changes = torch.maximum(changes, diff)
    finally:
        model.train(was_training)
    return CausalityProbe(int(position), int(trials), bool(causal), changes.numpy(), "model")


def probe_attention_causality(q: Any, k: Any, v: Any, position: int, *, mask: str = "causal",
                              scale: float | None = None, trials: int = 8, seed: int = 0) -> CausalityProbe:
    """Probe plain attention: replace rows ``position+1 ..`` of K and V by random rows (normal, with each
    matrix's own standard deviation) ``trials`` times; per query row, the largest change of the output.
    ``mask``: "causal" (needs as many queries as keys) or "none"."""
    if mask not in MASK_KINDS:
        raise ValueError(f"mask must be one of {', '.join(MASK_KINDS)}, got {mask!r}")
    qa, ka, va = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    lq, lk = qa.shape[-2], ka.shape[-2]
    _check(position, lk, trials, "keys")
    if mask == "causal" and lq != lk:
        raise ValueError(f"a causal mask needs as many queries as keys (got {lq} queries, {lk} keys)")
    m = causal_mask(lk) if mask == "causal" else None
    base = attention_steps(qa, ka, va, mask=m, scale=scale).output
    rng = np.random.default_rng(seed)
    spread_k, spread_v = (float(a.std()) or 1.0 for a in (ka, va))
    changes = np.zeros(lq)
    tail = lk - position - 1
    for _ in range(trials):
        k2, v2 = ka.copy(), va.copy()
        k2[position + 1:] = rng.standard_normal((tail, ka.shape[-1])) * spread_k
        v2[position + 1:] = rng.standard_normal((tail, va.shape[-1])) * spread_v
        out = attention_steps(qa, k2, v2, mask=m, scale=scale).output
        changes = np.maximum(changes, np.abs(out - base).max(axis=-1))
    return CausalityProbe(int(position), int(trials), mask == "causal", changes, "attention")


def probe_preset_causality(name: str, position: int, *, mask: str = "causal", trials: int = 8,
                           seed: int = 0) -> CausalityProbe:
    """``probe_attention_causality`` on a named preset's Q, K, V (scale 1/√d_k)."""
    from ..presets import get_preset

    p = get_preset(name)
    return probe_attention_causality(p.q, p.k, p.v, position, mask=mask, trials=trials, seed=seed)


def probe_checkpoint(path: Any, position: int | None = None, *, trials: int = 8, seed: int = 0,
                     device: str = "cpu") -> CausalityProbe:
    """Load a checkpoint (``load_checkpoint``; ``CheckpointError`` for a missing or foreign file) and probe it on
    its saved probe sequence (else the run's first test sequence), with the mask it was trained with (its training
    config's ``causal``; True when the file does not say). ``position`` defaults to the SEP position L."""
    from .checkpoint import load_checkpoint
    from .tasks import generate_reversal_data, make_reversal_example

    model, meta = load_checkpoint(path, device=device)
    extra = meta.get("extra") or {}
    cfg = extra.get("train_config") or {}
    causal = bool(cfg.get("causal", True))
    seq_len = int(cfg.get("seq_len", (model.config.max_seq_len - 1) // 2))
    vocab = model.config.vocab_size
    probe = extra.get("probe")
    try:
        sequence = make_reversal_example(list(probe)[:seq_len]) if probe else None
        if sequence is not None and (len(sequence) != 2 * seq_len + 1 or int(sequence.max()) >= vocab):
            sequence = None
    except (TypeError, ValueError):
        sequence = None
    if sequence is None:
        test_size = max(1, int(cfg.get("test_size", 500)))
        sequence = generate_reversal_data(test_size, seq_len, vocab, seed=int(cfg.get("seed", 0)) * 2 + 2)[0]
    if len(sequence) - 1 > model.config.max_seq_len:
        raise ValueError(f"the probe sequence ({len(sequence) - 1} positions) is longer than the model reads "
                         f"({model.config.max_seq_len})")
    t = seq_len if position is None else int(position)
    return probe_model_causality(model, sequence, t, causal=causal, trials=trials, seed=seed)
