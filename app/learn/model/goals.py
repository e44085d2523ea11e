"""A step's playground side: the state it opens with (``state_change``, ``pin``) and its do goals (``scale``,
``mask``, ``heads``, ``points_at``, ``edit``): whether one is met by the model now, how "show me" makes it, and
the *premises* of a step — the goals of earlier do steps that a step builds on ("The causal mask sets …" needs step
3's causal mask). Undo step 3's mask and the premise is broken: the step says so (``broken_note``) instead of
describing a mask that is gone. Qt-free; ``LessonRun`` asks here.

Goals over the Training tab, the Lab and the Model tab are ``app.learn.model.links``'s: they are never premises (a
run is not undone by Ctrl+Z).

Today's attention options: a step's ``state`` may also hold ``rotary`` (null: off; a base such as 10000; or
``{"base", "dims"}``), ``alibi`` (true/false), ``softcap`` (null or a positive number), ``window`` (``{"window": W,
"sinks": S}``; the mask ``"sliding"`` uses them), ``kv_heads`` (null: as many as heads) and ``blocks`` (``[block_q,
block_k]``); a do step's ``goal`` ``{"rotary": true}``, ``{"alibi": true}``, ``{"kv_heads": 2}``, ``{"blocks": [4,
2]}``, ``{"window": {"window": 3, "sinks": 1}}`` (the sliding mask with those) or ``{"mask": "sliding"}``. Every
lesson starts from ``START`` (all of them off) unless its own ``state`` says otherwise."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from app.learn.model.context import pointing_row, token_index
from app.playground.model.playground import PlaygroundModel

Apply = Callable[[str, Callable[[PlaygroundModel], Any]], bool]
OPTION_STATE_KEYS = frozenset({"rotary", "alibi", "softcap", "window", "kv_heads", "blocks"})
OPTION_GOALS = ("rotary", "alibi", "kv_heads", "blocks", "window")
MASKS = ("none", "causal", "padding", "sliding")
"""The masks a lesson's state or goal may choose (a custom mask is drawn, never named)."""
OPTION_CLEARED_BY = {"rotary": ("rotary",), "alibi": ("alibi",), "kv_heads": ("kv_heads",), "blocks": ("blocks",),
              "window": ("window",), "mask": ("window",), "heads": ("kv_heads",)}
"""A step's ``state`` key → the earlier option goals it replaces."""
START = {"rotary": None, "alibi": False, "softcap": None, "kv_heads": None, "blocks": [2, 2]}
"""What every lesson starts from (the attention of 2017), unless its own ``state`` says otherwise."""
LOCAL_GOALS = ("scale", "mask", "heads", "points_at", "edit", *OPTION_GOALS)
"""The goals met in the playground itself (and undone with it)."""
_CLEARED_BY = {"preset": LOCAL_GOALS, "session": LOCAL_GOALS, "mode": ("points_at", "edit"),
               "dims": ("points_at", "edit"), "cells": ("points_at", "edit"), "scale": ("scale",),
               "mask": ("mask", "window"), "padding": ("mask",), "heads": ("heads", "kv_heads"),
               **{k: v for k, v in OPTION_CLEARED_BY.items() if k not in ("mask", "heads")}}
"""A step's ``state`` (or ``session``) key → the earlier goals it replaces: what it sets is the step's own doing."""


def premises(steps: list[dict[str, Any]], index: int) -> list[tuple[int, dict[str, Any]]]:
    """(step index, goal) of the do step whose goal a look or predict step ``index`` builds on: the latest do step
    before it, when its goal is a playground one and no step's ``state`` (or ``session``) since has set what it is
    about. A do step has none: there the learner changes the playground, and may undo an earlier goal on purpose
    (a causal mask takes a query's weight off a later key)."""
    if steps[index]["kind"] == "do":
        return []
    latest: tuple[int, dict[str, Any]] | None = None
    for i, st in enumerate(steps[: index + 1]):
        keys = [*st.get("state", {}), *(["session"] if "session" in st else [])]
        if latest is not None and any(next(iter(latest[1])) in _CLEARED_BY.get(k, ()) for k in keys):
            latest = None
        if i < index and st["kind"] == "do":
            goal = st.get("goal") or {}
            latest = (i, goal) if next(iter(goal), None) in LOCAL_GOALS else None
    return [latest] if latest is not None else []


def broken_note(broken: list[tuple[int, dict[str, Any]]], steps: list[dict[str, Any]], model: PlaygroundModel) -> str:
    """What a step says while its premises ``broken`` do not hold: which earlier step made what, how it is now."""
    parts = []
    for i, goal in broken:
        wanted, now = describe(goal, model)
        title = steps[i].get("title")
        parts.append(f"step {i + 1}{f' ({title})' if title else ''} made {wanted}; {now}")
    return ("This step builds on what is undone now: " + "; ".join(parts) + ". Make it again (Redo, or Show me) "
            "or press Back: the step's text comes back once it holds.")


def broken(steps: list[dict[str, Any]], index: int, model: PlaygroundModel,
           baselines: dict[int, np.ndarray | None]) -> list[tuple[int, dict[str, Any]]]:
    """The premises of step ``index`` (earlier do steps' goals it builds on) that do not hold now."""
    out = []
    for i, goal in premises(steps, index):
        try:
            held = met(goal, model, baselines.get(i))
        except ValueError:  # a token or matrix the playground no longer has: the premise cannot hold
            held = False
        if not held:
            out.append((i, goal))
    return out


def met(goal: dict[str, Any], model: PlaygroundModel, baseline: np.ndarray | None) -> bool:
    """Whether a local goal holds now; ``edit``: the row differs from ``baseline`` (the row when its step opened;
    None: unknown, taken as held)."""
    (name, v), = goal.items()
    m = model
    if name in OPTION_GOALS:
        return _option_met(name, v, m)
    if name == "scale":
        return m.scale_mode == "sqrt" if v == "standard" else math.isclose(m.result.scale, float(v))
    if name == "mask":
        return bool(m.mask_mode == v)
    if name == "heads":
        return bool(m.num_heads == v)
    if name == "points_at":
        try:
            q, k = token_index(m.query_tokens, v["query"]), token_index(m.key_tokens, v["key"])
        except ValueError:  # the learner's own tokens or preset: the tokens the goal names are gone
            return False
        return int(np.argmax(m.result.weights[q])) == k
    if baseline is None:
        return True
    row = target(goal, m)
    return row is not None and (row.shape != baseline.shape or not np.array_equal(row, baseline))


def perform(goal: dict[str, Any], model: PlaygroundModel, apply: Apply) -> tuple[bool, str]:
    """Make a local goal through ``apply`` (one undo step): (done, a message when it cannot be done here)."""
    (name, v), = goal.items()
    m = model
    if name in OPTION_GOALS:
        return apply(f"Lesson: show me ({name})", _option_perform(name, v)), ""
    if name == "scale":
        return apply("Lesson: show me (scale)", lambda mm: mm.set_scale("standard" if v == "standard" else v)), ""
    if name == "mask":
        return apply("Lesson: show me (mask)", lambda mm: mm.set_mask(v)), ""
    if name == "heads":
        return apply("Lesson: show me (heads)", lambda mm: mm.set_heads(v)), ""
    if name == "points_at":
        row = pointing_row(m, v["query"], v["key"])
        if row is None:
            return False, "Show me cannot do this one here: edit the Q row yourself."
        q = token_index(m.query_tokens, v["query"])
        return apply("Lesson: show me (point Q)", lambda mm: mm.set_block("Q", q, 0, row.reshape(1, -1))), ""
    mat, r = edit_cell(goal, m)
    return apply("Lesson: show me (edit)",
                 lambda mm: mm.set_cell(mat, r, 0, float(mm.matrices[mat][r, 0]) + 1.0)), ""


def edit_cell(goal: dict[str, Any], model: PlaygroundModel) -> tuple[str, int]:
    """The (matrix, row) of an ``edit`` goal; ValueError when the matrix is not in use in this mode."""
    e = goal["edit"]
    mat = str(e["matrix"])
    if mat not in model.matrices:
        raise ValueError(f"there is no matrix {mat} to edit in this mode ({', '.join(model.matrices)})")
    tokens = model.query_tokens if mat in ("Q", "X", "X_q") else model.key_tokens
    return mat, token_index(tokens, e["row"])


def target(goal: dict[str, Any], model: PlaygroundModel) -> np.ndarray | None:
    """An ``edit`` goal's row as it is now (None for another goal, or a row that no longer exists)."""
    if "edit" not in goal:
        return None
    try:
        mat, r = edit_cell(goal, model)
    except ValueError:
        return None
    return np.array(model.matrices[mat][r], copy=True)


def describe(goal: dict[str, Any], model: PlaygroundModel) -> tuple[str, str]:
    """(what the goal made, how it is now) in words, for the note of a broken premise."""
    (name, v), = goal.items()
    m = model
    if name in OPTION_GOALS:
        return _option_describe(name, v, m)
    if name == "scale":
        wanted = "the scale 1/√d_k" if v == "standard" else f"the scale {float(v):g}"
        return wanted, f"the scale is {m.result.scale:.3g} now"
    if name == "mask":
        return f"the {v} mask", f"the mask is {m.mask_mode} now"
    if name == "heads":
        return f"{v} heads", f"there {'is 1 head' if m.num_heads == 1 else f'are {m.num_heads} heads'} now"
    if name == "points_at":
        wanted = f"'{v['query']}' pointing at '{v['key']}'"
        try:
            q = token_index(m.query_tokens, v["query"])
            token_index(m.key_tokens, v["key"])
        except ValueError:
            return wanted, f"the tokens are {', '.join(m.query_tokens)} now"
        now = m.key_tokens[int(np.argmax(m.result.weights[q]))]
        return wanted, f"it points at '{now}' now"
    e = v
    return f"your edit of {e['matrix']} row '{e['row']}'", "that row is back as it was"


# ---------------------------------------------------------------------------------------------- a step opens
def state_change(st: dict[str, Any]) -> Callable[[PlaygroundModel], None]:
    """The model calls that put a step's ``state`` (``app.learn.model.schema``) on the playground, for ``apply``."""
    def change(m: PlaygroundModel) -> None:
        if st.get("preset"):
            m.load_preset(st["preset"])
        if st.get("mode") and st["mode"] != m.mode:
            m.set_mode(st["mode"])
        for dim, n in st.get("dims", {}).items():
            if m.dims[dim] != n:
                m.set_dim(dim, n)
        if "scale" in st:
            m.set_scale(st["scale"])
        _options_before_heads(m, st)
        if "heads" in st and m.num_heads != st["heads"]:
            m.set_heads(st["heads"])
        _apply_options(m, st)
        if "padding" in st:
            blocked = {token_index(m.key_tokens, k) for k in st["padding"]}
            for k, keep in enumerate(list(m.padding_keep)):
                if keep == (k in blocked):
                    m.toggle_padding(k)
        if "mask" in st and m.mask_mode != st["mask"]:
            m.set_mask(st["mask"])
        for c in st.get("cells", []):
            tokens = m.query_tokens if c["matrix"] in ("Q", "X", "X_q") else m.key_tokens
            m.set_cell(c["matrix"], token_index(tokens, c["row"]), int(c["col"]), float(c["value"]))
    return change


def pin(model: PlaygroundModel, h: dict[str, Any]) -> None:
    """Pin a step's ``highlight`` cell; none when the learner's tokens no longer have it (the text says the rest)."""
    m = model
    try:
        row = token_index(m.query_tokens, h.get("row", 0))
        tokens = m.key_tokens if h["map"] != "output" else [str(i) for i in range(m.result.output.shape[1])]
        col = token_index(tokens, h.get("col", 0)) if not isinstance(h.get("col", 0), int) else int(h.get("col", 0))
        m.pin(h["map"], row, col)
    except ValueError:
        m.unpin()


def direct_apply(model: PlaygroundModel) -> Apply:
    """``apply`` without an undo stack: call the model; a refused edit (ValueError) returns False."""
    def apply(_text: str, fn: Callable[[PlaygroundModel], Any]) -> bool:
        try:
            fn(model)
        except ValueError:
            return False
        return True
    return apply


# ---------------------------------------------------------------------------------------------- today's options
def _int(v: Any, low: int = 1) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _positive(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def option_state_problem(key: str, v: Any) -> str:
    """"" or why ``v`` is no value for the state key ``key`` (one of ``STATE_KEYS``)."""
    if key == "rotary" and not (v is None or _positive(v) or (
            isinstance(v, dict) and set(v) <= {"base", "dims"} and _positive(v.get("base"))
            and (v.get("dims") is None or _int(v["dims"], 2)))):
        return "rotary must be null (off), a positive base such as 10000, or {\"base\": 10000, \"dims\": 4}"
    if key == "alibi" and not isinstance(v, bool):
        return "alibi must be true or false"
    if key == "softcap" and not (v is None or _positive(v)):
        return "softcap must be null (off) or a positive number"
    if key == "window" and not (isinstance(v, dict) and set(v) <= {"window", "sinks"} and _int(v.get("window"))
                                and _int(v.get("sinks", 0), 0)):
        return "window must be {\"window\": W (1 or more), \"sinks\": S (0 or more)}"
    if key == "kv_heads" and not (v is None or _int(v)):
        return "kv_heads must be null (as many as heads) or a whole number >= 1"
    if key == "blocks" and not (isinstance(v, list) and len(v) == 2 and all(_int(b) for b in v)):
        return "blocks must be [block_q, block_k], whole numbers >= 1"
    return ""


def option_goal_problem(name: str, v: Any) -> str:
    """"" or why ``v`` is no value for the goal ``name`` (one of ``GOALS``)."""
    if name in ("rotary", "alibi"):
        return "" if v is True else f"goal {name} must be true"
    return option_state_problem(name, v)


def check_option_state(checker: Any, st: dict[str, Any], path: tuple[Any, ...]) -> None:
    """Report every bad option of a step's ``state`` through the schema's checker."""
    for key in OPTION_STATE_KEYS & set(st):
        problem = option_state_problem(key, st[key])
        if problem:
            checker.bad((*path, key), problem)


def _rotary(v: Any) -> tuple[float | None, int | None]:
    if isinstance(v, dict):
        return float(v["base"]), v.get("dims")
    return (None, None) if v is None else (float(v), None)


def _options_before_heads(m: PlaygroundModel, st: dict[str, Any]) -> None:
    """Grouped K/V heads undone before the heads change (they must divide the new count)."""
    if "kv_heads" in st and m.num_kv_heads is not None:
        m.set_kv_heads(None)


def _apply_options(m: PlaygroundModel, st: dict[str, Any]) -> None:
    """Put a step's options on the playground (after its dims and heads, before its mask); only what differs."""
    if "rotary" in st and (m.rotary_base, m.rotary_dims) != _rotary(st["rotary"]):
        m.set_rotary(*_rotary(st["rotary"]))
    if "alibi" in st and m.alibi != st["alibi"]:
        m.set_alibi(st["alibi"])
    if "softcap" in st and m.softcap != st["softcap"]:
        m.set_softcap(st["softcap"])
    if "window" in st:
        w = st["window"]
        if (m.window, m.sinks) != (w["window"], w.get("sinks", 0)):
            m.set_window(w["window"], w.get("sinks", 0))
    if st.get("kv_heads") is not None and m.num_kv_heads != st["kv_heads"]:
        m.set_kv_heads(st["kv_heads"])
    if "blocks" in st and [m.block_q, m.block_k] != list(st["blocks"]):
        m.set_blocks(*st["blocks"])


def _option_met(name: str, v: Any, m: PlaygroundModel) -> bool:
    if name == "rotary":
        return m.rotary_base is not None
    if name == "alibi":
        return bool(m.alibi)
    if name == "kv_heads":
        return bool(m.kv_heads == v)
    if name == "blocks":
        return [m.block_q, m.block_k] == list(v)
    return m.mask_mode == "sliding" and (m.window, m.sinks) == (v["window"], v.get("sinks", 0))


def _option_perform(name: str, v: Any) -> Callable[[PlaygroundModel], None]:
    """The model calls "show me" makes for a goal of this module."""
    def make(m: PlaygroundModel) -> None:
        if name == "rotary":
            m.set_rotary(10000.0)
        elif name == "alibi":
            m.set_alibi(True)
        elif name == "kv_heads":
            m.set_kv_heads(v)
        elif name == "blocks":
            m.set_blocks(*v)
        else:
            m.set_window(v["window"], v.get("sinks", 0))
            if m.mask_mode != "sliding":
                m.set_mask("sliding")
    return make


def _option_describe(name: str, v: Any, m: PlaygroundModel) -> tuple[str, str]:
    """(what the goal made, how it is now) in words, for the note of a broken premise."""
    if name == "rotary":
        return "rotary positions on", "rotary is off now"
    if name == "alibi":
        return "ALiBi on", "ALiBi is off now"
    if name == "kv_heads":
        return f"{v} K/V heads", f"there are {m.kv_heads} now"
    if name == "blocks":
        return f"tiles of {v[0]} × {v[1]}", f"they are {m.block_q} × {m.block_k} now"
    now = f"the mask is {m.mask_mode}" + (f" (W = {m.window}, S = {m.sinks})" if m.mask_mode == "sliding" else "")
    return f"a sliding window of {v['window']} with {v.get('sinks', 0)} sink(s)", f"{now} now"
