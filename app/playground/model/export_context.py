"""What a Playground export must name about its setting, Qt-free: the preset (or "edited"), the mask, the scale,
and the colour bar's unit. Every Playground view's exports (steps, multi-head, vectors, flow, 3D, the pipeline
figure) ask here, so they all name the setting alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.common.titles import ExportContext, colorbar_label
from app.playground.model.colour_range import SHARED_STEPS

if TYPE_CHECKING:
    from app.playground.model.playground import PlaygroundModel


def playground_context(model: PlaygroundModel) -> ExportContext:
    """The setting behind the Playground's maps, as an export names it: the preset ("edited" once its inputs
    were changed, none for a session without one), the mask and the scale used (with d_k, so 1/√d_k is named)."""
    preset = model.preset
    name = None if preset is None else ("edited" if _inputs_edited(model) else preset.name)
    steps = model.result
    d_k = int(steps.q.shape[-1])
    return ExportContext(preset=name, mask=str(model.mask_mode), scale=float(steps.scale), d_k=d_k)


def _inputs_edited(model: PlaygroundModel) -> bool:
    """Whether the tokens or matrices differ from the preset's. ``preset_edited`` also counts the scale and the
    mask, which the context names on their own: a preset with the causal mask is still that preset."""
    from app.playground.model.texts import story_key

    if not model.preset_edited:
        return False
    now, ref = story_key(model.state), model._preset_key
    if not isinstance(ref, tuple):
        return True
    return now[:5] + now[7:] != ref[:5] + ref[7:]


def shared_label(name: str, model: PlaygroundModel) -> str:
    """The colour bar's unit, and, for the maps drawn in one shared range, that the range is shared (so an
    exported ① and ② compare by colour as they do in the window)."""
    label = colorbar_label(name, float(model.result.scale))
    return f"{label} (range shared by steps 1-3)" if model.colours.shared and name in SHARED_STEPS else label
