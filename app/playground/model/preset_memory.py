"""The presets one ``PlaygroundModel`` has loaded, found again by the name and story a snapshot keeps (undo, redo,
a session), each with its story key (``texts.story_key`` of its inputs: what its story speaks about). Qt-free.

A built-in preset is found by its name (``get_preset``). One given as an object — a real model's head from the
Model tab's "Open this head in the Playground", a random preset — is in no list, so it is remembered here: without
that, redo of the opened head brought its numbers back but not its story. Given presets may share a name (the same
head of the same model on another text): their stories tell them apart, and where the stories are alike too (texts
alike in their first 40 characters) the numbers on screen do.

    memory = PresetMemory(); key = memory.remember(preset, given=True)
    memory.find(snapshot_state, current=None)  # (preset, key), or None for a name nobody knows
"""

from __future__ import annotations

from app.playground.model import texts as text
from app.playground.model.state import PlaygroundState
from attention_core.presets import Preset, get_preset

GIVEN_KEPT = 64
"""Given presets remembered (the newest; a real head's inputs are at most 32 × 64 × 3 numbers)."""


def story_key_of(preset: Preset) -> object:
    """The story key of ``preset``'s own inputs (a fresh state loaded with it)."""
    fresh = PlaygroundState()
    fresh.load_preset(preset)
    return text.story_key(fresh)


class PresetMemory:
    def __init__(self) -> None:
        self._named: dict[str, object] = {}  # built-in presets' story keys, by name
        self._given: list[tuple[Preset, object]] = []  # presets given as objects, newest last

    def remember(self, preset: Preset, given: bool, key: object = None) -> object:
        """``preset``'s story key (computed once); ``given``: loaded as an object, to be found again by ``find``.
        ``key``: a given preset's story key, that of the state it was just loaded into with its options (a real
        head's rotary, soft-cap: its story speaks of the numbers they give); computed from ``preset`` when None."""
        if not given:
            if preset.name not in self._named:
                self._named[preset.name] = story_key_of(preset)
            return self._named[preset.name]
        for i, (p, known) in enumerate(self._given):
            if p is preset:
                self._given.append(self._given.pop(i))
                return known
        key = story_key_of(preset) if key is None else key
        self._given = [*self._given[-(GIVEN_KEPT - 1):], (preset, key)]
        return key

    def find(self, state: PlaygroundState, current: Preset | None) -> tuple[Preset, object] | None:
        """The preset behind ``state`` (its ``preset_name`` and ``story``, as a snapshot keeps them) with its story
        key: a given one of that name and story (the one whose inputs ``state`` holds, else the newest), else
        ``current`` when it has that name, else the built-in preset of that name; None when there is none."""
        name = state.preset_name
        if not name:
            return None
        alike = [(p, key) for p, key in reversed(self._given) if p.name == name and p.story == state.story]
        if alike:
            now = text.story_key(state)
            return next(((p, key) for p, key in alike if key == now), alike[0])
        if current is not None and current.name == name and not any(p is current for p, _ in self._given):
            return current, self.remember(current, given=False)
        try:
            preset = get_preset(name)
        except ValueError:  # a session from a newer app, or a head opened in another window
            return None
        return preset, self.remember(preset, given=False)
