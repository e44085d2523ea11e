"""What a Learn-mode predict step hides now, for every view. Qt-free, evented.

One ``Concealment`` per ``PlaygroundModel`` (``Concealment.of(model)``: it exists from the start, whether or not a
lesson or the Learn dock was ever opened). A lesson declares what is hidden (``hide(names)``, the step's ``cover``:
the five step names and ``multihead``); every view that could show one of those numbers, or a quantity that gives
them away (a weight as a percentage, a Flow line, a hover read-out), asks ``hides(...)`` when it draws and follows
``events.changed`` (the frozenset of the quantities whose cover came or went); an export of a hidden map is
refused with ``withheld_message``.

    c = Concealment.of(model); c.hide(("weights", "output")); c.hides("weights")  # True
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

from app.common.evented import Evented, ModelEvents, event
from attention_core import STEP_NAMES, STEP_TITLES

COVERABLE = (*STEP_NAMES, "multihead", "detect", "scan")
"""What may be hidden: the five step maps, the whole Multi-head view, and the Model tab's detector scores
(``detect``) and ablation scan (``scan``) (``app.learn.model.schema.COVERS``)."""
MODEL_TITLES = {"multihead": "the multi-head view", "detect": "the detectors' scores",
                "scan": "the ablation scan's loss changes"}
SCAN_REVEALS = ("detect", "scan")
"""The scan's loss changes point at the heads that matter (the induction heads stand out): hidden with either."""
COVER_TEXT = "Covered until you answer"
MULTIHEAD_REVEALS = ("multihead", "weights", "output")
"""The Multi-head view shows each head's weights, their outputs and the layer's output: hidden with any of these."""
FLOW_REVEALS = ("weights", "multihead")
"""The Flow view's lines are the weights (every head's when Heads > 1): hidden with either."""

STORY_REVEALS = (*STEP_NAMES, "multihead")
"""The Playground's story line and explanation describe its own steps: hidden with any of these, not with a cover of
the Model tab's scores alone (``detect``, ``scan``), which they say nothing about."""

SATURATION_REVEALS = ("scaled", "masked", "weights", "output")
"""The saturation read-out (each row's largest weight and entropy) gives these away (the output: which key a
row favours)."""

_OF: weakref.WeakKeyDictionary[object, Concealment] = weakref.WeakKeyDictionary()


class ConcealmentEvents(ModelEvents):
    """One event per coverable quantity whose cover came or went; ``changed`` says which (its frozenset of names)."""

    scores = event()
    scaled = event()
    masked = event()
    weights = event()
    output = event()
    multihead = event()
    detect = event()
    scan = event()


class Concealment(Evented):
    """The set of hidden quantities now (empty: nothing is hidden)."""

    events: ConcealmentEvents

    def __init__(self) -> None:
        super().__init__()
        self.hidden: frozenset[str] = frozenset()

    @staticmethod
    def of(model: object) -> Concealment:
        """The one concealment of ``model`` (a ``PlaygroundModel``), made on first ask."""
        c = _OF.get(model)
        if c is None:
            c = _OF[model] = Concealment()
        return c

    def hide(self, names: Iterable[str]) -> None:
        """Hide exactly ``names`` (replacing what was hidden); ``()`` lifts every cover. ``ValueError`` for a name
        that is not a map, and nothing changes then."""
        wanted = frozenset(names)
        odd = sorted(wanted - set(COVERABLE))
        if odd:
            raise ValueError(f"cannot hide {', '.join(odd)}: only {', '.join(COVERABLE)}")
        if wanted != self.hidden:
            flipped = wanted ^ self.hidden
            self.hidden = wanted
            self._announce(*(n for n in COVERABLE if n in flipped))

    def lift(self) -> None:
        self.hide(())

    def hides(self, *names: str) -> bool:
        """Whether any of ``names`` is hidden now."""
        return any(n in self.hidden for n in names)

    def withheld_message(self, *names: str) -> str:
        """What an export or a view says instead of a hidden quantity ("" when none of ``names`` is hidden)."""
        hidden = [n for n in names if n in self.hidden]
        if not hidden:
            return ""
        what = ", ".join(STEP_TITLES.get(n) or MODEL_TITLES[n] for n in hidden)
        return f"{COVER_TEXT}: {what} hidden by the lesson's question (answer it to see it)"
