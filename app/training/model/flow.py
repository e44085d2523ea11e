"""The Training tab's flow (``app.common.flow.FlowData``) at a recorded step: one layer's heads on the probe sequence,
read from the snapshot, never recomputed. Qt-free."""

from __future__ import annotations

import numpy as np

from app.common.flow import FlowData
from app.training.model.history import Snapshot


def training_flow(snap: Snapshot, layer: int) -> FlowData:
    """One layer's heads at a recorded step, on the probe sequence (positions numbered, tokens as the grid names
    them). Queries are the positions the model reads; each predicts the next token."""
    if not 0 <= layer < len(snap.probe_weights):
        raise ValueError(f"layer {layer + 1} does not exist (the model has {len(snap.probe_weights)})")
    w = np.asarray(snap.probe_weights[layer])
    labels = tuple(f"{i}: {lab}" for i, lab in enumerate(snap.labels))
    note = "" if snap.causal else "no causal mask: queries also look at later positions"
    return FlowData(w, labels, labels, tuple(f"head {i + 1}" for i in range(w.shape[0])),
                    f"Attention flow: layer {layer + 1} at step {snap.step}", note)
