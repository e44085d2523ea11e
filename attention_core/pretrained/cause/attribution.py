"""Direct logit attribution: the logit of a target token (or its difference from a foil) split exactly into what
each component wrote into the residual stream.

The final residual state at a position is a sum: the embedding, then per layer the attention's output and the
MLP's output (``resid_pre.0 + Σ_L attn_out.L + mlp_out.L``, the parallel-residual GPT-NeoX included). The logit is
not linear in it, only because of the final norm; freezing the norm's scale at its clean value (1/σ of LayerNorm,
whose centering is linear, or 1/rms of an RMSNorm, times its weight) makes it linear, and each term is that
component pushed through the frozen norm and dotted with the unembedding direction ``W_U[target] − W_U[foil]``.
A head's term is its ``result`` (its ``z`` through its slice of W_O, no bias); where the family normalises the
attention's output before adding it (OLMo-2, Gemma: ``post_attention_layernorm``), that norm's input is the sum of
the heads' results and W_O's bias, so it is frozen too, at its own clean scale. So, in float64:

    embed + heads.sum() + mlps.sum() + biases == total

to rounding (1e-12), and ``total`` equals ``actual``, the model's own logit (difference), to the rounding of the
model's run (the activations are read in float32 and the sums done in float64): within 1e-6 of the largest term in
float32; a bfloat16 model's own logits carry its rounding (0.2-1.1 % of the largest term on the test models).

- ``embed``: the token embedding + the position embedding (learned or sinusoidal; rotary models have none), times
  Gemma's √d_model.
- ``heads`` (L, H): each head's result; q/k/v biases are inside (they act through the attention).
- ``mlps`` (L,): each MLP's whole output, its biases and a post-MLP norm (Gemma, OLMo-2) included.
- ``biases``: what no head or MLP owns: each layer's W_O bias (through the frozen post-attention norm where there
  is one), the final LayerNorm's bias, the unembedding's bias (no supported decoder has one).

Refused, with the reason (``ValueError``): the encoders (BERT, RoBERTa, DistilBERT), whose post-LN blocks
renormalise the whole stream after every add and whose masked-LM head has a GELU between the stream and the
logits: no component has a linear share of the logit there. Gemma 2's final soft-cap ``c·tanh(z / c)`` is not
linear either: its terms add up to the logits before the cap (``actual`` is that difference, ``capped`` the
model's own capped one, ``note`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..layers import Linear, Norm, cpu_threads
from .targets import position_index, token_id

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py imports this module, which does not import
it back (no import cycle, not even a type-only one)."""


@dataclass(frozen=True)
class Attribution:
    """The terms of one logit (difference) at one position, float64; see the module docstring."""

    ids: np.ndarray
    tokens: tuple[str, ...]
    position: int
    target: int
    foil: int | None
    target_token: str
    foil_token: str | None
    embed: float
    heads: np.ndarray
    mlps: np.ndarray
    biases: float
    total: float
    actual: float
    capped: float | None = None
    note: str = ""

    def terms(self) -> list[tuple[str, float]]:
        """Every term by name ("embed", "L.h" for a head, "mlp L", "biases"), largest magnitude first."""
        named = [("embed", self.embed), ("biases", self.biases)]
        named += [(f"{li}.{h}", float(v)) for (li, h), v in np.ndenumerate(self.heads)]
        named += [(f"mlp {li}", float(v)) for li, v in enumerate(self.mlps)]
        return sorted(named, key=lambda kv: -abs(kv[1]))


@dataclass(frozen=True)
class FrozenNorm:
    """A norm with its scale fixed at a clean input: ``linear(v)`` = scale · (v − mean v, for LayerNorm), plus
    ``shift`` (LayerNorm's bias; zeros for an RMSNorm): linear in v, so a sum of parts goes through part by part."""

    scale: np.ndarray
    center: bool
    shift: np.ndarray

    def linear(self, v: np.ndarray) -> np.ndarray:
        return (v - v.mean(axis=-1, keepdims=True) if self.center else v) * self.scale

    def covector(self, direction: np.ndarray) -> np.ndarray:
        """u with u · v == direction · linear(v) for every v."""
        u = direction * self.scale
        return u - u.mean() if self.center else u


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def freeze(norm: Norm, clean: np.ndarray) -> FrozenNorm:
    """``norm`` at the clean input (d,), float64: its 1/σ or 1/rms computed there, as the norm computes it."""
    w = _np(norm.weight)
    if norm.kind == "layer":
        centered = clean - clean.mean()
        inv = 1.0 / np.sqrt((centered ** 2).mean() + norm.eps)
        return FrozenNorm(w * inv, True, np.zeros_like(w) if norm.bias is None else _np(norm.bias))
    inv = 1.0 / np.sqrt((clean ** 2).mean() + norm.eps)
    return FrozenNorm((1.0 + w if norm.kind == "gemma" else w) * inv, False, np.zeros_like(w))


def _unembed(head: Linear, token: int) -> tuple[np.ndarray, float]:
    row = head.weight[:, token] if head.in_out else head.weight[token]
    return _np(row), 0.0 if head.bias is None else float(head.bias[token])


def _w_o(o: Linear, heads: int) -> np.ndarray:
    """(H, d_head, d_model) float64: each head's slice of the output projection."""
    w = _np(o.weight)
    w = w if o.in_out else w.T  # [H·d_head, d_model]
    return w.reshape(heads, -1, w.shape[1])


def refusal(model: PretrainedModel) -> str | None:
    """Why this model's logits cannot be split into direct terms, or None."""
    s = model.spec
    if s.norm_place == "after" or model.weights.head_transform is not None:
        return (f"{model.name}: direct logit attribution needs a linear path from each component to the logit; "
                f"{s.family}'s post-LN blocks renormalise the whole residual stream after every add and its "
                "masked-LM head puts a dense layer, an activation and a LayerNorm before the unembedding, so no "
                "component has a share of the logit (use logit_lens to see the prediction form layer by layer)")
    return None


def attribute(model: PretrainedModel, text_or_ids: Any, *, target: Any, foil: Any = None,
              position: int = -1) -> Attribution:
    """Split logit(target) − logit(foil) (or logit(target)) at ``position`` into direct terms; see the module."""
    ids, _ = model.ids_of(text_or_ids)
    why = refusal(model)
    if why:
        raise ValueError(why)
    t = token_id(model, target, "target")
    f = None if foil is None else token_id(model, foil, "foil")
    if f == t:
        raise ValueError(f"foil: the same token as the target ({t}); logit(target) − logit(foil) would be 0")
    p = position_index(position, len(ids))
    n, heads = model.spec.n_layers, model.spec.n_heads
    names = ["resid_pre.0", *(f"z.{li}" for li in range(n)), *(f"mlp_out.{li}" for li in range(n)),
             f"resid_post.{n - 1}"]
    run = model.run_with(ids, read=names)
    r = {k: v[..., p, :].astype(np.float64) for k, v in run.read.items()}  # each site at the position
    w = model.weights
    direction, constant = _unembed(w.lm_head, t)
    if f is not None:
        row, bias = _unembed(w.lm_head, f)
        direction, constant = direction - row, constant - bias
    final = r[f"resid_post.{n - 1}"]
    if w.final_norm is not None:
        frozen = freeze(w.final_norm, final)
        constant += float(direction @ frozen.shift)
        direction = frozen.covector(direction)
    embed = r["resid_pre.0"]
    stream = embed.copy()  # the final state rebuilt from the terms' own vectors: total = direction · stream + constant
    head_terms, mlp_terms, biases = np.zeros((n, heads)), np.zeros(n), constant
    for li, lw in enumerate(w.layers):
        results = np.einsum("hk,hkd->hd", r[f"z.{li}"], _w_o(lw.o, heads))  # (H, d_model): no bias
        b_o = np.zeros(results.shape[1]) if lw.o.bias is None else _np(lw.o.bias)
        if lw.post1 is not None:  # the attention's output is normalised before the add: frozen at its clean sum
            post = freeze(lw.post1, results.sum(axis=0) + b_o)
            results, b_o = post.linear(results), post.linear(b_o) + post.shift
        mlp = r[f"mlp_out.{li}"]
        head_terms[li], mlp_terms[li] = results @ direction, mlp @ direction
        biases += float(b_o @ direction)
        stream += results.sum(axis=0) + b_o + mlp
    total = float(direction @ stream) + constant
    logits = run.logits[p].astype(np.float64)
    model_diff = logits[t] - (0.0 if f is None else logits[f])
    capped, note, actual = None, "", float(model_diff)
    if model.spec.final_softcap is not None:  # attribute the logits before the cap, which are linear
        capped, actual = float(model_diff), _uncapped(model, run.read[f"resid_post.{n - 1}"][p], t, f)
        note = (f"{model.spec.family}'s final soft-cap c·tanh(z/c) (c = {model.spec.final_softcap:g}) is not "
                "linear: the terms add up to the logits before the cap (actual); capped is the model's own")
    return Attribution(ids, tuple(model.token_strings(ids.tolist())), p, t, f, model.token_strings([t])[0],
                       None if f is None else model.token_strings([f])[0], float(embed @ direction), head_terms,
                       mlp_terms, biases, total, actual, capped, note)


def _uncapped(model: PretrainedModel, final: np.ndarray, t: int, f: int | None) -> float:
    """The model's logit (difference) before the final soft-cap: its final norm and unembedding on the state."""
    w, fp = model.weights, model.forward_pass
    with torch.no_grad(), cpu_threads(model.threads if model.device.type == "cpu" else None):
        x = torch.as_tensor(final, device=fp.device).to(fp.dtype)[None]
        x = x if w.final_norm is None else w.final_norm(x)
        z = w.lm_head(x)[0].double().cpu().numpy()
    return float(z[t] - (0.0 if f is None else z[f]))
