"""Measuring a reversal model: teacher-forced and greedy accuracy, and what each head looks at.

Data layout (see ``tasks``): ``seq = [x_0 .. x_{L-1}, SEP, x_{L-1} .. x_0]``. Under next-token training the
model reads ``seq[:-1]`` and position ``t`` predicts ``seq[t+1]``; so the query at position ``L + p``
*predicts* the p-th reversed token, which is ``x_{L-1-p}``, the key at position ``L-1-p``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from ..masks import causal_mask
from .model import TinyTransformer


def _mask(length: int, causal: bool, device: torch.device) -> torch.Tensor | None:
    return torch.as_tensor(causal_mask(length), device=device) if causal else None


def _device(model: TinyTransformer) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def teacher_forced_predictions(model: TinyTransformer, data: torch.Tensor, seq_len: int,
                               causal: bool = True) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """(predictions (N, L), logits for the reversed half (N, L, V), attention per layer) with the true
    prefix fed in (teacher forcing)."""
    dev = _device(model)
    x = data[:, :-1].to(dev)
    logits, weights = model(x, _mask(x.shape[1], causal, dev))
    rev = logits[:, seq_len:, :]
    return rev.argmax(dim=-1), rev, weights


@torch.no_grad()
def reversal_accuracy(model: TinyTransformer, data: torch.Tensor, seq_len: int, causal: bool = True) -> float:
    """Per-token teacher-forced accuracy on the reversed half, a fraction in [0, 1]."""
    if data.shape[0] == 0:
        return 0.0
    preds, _, _ = teacher_forced_predictions(model, data, seq_len, causal)
    target = data[:, seq_len + 1:].to(preds.device)
    return float((preds == target).float().mean())


@torch.no_grad()
def greedy_generate(model: TinyTransformer, prompts: torch.Tensor, steps: int, causal: bool = True) -> torch.Tensor:
    """Autoregressive greedy generation: from ``prompts`` (N, P), append the argmax token ``steps`` times;
    returns the generated tokens (N, steps)."""
    dev = _device(model)
    seq = prompts.to(dev)
    for _ in range(steps):
        logits, _ = model(seq, _mask(seq.shape[1], causal, dev))
        seq = torch.cat([seq, logits[:, -1, :].argmax(dim=-1, keepdim=True)], dim=1)
    return seq[:, prompts.shape[1]:]


@torch.no_grad()
def greedy_reverse(model: TinyTransformer, inputs: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """Autoregressive greedy generation: feed ``inputs + SEP``, append the argmax token L times.

    inputs (N, L) -> generated (N, L). Without a causal mask the model still only sees the prefix generated
    so far: that is exactly how a model trained without the mask fails at generation.
    """
    from .vocab import SEP

    n, length = inputs.shape
    sep = torch.full((n, 1), SEP, dtype=torch.long, device=inputs.device)
    return greedy_generate(model, torch.cat([inputs, sep], dim=1), length, causal)


@torch.no_grad()
def sequence_accuracy(model: TinyTransformer, data: torch.Tensor, seq_len: int, causal: bool = True) -> float:
    """Fraction of sequences that greedy generation reverses exactly, in [0, 1]."""
    if data.shape[0] == 0:
        return 0.0
    generated = greedy_reverse(model, data[:, :seq_len], causal)
    target = data[:, seq_len + 1:].to(generated.device)
    return float((generated == target).all(dim=1).float().mean())


@torch.no_grad()
def head_reversal_scores(model: TinyTransformer, data: torch.Tensor, seq_len: int,
                         alignment: Literal["predict", "lesson"] = "predict",
                         causal: bool = True) -> np.ndarray:
    """(layers, heads) in [0, 1]: how often a head's argmax key is the mirrored input position.

    Over every given sequence and p = 0..seq_len-1, the score counts the cases where the head's
    highest-weight key for query position ``q(p)`` is ``seq_len-1-p``:

    - ``alignment="predict"`` (default): ``q(p) = seq_len + p``, the query that *predicts* the p-th reversed
      token under next-token training (it sits on SEP for p = 0). A copying head attends here.
    - ``alignment="lesson"``: ``q(p) = seq_len + 1 + p`` as in lesson 2.3's ``analyze_attention_heads``; that
      query already holds reversed token p and predicts token p+1, so a trained copying head scores near 0
      (the lesson's check is off by one). Queries past the input are skipped, as in the lesson.
    """
    if data.shape[0] == 0:
        raise ValueError("head_reversal_scores: data is empty")
    if alignment not in ("predict", "lesson"):
        raise ValueError(f"alignment must be 'predict' or 'lesson', got {alignment!r}")
    _, _, weights = teacher_forced_predictions(model, data, seq_len, causal)
    return head_scores_from_weights(weights, seq_len, alignment)


def head_scores_from_weights(weights: list[torch.Tensor], seq_len: int,
                             alignment: Literal["predict", "lesson"] = "predict") -> np.ndarray:
    """``head_reversal_scores`` from teacher-forced attention weights already computed (per layer (N, H, T, T)),
    so an evaluation that runs the forward pass anyway does not run it again."""
    if alignment not in ("predict", "lesson"):
        raise ValueError(f"alignment must be 'predict' or 'lesson', got {alignment!r}")
    offset = 0 if alignment == "predict" else 1
    length = weights[0].shape[-1]
    p = np.arange(seq_len)
    queries = seq_len + offset + p
    keep = queries < length
    queries, expected = queries[keep], (seq_len - 1 - p)[keep]
    scores = np.zeros((len(weights), weights[0].shape[1]))
    total = weights[0].shape[0] * seq_len  # the lesson divides by every p, counted or not
    for li, w in enumerate(weights):
        argmax = w[:, :, queries, :].argmax(dim=-1).cpu().numpy()  # (N, H, P)
        hits = argmax == expected[None, None, :]
        scores[li] = hits.sum(axis=(0, 2)) / total
    return scores


def pattern_scores_from_weights(weights: list[torch.Tensor], pattern: torch.Tensor) -> np.ndarray:
    """(layers, heads) in [0, 1]: over the rows where ``pattern`` (N, T, T) bool names an ideal key, the fraction
    whose highest-weight key (per layer (N, H, T, T) weights) is one of them."""
    rows = pattern.any(dim=-1)  # (N, T): the scored queries
    count = int(rows.sum())
    if count == 0:
        raise ValueError("the pattern scores no query")
    scores = np.zeros((len(weights), weights[0].shape[1]))
    pat = pattern.to(weights[0].device)
    for li, w in enumerate(weights):
        argmax = w.argmax(dim=-1, keepdim=True)  # (N, H, T, 1)
        hit = torch.gather(pat[:, None].expand(-1, w.shape[1], -1, -1), -1, argmax)[..., 0]  # (N, H, T)
        scores[li] = (hit & rows[:, None].to(hit.device)).sum(dim=(0, 2)).cpu().numpy() / count
    return scores


def head_entropy_from_weights(weights: list[torch.Tensor]) -> np.ndarray:
    """(layers, heads): each head's attention entropy in nats, averaged over sequences and query rows
    (-sum w log w per row; a row on one key is 0)."""
    out = np.zeros((len(weights), weights[0].shape[1]))
    for li, w in enumerate(weights):
        w64 = w.double()
        ent = -(w64 * torch.log(w64.clamp_min(1e-300))).sum(dim=-1)  # (N, H, T)
        out[li] = ent.mean(dim=(0, 2)).cpu().numpy()
    return out


@torch.no_grad()
def head_task_scores(model: TinyTransformer, task: str, data: torch.Tensor, seq_len: int,
                     causal: bool = True) -> np.ndarray:
    """(layers, heads) in [0, 1]: how often a head's highest-weight key is where ``task``'s ideal pattern
    (``tasks.ideal_pattern``) says, over the queries that predict its answer. ``head_task_scores(m, "reversal", …)``
    equals ``head_reversal_scores(m, …)``."""
    from .tasks import ideal_pattern

    if data.shape[0] == 0:
        raise ValueError("head_task_scores: data is empty")
    dev = _device(model)
    x = data[:, :-1].to(dev)
    _, weights = model(x, _mask(x.shape[1], causal, dev))
    return pattern_scores_from_weights(weights, ideal_pattern(task, data.to(dev), seq_len))


@torch.inference_mode()  # no autograd bookkeeping at all: this runs after every training step
def probe_attention(model: TinyTransformer, sequence: torch.Tensor, causal: bool = True) -> list[np.ndarray]:
    """Attention maps for one full sequence (2L+1,), as fed in training (all but the last token):
    a list over layers of (H, 2L, 2L) float64 arrays."""
    dev = _device(model)
    x = torch.as_tensor(sequence, dtype=torch.long).reshape(1, -1)[:, :-1].to(dev)
    _, weights = model(x, _mask(x.shape[1], causal, dev))
    return [w[0].double().cpu().numpy() for w in weights]
