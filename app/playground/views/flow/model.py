"""The Playground's flow: its current weights as ``FlowData`` (``app.common.flow``), read from the result, never
recomputed, so a line is exactly the weight the other views show."""

from __future__ import annotations

import numpy as np

from app.common.flow import FlowData
from app.playground.model.playground import PlaygroundModel


def playground_flow(model: PlaygroundModel) -> FlowData:
    """The Playground's current weights: every head of the multi-head split when Heads > 1, else the one map."""
    result = model.computation
    q_tok, k_tok = tuple(model.query_tokens), tuple(model.key_tokens)
    if result.heads is not None:
        w = np.asarray(result.heads.heads.weights)
        h = w.shape[0]
        return FlowData(w, q_tok, k_tok, tuple(f"head {i + 1}" for i in range(h)),
                        f"Attention flow: {h} heads (softmax weights)")
    w = np.asarray(result.steps.weights)[None, :, :]
    return FlowData(w, q_tok, k_tok, ("weights",), "Attention flow: softmax weights")
