"""What a Playground export must name about its setting, Qt-free: the preset (or "edited"), the mask, the scale, the
modern options that are on (rotary, ALiBi, soft-cap, window and sinks, K/V heads) and the colour bar's unit. Every
Playground view's exports (steps, multi-head, vectors, flow, 3D, the pipeline figure) ask here, so they all name the
setting alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.common.titles import ExportContext, colorbar_label
from app.playground.model.colour_range import SHARED_STEPS

if TYPE_CHECKING:
    from app.playground.model.playground import PlaygroundModel
    from app.playground.model.state import PlaygroundState


def playground_context(model: PlaygroundModel) -> ExportContext:
    """The setting behind the Playground's maps, as an export names it: the preset ("edited" once its inputs
    were changed, none for a session without one), the mask and the scale used (with d_k, so 1/√d_k is named)."""
    preset = model.preset
    name = None if preset is None else ("edited" if _inputs_edited(model) else preset.name)
    steps = model.result
    d_k = int(steps.q.shape[-1])
    return ExportContext(preset=name, mask=str(model.mask_mode), scale=float(steps.scale), d_k=d_k,
                         mode=mode_text(str(model.mode), str(model.kind)), **option_context(model.state))


def option_context(state: PlaygroundState) -> dict[str, Any]:
    """The ``ExportContext`` fields of the modern options that are on (rotary, ALiBi, soft-cap, window and sinks,
    K/V heads); the command line's export passes a state built from its flags through here too."""
    o = state.options
    return {"rotary_base": o.rotary_base, "rotary_dims": o.rotary_dims, "alibi": o.alibi, "softcap": o.softcap,
            "window": o.window if state.mask_mode == "sliding" else None, "sinks": o.sinks,
            "heads": state.num_heads, "kv_heads": o.num_kv_heads}


MODE_TEXT = {"qkv": "Q, K, V given",
             "self": "projection, self-attention: Q = X·W_Q, K = X·W_K, V = X·W_V",
             "cross": "projection, cross-attention: Q = X_q·W_Q, K = X_kv·W_K, V = X_kv·W_V"}


def mode_text(mode: str, kind: str = "self") -> str:
    """The input mode in words, as a CSV's ``# mode:`` line names it ("Q, K, V given", "projection, …")."""
    return MODE_TEXT["qkv"] if mode == "qkv" else MODE_TEXT.get(kind, f"projection, {kind}")


def _inputs_edited(model: PlaygroundModel) -> bool:
    """Whether the tokens or the Q, K, V attention sees differ from the preset's. ``preset_edited`` also counts
    the scale and the mask, which the context names on their own: a preset with the causal mask is still that
    preset (and switching between editing X and W and editing Q, K, V is no edit)."""
    import numpy as np

    preset = model.preset
    if preset is None or not model.preset_edited:
        return False
    if list(model.query_tokens) != list(preset.query_tokens) or list(model.key_tokens) != list(preset.key_tokens):
        return True
    now = model.state.projected()
    return any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(now, (preset.q, preset.k, preset.v)))


def shared_label(name: str, model: PlaygroundModel) -> str:
    """The colour bar's unit, and, for the maps drawn in one shared range, that the range is shared (so an
    exported ① and ② compare by colour as they do in the window)."""
    label = colorbar_label(name, float(model.result.scale))
    return f"{label} (range shared by steps 1-3)" if model.colours.shared and name in SHARED_STEPS else label
