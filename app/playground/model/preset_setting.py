"""The scale and mask a preset brings (a real model's head brings its own), applied to the Playground's state when
the preset loads. Apart from ``state.py`` only to keep that module small; it reads and writes the state's plain
fields (``dims``, ``scale_mode``, ``custom_scale``, ``mask_mode``, ``custom_mask``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

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
