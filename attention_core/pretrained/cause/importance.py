"""Attention is not importance: how much each key moves into a head's output, and attention rolled out.

A bright cell of a map says the weight α_ij is large; what the head adds to the residual stream at query i is
Σ_j α_ij · v_j · W_O^h, so a key whose value vector is short moves little however much weight it gets (Kobayashi
et al. 2020, "Attention is not only a weight": the first token takes most of α in many heads and moves almost
nothing). ``value_norms`` gives ‖α_ij · v_j · W_O^h‖ for every cell: the length of what key j contributes.

``rollout`` (Abnar & Zuidema 2020, "Quantifying Attention Flow"): each layer's map averaged over heads, the residual
connection modelled as ½A + ½I, rows renormalised, multiplied through the layers: how much of each input token
reaches each position at each depth, under the (strong) assumption that attention is the only mixing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def o_weights(weights: Any, spec: Any) -> Callable[[int], np.ndarray]:
    """A function layer → W_O (heads, d_head, d_model) float32 (head h's rows of the output projection), read from
    the model's weights when asked (a trace keeps the function, not copies)."""

    def get(layer: int) -> np.ndarray:
        o = weights.layers[layer].o
        w = o.weight if o.in_out else o.weight.t()  # (heads · d_head, d_model)
        return np.asarray(w.float().cpu().numpy()).reshape(spec.n_heads, spec.d_head, -1)

    return get


def value_norms(attentions: np.ndarray, v: np.ndarray, o_weight: Callable[[int], np.ndarray] | None,
                heads: int, kv_heads: int) -> np.ndarray:
    """(layers, heads, T, T) float32: ‖α_ij · v_j · W_O^h‖, from the maps (layers, heads, T, T), the values
    (layers, kv_heads, T, d_head) and each layer's W_O (``o_weights``). As α_ij ≥ 0 this is α_ij · ‖v_j W_O^h‖,
    computed in float64; the vectors (not their norms) summed over j are the head's output (``result``) at i."""
    if o_weight is None:
        raise ValueError("value norms need the model's output projection: this trace was made without it "
                         "(make it with PretrainedModel.trace)")
    attentions = np.asarray(attentions)  # a long trace's NotKept raises LongTraceError here, saying what to use
    layers, _, t, _ = attentions.shape
    group = heads // kv_heads
    out = np.empty(attentions.shape, dtype=np.float32)
    for li in range(layers):
        w = o_weight(li).astype(np.float64)  # (heads, d_head, d_model)
        vv = v[li].astype(np.float64)  # (kv_heads, T, d_head)
        for h in range(heads):
            length = np.linalg.norm(vv[h // group] @ w[h], axis=-1)  # (T,): ‖v_j W_O^h‖ per key
            out[li, h] = attentions[li, h].astype(np.float64) * length[None, :]
    return out


def value_vectors(trace: Any, layer: int, head: int) -> np.ndarray:
    """(T, T, d_model) float64: the vectors α_ij · v_j · W_O^h themselves for one head (``value_norms`` are their
    lengths); summed over j (axis 1) they are the head's output at each query i (z_i through W_O^h, no bias)."""
    if trace.o_weight is None:
        raise ValueError("value vectors need the model's output projection: make the trace with "
                         "PretrainedModel.trace")
    a = np.asarray(trace.head_map(layer, head), dtype=np.float64)  # (T, T)
    u = trace.v[layer, trace.kv_head(head)].astype(np.float64) @ trace.o_weight(layer)[head].astype(np.float64)
    return np.asarray(a[:, :, None] * u[None, :, :])


def rollout(attentions: np.ndarray) -> np.ndarray:
    """(layers, T, T) float32 attention rollout: entry [l, i, j] is how much of input token j reaches position i
    after layer l (row i sums to 1); ``[-1]`` is the whole model's. Per layer Â = ½·mean_h(A) + ½·I, rows
    renormalised, then R_l = Â_l · R_(l−1) (R_0 = Â_0), in float64."""
    attentions = np.asarray(attentions)  # a long trace's NotKept raises LongTraceError here, saying what to use
    layers, _, t, _ = attentions.shape
    eye = np.eye(t)
    out = np.empty((layers, t, t), dtype=np.float32)
    r = eye
    for li in range(layers):
        a = 0.5 * attentions[li].astype(np.float64).mean(axis=0) + 0.5 * eye
        a /= a.sum(axis=-1, keepdims=True)
        r = a @ r
        out[li] = r
    return out
