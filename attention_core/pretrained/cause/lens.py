"""The logit lens (nostalgebraist 2020): what the model would predict if it stopped at each half-layer.

Each residual state at one position goes through the model's own final norm and unembedding
(``ForwardPass.logits``: the final norm, a masked-LM head's dense → activation → norm, the unembedding and Gemma 2's
final soft-cap, exactly as the model's logits are made), so the last row is the model's own prediction and every
earlier row is read in the same coordinates.

The rows, from the named sites: ``embed`` = ``resid_pre.0``; ``attn L`` = ``resid_pre.L + attn_out.L`` (the
stream after layer L's attention has added its output); ``mlp L`` = ``resid_post.L`` (after the whole layer). Two
families differ:

- parallel residual (GPT-NeoX / Pythia): attention and MLP both read the layer's input and are added together, so
  ``attn L`` is a state the model never holds: the layer's input plus what its attention alone adds (the MLP's part
  left out). It still shows what the attention contributed; the MLP does not read it.
- post-LN encoders (BERT, RoBERTa, DistilBERT): the norm follows each add, so ``attn L`` is
  ``ln1(resid_pre.L + attn_out.L)``: the state the MLP reads (Hugging Face's ``attention`` module output).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..layers import cpu_threads
from .targets import position_index, token_id

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py imports this module, which does not import
it back (no import cycle, not even a type-only one)."""


@dataclass(frozen=True)
class LogitLens:
    """One position's prediction at every half-layer.

    ``labels`` ("embed", "attn 0", "mlp 0", …, "mlp L-1"), ``logits`` (2L+1, vocab) float32 (the last row is the
    model's logits at ``position``), ``top``: per row the ``top_k`` likeliest (id, token, probability).
    ``prediction``: "next" (row p predicts token p + 1) or "masked" (an encoder: the token at p)."""

    ids: np.ndarray
    tokens: tuple[str, ...]
    position: int
    labels: tuple[str, ...]
    logits: np.ndarray
    top: tuple[tuple[tuple[int, str, float], ...], ...]
    prediction: str
    resolve: Callable[[Any], int] = field(repr=False, compare=False)

    def probs(self) -> np.ndarray:
        """(2L+1, vocab) float64: each row's softmax."""
        return softmax(self.logits)

    def rank_of(self, token: Any) -> np.ndarray:
        """(2L+1,) int: how many tokens each row scores strictly higher than ``token`` (an id or a one-token
        string): 0 = the top prediction."""
        i = self.resolve(token)
        return (self.logits > self.logits[:, i:i + 1]).sum(axis=1).astype(np.int64)

    def probs_of(self, token: Any) -> np.ndarray:
        """(2L+1,) float64: the probability each row gives ``token``."""
        return self.probs()[:, self.resolve(token)]


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64."""
    x = logits.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def half_layer_states(model: PretrainedModel, read: dict[str, np.ndarray], p: int) -> np.ndarray:
    """(2L+1, d_model) float32: the residual stream at position p before the first layer and after each
    attention and each MLP, from a run's ``resid_pre``, ``attn_out`` and ``resid_post`` sites."""
    n = model.spec.n_layers
    rows = [read["resid_pre.0"][p]]
    for li in range(n):
        mid = read[f"resid_pre.{li}"][p] + read[f"attn_out.{li}"][p]
        if model.spec.norm_place == "after":  # post-LN: the stream is normalised after the add
            ln1 = model.weights.layers[li].ln1
            assert ln1 is not None
            x = torch.as_tensor(mid[None], device=model.device).to(model.forward_pass.dtype)
            mid = ln1(x)[0].float().cpu().numpy()
        rows += [mid, read[f"resid_post.{li}"][p]]
    return np.stack(rows).astype(np.float32)


def lens_sites(n_layers: int) -> list[str]:
    return [name for li in range(n_layers) for name in (f"resid_pre.{li}", f"attn_out.{li}", f"resid_post.{li}")]


def logit_lens(model: PretrainedModel, text_or_ids: Any, *, position: int = -1, top_k: int = 10) -> LogitLens:
    """Run the text once (reading the residual sites) and unembed every half-layer state at ``position``."""
    ids, _ = model.ids_of(text_or_ids)
    p = position_index(position, len(ids))
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    run = model.run_with(ids, read=lens_sites(model.spec.n_layers))
    states = half_layer_states(model, run.read, p)
    fp = model.forward_pass
    with torch.no_grad(), cpu_threads(model.threads if model.device.type == "cpu" else None):
        x = torch.as_tensor(states, device=fp.device).to(fp.dtype)[None]
        logits = fp.logits(x)[0].cpu().numpy().astype(np.float32)
    labels = ("embed", *(f"{kind} {li}" for li in range(model.spec.n_layers) for kind in ("attn", "mlp")))
    k = min(int(top_k), logits.shape[1])
    top = []
    for row in softmax(logits):
        best = np.argsort(-row, kind="stable")[:k]
        names = model.token_strings(best.tolist())
        top.append(tuple((int(i), s, float(row[i])) for i, s in zip(best, names)))
    return LogitLens(ids, tuple(model.token_strings(ids.tolist())), p, labels, logits, tuple(top),
                     "masked" if model.spec.masked_lm else "next", lambda t: token_id(model, t, "token"))
