"""The Playground tab's model: everything it shows or edits, and everything derived from it. Qt-free, evented.

One way for data to flow: a user action becomes an undo command (app/playground/qt/commands.py), the command
calls a method here, the method validates (``ValueError`` with a readable message, nothing changed) and changes the
state, then
``_commit`` recomputes every derived value — the attention steps, the multi-head split, the story line, the
captions, the status line, the explanation of the pinned or hovered cell — and emits one event per thing that
changed, then ``changed`` with all their names. Views subscribe to the events of what they show and never
compute, so nothing on screen can be left describing an older state.

Scripts and notebooks use it directly::

    m = PlaygroundModel()
    m.load_preset("cat-sat-mat"); m.set_cell("Q", 0, 0, 3.0); m.set_mask("causal"); m.pin("weights", 0, 1)
    m.result        # attention_core.AttentionSteps of what is on screen
    m.explanation   # plain text of the explanation bar
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from app.common.evented import Evented, ModelEvents, event
from app.playground.model import texts as text
from app.playground.model.colour_range import StepColours, step_colours
from app.playground.model.explain import Explanation, explain, explain_multihead, with_projection_sources
from app.playground.model.option_edits import OPTION_FIELDS, OptionEdits
from app.playground.model.options import apply_head_options
from app.playground.model.preset_memory import PresetMemory
from app.playground.model.shown import CELL_VIEWS, cell_exists, compute, compute_shown
from app.playground.model.state import MASK_MODES, MODES, PlaygroundState, Result
from attention_core import AttentionSteps
from attention_core.presets import Preset, get_preset

INPUT_FIELDS = frozenset({"mode", "tokens", "dims", "matrices", "scale", "mask", "heads", "device", "preset",
                          "options"})
ANNOUNCED_ORDER = ("mode", "dims", "tokens", "matrices", "scale", "mask", "heads", "options", "blocks", "device",
                   "devices", "preset", "story", "result", "flash", "colours", "pinned", "hovered", "explanation")
"""The order views hear of a commit's changes in: inputs, then what is derived from them."""
Highlights = dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...]]]
Cell = tuple[str, int, int]


class PlaygroundEvents(ModelEvents):
    """One event per thing that changes; ``changed`` follows with the set of their names (``ModelEvents``)."""

    mode = event()          # mode (qkv | projection) or kind (self | cross)
    tokens = event()
    dims = event()
    matrices = event(object)  # frozenset of the matrix names whose cells changed
    scale = event()
    mask = event()          # mask mode, padding keys or custom cells
    heads = event()
    device = event()
    devices = event()       # the list of available devices (not undoable: what the machine has)
    preset = event()
    story = event()
    result = event()        # result, captions, status line, saturation: all recomputed
    pinned = event()
    hovered = event()
    explanation = event()   # explanation text and the highlights that go with it
    options = event()       # rotary, ALiBi, soft-cap, window/sinks, K/V heads (``option_edits``)
    blocks = event()        # FlashAttention's block sizes
    flash = event()         # ``model.flash`` is stale: read it again (computed when asked for)
    colours = event()       # the step maps' colour ranges (with the shared-range option; also after "result")


class PlaygroundModel(OptionEdits, Evented):
    """Everything the Playground shows or edits, evented. Mutators raise ``ValueError`` and change nothing."""

    events: PlaygroundEvents

    def __init__(self, preset: str | None = "cat-sat-mat") -> None:
        super().__init__()
        self.state = PlaygroundState()
        self.devices: list[str] = ["cpu"]
        self.pinned: Cell | None = None
        self.hovered: Cell | None = None
        self.story = ""
        self.captions: dict[str, str] = {}
        self.saturation = ""
        self.heads_info = ""
        self.heads_banner = ""
        """What heads > 1 mean for the Steps view, with a link to the Multi-head tab ("" with one head)."""
        self.flow: dict[str, str] = {}
        """Per step: the arrow into its map (source, operation, note), Q/K/V named where they enter."""
        self.shared_range = True
        """Whether ①–③ share one colour range (view state, not undoable: it changes no number)."""
        self.colours = StepColours()
        """The colour levels of each step map and the note on its colour bar (``app.playground.model.colour_range``)."""
        self.device_note = ""
        """Why the device changed by itself (a GPU failed and the CPU took over); "" when it did not."""
        self._device_changed = False
        self.explanation_html = ""
        self.highlights: Highlights = {}
        self._preset: Preset | None = None
        self._preset_key: object = None
        self._presets = PresetMemory()  # what undo, redo and a session find a preset by (a real head's too)
        self._pending: Result | None = None
        self._flash, self._flash_note = None, ""
        self._computation = compute(self.state)
        if preset:
            self.load_preset(preset)
        else:
            self._commit(set(INPUT_FIELDS))

    # ================================================================== reading
    @property
    def result(self) -> AttentionSteps:
        """The attention steps on screen (``scores``, ``scaled``, ``masked``, ``weights``, ``output``)."""
        return self._computation.steps

    @property
    def computation(self) -> Result:
        """The result with the Q, K, V used, the mask and (heads > 1) the multi-head split."""
        return self._computation

    @property
    def explanation(self) -> str:
        """Plain text of what the explanation bar shows now ("" when no cell is pinned or hovered)."""
        return text.plain_text(self.explanation_html)

    @property
    def preset(self) -> Preset | None:
        return self._preset

    @property
    def preset_edited(self) -> bool:
        """Whether the inputs differ from the preset's (then its story no longer applies)."""
        return self._preset is not None and text.numbers_edited(self.state, self._preset_key)

    def __getattr__(self, name: str) -> Any:
        # read-only views of the state's fields (mode, kind, dims, matrices, query_tokens, …)
        if name in ("mode", "kind", "dims", "matrices", "query_tokens", "key_tokens", "scale_mode",
                    "custom_scale", "mask_mode", "padding_keep", "custom_mask", "num_heads", "device"):
            return getattr(self.__dict__["state"], name)
        if name in OPTION_FIELDS:
            return getattr(self.__dict__["state"].options, name)
        raise AttributeError(name)

    def snapshot(self, arrays: bool = False) -> dict[str, Any]:
        """A deep, JSON-ready copy of everything undoable (the device included); ``arrays``: matrices as array
        copies (for the undo stack; ``restore`` takes either)."""
        snap = self.state.snapshot(arrays)
        snap["device"] = self.state.device
        return snap

    # ================================================================== edits (each one undo step in the GUI)
    def set_cell(self, name: str, row: int, col: int, value: float) -> None:
        if name not in self.state.matrices:
            raise ValueError(f"no matrix named {name!r}")
        m = self.state.matrices[name]
        inside = 0 <= row < m.shape[0] and 0 <= col < m.shape[1]
        old = float(m[row, col]) if inside else 0.0
        # the hot path of typing and scrubbing: revert one cell instead of copying the whole state
        self._guarded(lambda s: s.set_cell(name, int(row), int(col), float(value)),
                      revert=lambda: m.__setitem__((row, col), old) if inside else None)
        self._commit({"matrices"}, matrices=frozenset({name}))

    def set_block(self, name: str, row: int, col: int, block: Any) -> None:
        """Paste a rectangle of numbers with its top-left corner at (row, col)."""
        if name not in self.state.matrices:
            raise ValueError(f"no matrix named {name!r}")
        self._guarded(lambda s: s.set_block(name, row, col, np.asarray(block, dtype=np.float64)))
        self._commit({"matrices"}, matrices=frozenset({name}))

    def set_dim(self, dim: str, n: int) -> None:
        if dim not in self.state.dims:
            raise ValueError(f"no dimension named {dim!r}; choose one of {', '.join(self.state.dims)}")
        self._guarded(lambda s: s.set_dim(dim, int(n)))
        self._commit({"dims", "tokens", "matrices", "mask", "heads", "mode"})

    def set_token(self, side: str, index: int, name: str) -> None:
        if side not in ("q", "k"):
            raise ValueError("side must be 'q' (queries) or 'k' (keys)")
        self._guarded(lambda s: s.set_token(side, int(index), name))
        self._commit({"tokens"})

    def set_tokens(self, side: str, names: list[str] | str) -> None:
        """Rename every query (``side="q"``) or key token at once; a string is split at spaces and commas."""
        if isinstance(names, str):
            names = [t for t in re.split(r"[,\s]+", names.strip()) if t]
        current = self.state.query_tokens if side == "q" else self.state.key_tokens
        if len(names) != len(current):
            raise ValueError(f"Give {len(current)} token names (one per row), got {len(names)}; "
                             "change Lq/Lk to add or remove tokens.")

        def rename(s: PlaygroundState) -> None:
            for i, n in enumerate(names):
                s.set_token(side, i, n)

        self._guarded(rename)
        self._commit({"tokens"})

    def set_mode(self, mode: str, kind: str | None = None) -> None:
        """``"qkv"`` (edit Q, K, V) or ``"projection"`` (edit X and W); ``kind`` ``"self"`` or ``"cross"``."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self._guarded(lambda s: s.set_mode(mode, kind))
        self._commit({"mode", "dims", "tokens", "matrices", "mask"})

    def set_kind(self, kind: str) -> None:
        self.set_mode(self.state.mode, kind)

    def set_scale(self, scale: float | str) -> None:
        """A positive multiplier for the scores (1.0 = unscaled), or ``"standard"`` for 1/√d_k."""
        if isinstance(scale, str):
            if scale not in ("standard", "sqrt"):
                raise ValueError(f"scale must be a positive number or 'standard', got {scale!r}")
            self._guarded(lambda s: s.set_scale("sqrt"))
        elif float(scale) == 1.0:
            self._guarded(lambda s: s.set_scale("one"))
        else:
            self._guarded(lambda s: s.set_scale("custom", float(scale)))
        self._commit({"scale"})

    def set_scale_mode(self, mode: str, custom: float | None = None) -> None:
        """The scale control's choice: ``"sqrt"`` (1/√d_k), ``"one"`` or ``"custom"`` with its value."""
        self._guarded(lambda s: s.set_scale(mode, custom))
        self._commit({"scale"})

    def set_mask(self, mode: str) -> None:
        """``"none"``, ``"causal"``, ``"padding"`` (toggle keys with ``toggle_padding``) or ``"custom"``."""
        if mode not in MASK_MODES:
            raise ValueError(f"mask must be one of {', '.join(MASK_MODES)}, got {mode!r}")
        self._guarded(lambda s: s.set_mask_mode(mode))
        self._commit({"mask"})

    def toggle_padding(self, key: int) -> None:
        if not 0 <= key < self.state.dims["Lk"]:
            raise ValueError(f"key {key} does not exist (Lk = {self.state.dims['Lk']})")
        self._guarded(lambda s: s.toggle_padding(key))
        self._commit({"mask"})

    def toggle_custom(self, row: int, col: int) -> None:
        lq, lk = self.state.custom_mask.shape
        if not (0 <= row < lq and 0 <= col < lk):
            raise ValueError(f"mask cell ({row}, {col}) is outside the {lq}×{lk} mask")
        self._guarded(lambda s: s.toggle_custom(row, col))
        self._commit({"mask"})

    def set_heads(self, h: int) -> None:
        self._guarded(lambda s: s.set_heads(int(h)))
        self._commit({"heads"})

    def set_device(self, device: str) -> None:
        if device not in self.devices:
            raise ValueError(f"device {device!r} is not available here ({', '.join(self.devices)})")
        self._guarded(lambda s: setattr(s, "device", device))
        self._commit({"device"})

    def load_preset(self, preset: str | Preset, options: dict[str, Any] | None = None) -> None:
        """Load a preset with the options it comes with (a real head's rotary, soft-cap, window), in one step."""
        p = get_preset(preset) if isinstance(preset, str) else preset

        def load(s: PlaygroundState) -> None:
            s.load_preset(p)
            apply_head_options(s, options or {})

        self._guarded(load)  # a given preset's key is what loaded: a real head's options change the numbers
        self._preset, self._preset_key = p, self._presets.remember(p, p is preset, text.story_key(self.state))
        self._commit(set(INPUT_FIELDS), new_inputs=True)

    def restore(self, snap: dict[str, Any]) -> None:
        """Replace every undoable field from a snapshot (validated first: a bad one changes nothing)."""
        fresh = PlaygroundState.from_snapshot(snap)
        device = str(snap.get("device", self.state.device))
        fresh.device = device if device in self.devices else "cpu"
        self._guarded(lambda _s: setattr(self, "state", fresh))
        if fresh.device != device:  # a session saved on a machine with a GPU: say why it computes on the CPU
            self.device_note = f"{device} is not available here; computing on the CPU instead"
            self._device_changed = True
        found = self._presets.find(fresh, self._preset)  # None: a preset this app does not know (a newer app's)
        other = (found or (None,))[0] is not self._preset  # undo of a preset's load, a session: other inputs
        self._preset, self._preset_key = found or (None, None)
        self._commit(set(INPUT_FIELDS), new_inputs=other)

    # ================================================================== machine and view state (not undoable)
    def set_available_devices(self, devices: list[str]) -> None:
        """What the machine offers (detected in the background); the current device falls back to cpu."""
        self.devices = ["cpu", *[d for d in devices if d != "cpu"]]
        fields = {"devices"}
        if self.state.device not in self.devices:
            self.state.device = "cpu"
            fields.add("device")
        self._commit(fields)

    def device_detection_failed(self, reason: str) -> None:
        """Looking for GPUs failed (a broken driver, say): stay on the CPU and say why no GPU is offered."""
        self.device_note = f"looking for GPUs failed ({reason}); computing on the CPU"
        self._device_changed = True
        self._commit({"devices"})

    def pin(self, view: str, row: int, col: int) -> None:
        """Pin a cell of a step (scores|scaled|masked|weights|output) or of the multi-head view's maps."""
        if not cell_exists(self._computation, view, row, col):
            raise ValueError(f"{view} has no cell ({row}, {col})")
        self.pinned = (view, int(row), int(col))
        self._commit({"pinned"})

    def set_shared_range(self, shared: bool) -> None:
        """Share one colour range across ① scores, ② scaled and ③ masked (True), or give each its own."""
        if bool(shared) != self.shared_range:
            self.shared_range = bool(shared)
            self._commit({"colours"})

    def unpin(self) -> None:
        if self.pinned is not None:
            self.pinned = None
            self._commit({"pinned"})

    def hover(self, view: str | None, row: int = -1, col: int = -1) -> None:
        """The cell under the mouse (``None`` or a negative row: none); the explanation follows it."""
        cell: Cell | None = None
        if view is not None and row >= 0 and cell_exists(self._computation, view, row, col):
            cell = (view, row, col)
        if cell != self.hovered:
            self.hovered = cell
            self._commit({"hovered"})

    # ================================================================== internals
    def _guarded(self, fn: Callable[[PlaygroundState], object], revert: Callable[[], object] | None = None) -> None:
        """Run a state mutation and compute its result; if either raises ValueError or the numbers overflow, put
        everything back as it was and re-raise: the model never holds a state it cannot show."""
        state = self.state
        before = None if revert is not None else copy.deepcopy(state)
        try:
            fn(state)
            self._pending = self._compute_checked()
        except ValueError:
            if revert is not None:
                revert()
            else:
                assert before is not None
                self.state = before
            raise

    def _compute_checked(self) -> Result:
        """The result of the current state (``compute_shown``); ValueError when it cannot be shown. A failing GPU
        falls back to the CPU and says so in ``device_note``."""
        result, note = compute_shown(self.state)
        if note:
            self.device_note, self._device_changed = note, True
        return result

    def _explain(self, cell: Cell | None) -> Explanation:
        if cell is None:
            return Explanation("")
        view, i, j = cell
        return (explain if view in CELL_VIEWS else explain_multihead)(view, i, j, self.state, self._computation)

    def _commit(self, fields: set[str], matrices: frozenset[str] = frozenset(), new_inputs: bool = False) -> None:
        """Recompute everything derived, then emit one event per changed thing and ``changed``."""
        if "device" in fields and not self._device_changed:
            self.device_note = ""  # the user chose a device: an old failure no longer describes it
        if fields & INPUT_FIELDS:
            self._computation = self._pending if self._pending is not None else self._compute_checked()
            self._pending = None
            fields.add("result")
            res, st = self._computation, self.state
            self.captions = text.step_captions(st, res)
            self.status = text.status_text(res)
            self.saturation = text.saturation_html(st, res)
            self.heads_info = text.heads_info_html(st)
            self.heads_banner = text.heads_banner_html(st)
            self.flow = text.flow_html(st, res)
            if "matrices" in fields and not matrices:
                matrices = frozenset(st.matrices)
        if fields & {"result", "blocks"}:
            self._flash = None  # computed again when asked for (``flash``)
            fields.add("flash")
        if fields & {"result", "colours"}:
            # "⚠ range changed" answers an edit; a preset's (or a real head's) new inputs changed no range
            self.colours = step_colours(self._computation.steps, self.shared_range,
                                        previous=None if new_inputs else self.colours)
        if self._device_changed:
            self._device_changed = False
            fields.add("device")
        for attr in ("pinned", "hovered"):
            cell = getattr(self, attr)
            if cell is not None and not cell_exists(self._computation, *cell):
                setattr(self, attr, None)  # a cell that no longer exists cannot stay pinned
                fields.add(attr)
        story = text.story_text(self.state, self._computation, self._preset, self._preset_key)
        if story != self.story:
            self.story = story
            fields.add("story")
        if fields & {"result", "pinned", "hovered"}:
            ex = self._explain(self.hovered or self.pinned)
            highlights = with_projection_sources(ex.highlight, self.state) if ex.html else {}
            if ex.html != self.explanation_html or highlights != self.highlights:
                self.explanation_html, self.highlights = ex.html, highlights
                fields.add("explanation")
        self._announce(*(name for name in ANNOUNCED_ORDER if name in fields),
                       **({"matrices": matrices} if "matrices" in fields else {}))
