"""A preset's inputs, and the scale and mask it brings (a real model's head brings its own), put into the
Playground's state when the preset loads. Apart from ``state.py`` only to keep that module small; it reads and writes
the state's plain fields (``dims``, ``scale_mode``, ``custom_scale``, ``mask_mode``, ``custom_mask``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from app.playground.model.options import AttentionOptions
from attention_core.presets import Preset
from attention_core.steps import default_scale


def apply_preset_setting(state: Any, preset: Preset) -> None:
    """Set ``state``'s scale and mask from ``preset`` (nothing when the preset brings none): 1/√d_k and 1 by
    name, any other scale as a custom one; a lower-triangular mask as the causal mask, any other as a custom one.
    Raises ValueError for a mask of the wrong shape or a scale that is not a positive number."""
    if preset.scale is not None:
        s = float(preset.scale)
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"a preset's scale must be a positive number, got {preset.scale}")
        if math.isclose(s, default_scale(state.dims["d_k"]), rel_tol=1e-6):
            state.scale_mode = "sqrt"
        elif s == 1.0:
            state.scale_mode = "one"
        else:
            state.scale_mode, state.custom_scale = "custom", s
    if preset.allowed is not None:
        allowed = np.asarray(preset.allowed, dtype=bool)
        shape = (state.dims["Lq"], state.dims["Lk"])
        if allowed.shape != shape:
            raise ValueError(f"a preset's mask is {allowed.shape}, its inputs need {shape}")
        if shape[0] == shape[1] and np.array_equal(allowed, np.tril(np.ones(shape, dtype=bool))):
            state.mask_mode = "causal"
        else:
            state.mask_mode, state.custom_mask = "custom", allowed.copy()


def load_preset_inputs(state: Any, preset: Preset) -> None:
    """Put ``preset``'s tokens, dimensions and matrices into ``state`` (projection mode when it has X and W), with
    the setting its story describes: 1/√d_k, no mask, one head, every modern option off (block sizes kept: they
    change no number). The caller then fits the matrices and applies ``apply_preset_setting``."""
    state.preset_name, state.story = preset.name, preset.story
    state.query_tokens, state.key_tokens = list(preset.query_tokens), list(preset.key_tokens)
    state.dims.update(Lq=preset.q.shape[0], Lk=preset.k.shape[0], d_k=preset.q.shape[1], d_v=preset.v.shape[1])
    for name, a in (("Q", preset.q), ("K", preset.k), ("V", preset.v)):
        state.matrices[name] = np.array(a, dtype=np.float64)
    if preset.x_q is not None:  # has_projections
        state.mode = "projection"
        state.kind = "self" if preset.self_attention else "cross"
        state.dims["d_model"] = preset.x_q.shape[1]
        if state.kind == "self":
            state.matrices["X"] = np.array(preset.x_q, dtype=np.float64)
        else:
            state.matrices["X_q"] = np.array(preset.x_q, dtype=np.float64)
            state.matrices["X_kv"] = np.array(preset.x_kv, dtype=np.float64)
        for name, w in (("W_Q", preset.w_q), ("W_K", preset.w_k), ("W_V", preset.w_v)):
            state.matrices[name] = np.array(w, dtype=np.float64)
    else:
        state.mode = "qkv"
    state.mask_mode, state.num_heads, state.scale_mode = "none", 1, "sqrt"
    state.options = AttentionOptions(block_q=state.options.block_q, block_k=state.options.block_k)
    state.padding_keep = [True] * state.dims["Lk"]
    state.custom_mask = np.ones((state.dims["Lq"], state.dims["Lk"]), dtype=bool)
