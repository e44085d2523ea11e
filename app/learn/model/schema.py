"""The lesson file format (JSON) and its validation, with the line of every problem. Qt-free.

A lesson::

    {"id": "dot-product", "title": "Dot product as similarity", "preset": "it-animal-street",
     "state": {"scale": "standard", "mask": "none"},            (optional: applied at the start)
     "precision": 3,                                            (optional: decimals of a number shown plainly)
     "steps": [ 5 to 15 steps ]}                                (1 to 4: a draft, loaded to try when asked)

Every step has ``kind`` (look | do | predict) and ``text`` (placeholders such as ``{weights[it][animal]:.2f}`` are
filled live, see ``app.learn.model.expr``); optional ``title``, ``session`` (the whole playground as a session file
holds it, restored when the step opens, before its ``state``), ``state`` (applied when the step opens: ``preset``,
``scale`` ("standard" or a positive number), ``mask`` (none | causal | padding | sliding), ``padding`` (blocked
keys), ``heads``, ``cells`` ([{"matrix", "row", "col", "value"}]: input edits)) and ``highlight`` ({"map", "row",
"col"}: the cell the text talks about, pinned).
- ``do``: ``goal``, exactly one of ``{"scale": 1 | "standard" | x}``, ``{"mask": "causal"}``, ``{"heads": 2}``,
  ``{"points_at": {"query": "it", "key": "street"}}`` (that query's largest weight is on that key), ``{"edit":
  {"matrix": "K", "row": "mat"}}`` (any cell of that row changed), the options' (``app.learn.model.goals``: rotary,
  ALiBi, sliding window, K/V heads, tiles; their state keys too); over the Training tab (``app.learn.model.training``):
  ``{"trained": 0.99}`` (a run started in this step reached that greedy accuracy), ``{"causal": false}`` (a run with /
  without the causal mask reached 99 % teacher-forced, or its end), ``{"ablate": "best"}`` (the head with the best
  reversal score switched off) or ``{"ablate": "best-layer"}`` (every head of its layer); over the Lab
  (``app.learn.model.lab``): ``{"measured": true}`` (a measurement started in this step finished).
- ``predict``: ``ask``, one of ``{"type": "choice", "choices": [...], "answer": EXPR}``,
  ``{"type": "number", "answer": EXPR, "tolerance": 0.01}``, ``{"type": "cell", "map": "weights", "row": "sat",
  "answer": EXPR}`` (the key the learner clicks in that row); optional ``cover`` (the maps hidden until the
  reveal) and ``why`` (shown with the feedback). The answer is always an expression: computed, never typed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from app.learn.model.expr import LessonExprError, parse, placeholders
from app.learn.model.goals import MASKS, OPTION_GOALS, OPTION_STATE_KEYS, check_option_state, option_goal_problem
from app.learn.model.lab import LAB_GOALS
from app.learn.model.model_tab import HEAD_SETS, MODEL_GOALS
from app.learn.model.training import ABLATE_TARGETS, TRAINING_GOALS
from app.playground.model.state import PlaygroundState
from attention_core.presets import PRESET_NAMES
from attention_core.steps import STEP_NAMES

MIN_STEPS, MAX_STEPS = 5, 15
DEFAULT_PRECISION, MAX_PRECISION = 3, 6
"""A lesson's ``precision`` when it declares none: numbers shown with 3 decimals at most (0.284, 12.5, 4)."""
KINDS, ASK_TYPES = ("look", "do", "predict"), ("choice", "number", "cell")
GOALS = ("scale", "mask", "heads", "points_at", "edit", *TRAINING_GOALS, *LAB_GOALS, *MODEL_GOALS, *OPTION_GOALS)
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_STEP_KEYS = {"kind", "title", "text", "state", "session", "highlight", "view"}
VIEWS = ("steps", "multihead", "vectors", "flow", "tiles", "three_d",
         "lab", "training", "ablate", "model", "detect", "generate")
"""The views a step may bring to the front (``"view"``): the playground's, the Lab, the Training tab (its Ablate
tab: ``"ablate"``), the Model tab (its Detect view: ``"detect"``)."""
COVERS = (*STEP_NAMES, "multihead", "detect", "scan")
"""What a predict step may cover: the five step maps, the whole Multi-head view, and the Model tab's detector scores
(``detect``: the Detect view's grid, heads list and outlines) and ablation scan (``scan``)."""
_KIND_KEYS = {"look": set(), "do": {"goal", "hint"}, "predict": {"ask", "cover", "why"}}
_STATE_KEYS = {"preset", "mode", "dims", "scale", "mask", "padding", "heads", "cells", *OPTION_STATE_KEYS}
DIMS = ("Lq", "Lk", "d_k", "d_v", "d_model")
_ASK_KEYS = {"choice": {"type", "choices", "answer"}, "number": {"type", "answer", "tolerance"},
             "cell": {"type", "map", "row", "answer"}}

Path_ = tuple[Any, ...]


@dataclass(frozen=True)
class Problem:
    line: int
    reason: str

    def format(self, file: str) -> str:
        return f"{file}:{self.line}: {self.reason}"


class LessonFileError(ValueError):
    """A lesson file that cannot be used; ``problems`` each carry a line and a reason."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        self.file, self.problems = file, problems
        super().__init__("\n".join(p.format(file) for p in problems))


# ---------------------------------------------------------------------------------------------- where values are
def positions(text: str) -> dict[Path_, int]:
    """The line (1-based) of every key and value of a valid JSON text, by path (``("steps", 2, "ask")``)."""
    out: dict[Path_, int] = {}
    ws = re.compile(r"[ \t\n\r]*")
    literal = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")

    def line(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    def skip(pos: int) -> int:
        m = ws.match(text, pos)
        return m.end() if m else pos

    def value(pos: int, path: Path_) -> int:
        pos = skip(pos)
        out.setdefault(path, line(pos))
        c = text[pos]
        if c == "{":
            pos = skip(pos + 1)
            if text[pos] == "}":
                return pos + 1
            while True:
                pos = skip(pos)
                key, end = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
                out[path + (key,)] = line(pos)
                pos = skip(end) + 1  # past ':'
                pos = skip(value(pos, (*path, key)))
                if text[pos] == "}":
                    return pos + 1
                pos += 1  # ','
        if c == "[":
            pos = skip(pos + 1)
            if text[pos] == "]":
                return pos + 1
            i = 0
            while True:
                pos = skip(value(pos, (*path, i)))
                i += 1
                if text[pos] == "]":
                    return pos + 1
                pos += 1
        if c == '"':
            return int(json.decoder.scanstring(text, pos + 1)[1])  # type: ignore[attr-defined]
        m = literal.match(text, pos)
        return m.end() if m else pos + 1

    value(0, ())
    return out


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise _Duplicate(k)
        seen[k] = v
    return seen


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def load_json(text: str, file: str) -> tuple[dict[str, Any], dict[Path_, int]]:
    """Parse a lesson file: (data, positions); ``LessonFileError`` for bad JSON, a duplicate key or a non-object."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except _Duplicate as dup:
        m = re.search(r'"' + re.escape(dup.key) + r'"\s*:', text)
        lines = [text.count("\n", 0, x.start()) + 1 for x in re.finditer(r'"' + re.escape(dup.key) + r'"\s*:', text)]
        at = lines[1] if len(lines) > 1 else (text.count("\n", 0, m.start()) + 1 if m else 1)
        raise LessonFileError(file, [Problem(at, f"duplicate key {dup.key!r}")]) from None
    except json.JSONDecodeError as exc:
        raise LessonFileError(file, [Problem(exc.lineno, f"not valid JSON: {exc.msg}")]) from None
    if not isinstance(data, dict):
        raise LessonFileError(file, [Problem(1, "a lesson must be a JSON object {...}")])
    return data, positions(text)


# ---------------------------------------------------------------------------------------------- the schema
class _Checker:
    def __init__(self, pos: dict[Path_, int]) -> None:
        self.pos = pos
        self.problems: list[Problem] = []

    def line(self, path: Path_) -> int:
        while path and path not in self.pos:
            path = path[:-1]
        return self.pos.get(path, 1)

    def bad(self, path: Path_, reason: str) -> None:
        self.problems.append(Problem(self.line(path), reason))

    def keys(self, obj: dict[str, Any], allowed: set[str], path: Path_, what: str) -> None:
        for k in obj:
            if k not in allowed:
                self.bad((*path, k), f"unknown key {k!r} in {what} (allowed: {', '.join(sorted(allowed))})")

    def text(self, value: Any, path: Path_, what: str, required: bool = True) -> None:
        if value is None and not required:
            return
        if not isinstance(value, str) or not value.strip():
            self.bad(path, f"{what} must be a non-empty string")
            return
        try:
            placeholders(value)
        except LessonExprError as exc:
            self.bad(path, f"{what}: {exc}")

    def expr(self, value: Any, path: Path_, what: str) -> None:
        if not isinstance(value, str) or not value.strip():
            self.bad(path, f"{what} must be an expression (a string such as \"argmax(weights[it])\")")
            return
        try:
            parse(value)
        except LessonExprError as exc:
            self.bad(path, f"{what}: {exc}")

    def obj(self, value: Any, path: Path_, what: str) -> bool:
        if not isinstance(value, dict):
            self.bad(path, f"{what} must be an object {{...}}")
            return False
        return True

    def state(self, st: Any, path: Path_) -> None:
        if not self.obj(st, path, "state"):
            return
        self.keys(st, _STATE_KEYS, path, "state")
        if "preset" in st and not _preset_ok(st["preset"]):
            self.bad((*path, "preset"), f"unknown preset {st['preset']!r} (one of {', '.join(PRESET_NAMES)})")
        if "mode" in st and st["mode"] not in ("qkv", "projection"):
            self.bad((*path, "mode"), "mode must be \"qkv\" (edit Q, K, V) or \"projection\" (edit X and W)")
        if "dims" in st and not (isinstance(st["dims"], dict) and all(
                k in DIMS and isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 64
                for k, v in st["dims"].items())):
            self.bad((*path, "dims"), f"dims must map {', '.join(DIMS)} to whole numbers 1..64")
        if "scale" in st and not _scale_ok(st["scale"]):
            self.bad((*path, "scale"), "scale must be \"standard\" or a positive number")
        if "mask" in st and st["mask"] not in MASKS:
            self.bad((*path, "mask"), f"mask must be one of {', '.join(MASKS)} (got {st['mask']!r})")
        check_option_state(self, st, path)
        if "heads" in st and not (isinstance(st["heads"], int) and not isinstance(st["heads"], bool)
                                  and st["heads"] >= 1):
            self.bad((*path, "heads"), "heads must be a whole number >= 1")
        if "padding" in st and not (isinstance(st["padding"], list)
                                    and all(isinstance(k, (str, int)) for k in st["padding"])):
            self.bad((*path, "padding"), "padding must be a list of key tokens (names or positions)")
        for i, c in enumerate(st.get("cells", []) if isinstance(st.get("cells", []), list) else [None]):
            p = (*path, "cells", i)
            if not self.obj(c, p, "a cell edit") or set(c) != {"matrix", "row", "col", "value"}:
                if isinstance(c, dict):
                    self.bad(p, "a cell edit needs exactly matrix, row, col, value")
                continue
            if not isinstance(c["value"], (int, float)) or isinstance(c["value"], bool):
                self.bad((*p, "value"), "value must be a number")

    def session(self, snap: Any, path: Path_) -> None:
        """A whole playground in the session-file format's ``state`` (``PlaygroundModel.snapshot()``)."""
        if not self.obj(snap, path, "session"):
            return
        try:
            PlaygroundState.from_snapshot(snap)
        except (ValueError, RecursionError) as exc:
            self.bad(path, f"session: {exc}")

    def step(self, s: Any, i: int) -> None:
        path: Path_ = ("steps", i)
        if not self.obj(s, path, f"step {i + 1}"):
            return
        kind = s.get("kind")
        if kind not in KINDS:
            self.bad((*path, "kind") if "kind" in s else path,
                     f"step {i + 1}: kind must be one of {', '.join(KINDS)} (got {kind!r})")
            return
        self.keys(s, _STEP_KEYS | _KIND_KEYS[kind], path, f"a {kind} step")
        self.text(s.get("text"), (*path, "text"), f"step {i + 1}'s text")
        if "title" in s:
            self.text(s["title"], (*path, "title"), f"step {i + 1}'s title")
        if "session" in s:
            self.session(s["session"], (*path, "session"))
        if "state" in s:
            self.state(s["state"], (*path, "state"))
        if "view" in s and s["view"] not in VIEWS:
            self.bad((*path, "view"), f"view must be one of {', '.join(VIEWS)}")
        if "highlight" in s and self.obj(s["highlight"], (*path, "highlight"), "highlight"):
            h = s["highlight"]
            self.keys(h, {"map", "row", "col"}, (*path, "highlight"), "highlight")
            if h.get("map") not in STEP_NAMES:
                self.bad((*path, "highlight"), f"highlight map must be one of {', '.join(STEP_NAMES)}")
        if kind == "do":
            self.goal(s.get("goal"), (*path, "goal"), i)
            if "hint" in s:
                self.text(s["hint"], (*path, "hint"), "hint")
        elif kind == "predict":
            self.ask(s.get("ask"), (*path, "ask"), i)
            if "why" in s:
                self.text(s["why"], (*path, "why"), "why")
            cover = s.get("cover", [])
            odd = [i for i, c in enumerate(cover) if c not in COVERS] if isinstance(cover, list) else [None]
            if odd:
                at = (*path, "cover") if odd[0] is None else (*path, "cover", odd[0])
                self.bad(at, f"cover must be a list of maps among {', '.join(COVERS)}")

    def goal(self, g: Any, path: Path_, i: int) -> None:
        if g is None:
            self.bad(path[:-1], f"step {i + 1}: a do step needs a goal")
            return
        if not self.obj(g, path, "goal"):
            return
        if len(g) != 1 or next(iter(g)) not in GOALS:
            odd = [k for k in g if k not in GOALS]
            self.bad((*path, odd[0]) if odd else path,
                     f"a goal has exactly one of {', '.join(GOALS)} (got {', '.join(g) or 'nothing'})")
            return
        (name, v), = g.items()
        p = (*path, name)
        if name == "scale" and not _scale_ok(v):
            self.bad(p, "goal scale must be \"standard\" or a positive number")
        elif name == "mask" and v not in MASKS:
            self.bad(p, f"goal mask must be one of {', '.join(MASKS)} (got {v!r})")
        elif name in OPTION_GOALS and option_goal_problem(name, v):
            self.bad(p, option_goal_problem(name, v))
        elif name == "heads" and not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            self.bad(p, "goal heads must be a whole number >= 1")
        elif name == "points_at" and not (isinstance(v, dict) and set(v) == {"query", "key"}):
            self.bad(p, "points_at needs exactly {\"query\": token, \"key\": token}")
        elif name == "edit" and not (isinstance(v, dict) and set(v) == {"matrix", "row"}):
            self.bad(p, "edit needs exactly {\"matrix\": name, \"row\": token or position}")
        elif name == "trained" and not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1):
            self.bad(p, "goal trained must be the greedy accuracy to reach, a fraction in (0, 1] such as 0.99")
        elif name == "causal" and not isinstance(v, bool):
            self.bad(p, "goal causal must be true or false (train with or without the causal mask)")
        elif name in ("model_open", "model_detected") and v is not True:
            self.bad(p, f"goal {name} must be true")
        elif name == "model_heads_off" and v not in HEAD_SETS:
            self.bad(p, f"goal model_heads_off must be one of {', '.join(HEAD_SETS)}")
        elif name == "measured" and v is not True:
            self.bad(p, "goal measured must be true (a measurement in the Lab finished)")
        elif name == "ablate" and v not in ABLATE_TARGETS:
            self.bad(p, "goal ablate must be \"best\" (the head with the best reversal score) or \"best-layer\" "
                        "(every head of its layer)")

    def ask(self, a: Any, path: Path_, i: int) -> None:
        if a is None:
            self.bad(path[:-1], f"step {i + 1}: a predict step needs an ask")
            return
        if not self.obj(a, path, "ask"):
            return
        t = a.get("type")
        if t not in ASK_TYPES:
            self.bad((*path, "type") if "type" in a else path, f"ask type must be one of {', '.join(ASK_TYPES)}")
            return
        self.keys(a, _ASK_KEYS[t], path, f"a {t} ask")
        if "answer" not in a:
            self.bad(path, "an ask needs an answer expression (computed, never typed)")
        else:
            self.expr(a["answer"], (*path, "answer"), "answer")
        if t == "choice":
            ch = a.get("choices")
            if not (isinstance(ch, list) and len(ch) >= 2 and all(isinstance(c, str) and c for c in ch)
                    and len(set(ch)) == len(ch)):
                self.bad((*path, "choices"), "choices must be a list of at least 2 different strings")
        elif t == "number":
            tol = a.get("tolerance", 0.01)
            if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and tol > 0):
                self.bad((*path, "tolerance"), "tolerance must be a positive number")
        elif t == "cell" and a.get("map") not in STEP_NAMES[:4]:
            self.bad((*path, "map"), "a cell ask's map must be one of scores, scaled, masked, weights")


def _preset_ok(name: Any) -> bool:
    return isinstance(name, str) and (name in PRESET_NAMES or re.fullmatch(r"random-\d+", name) is not None)


def _scale_ok(v: Any) -> bool:
    return v == "standard" or (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0)


def check_lesson(data: dict[str, Any], pos: dict[Path_, int], drafts: bool = False) -> list[Problem]:
    """Every problem of the schema (without running anything), each with its line. ``drafts``: a lesson with fewer
    steps than ``MIN_STEPS`` (but one at least) is no problem: a teacher's draft, opened to try (``is_draft``)."""
    c = _Checker(pos)
    c.keys(data, {"id", "title", "preset", "summary", "state", "steps", "precision"}, (), "a lesson")
    p = data.get("precision", DEFAULT_PRECISION)
    if not (isinstance(p, int) and not isinstance(p, bool) and 0 <= p <= MAX_PRECISION):
        c.bad(("precision",), f"precision must be a whole number of decimals, 0 to {MAX_PRECISION}")
    if not (isinstance(data.get("id"), str) and _ID.match(data["id"])):
        c.bad(("id",), "id must be lower-case letters, digits and '-' (e.g. \"dot-product\")")
    c.text(data.get("title"), ("title",), "title")
    if not _preset_ok(data.get("preset")):
        c.bad(("preset",), f"preset must be one of {', '.join(PRESET_NAMES)} or random-N (got {data.get('preset')!r})")
    if "summary" in data:
        c.text(data["summary"], ("summary",), "summary")
    if "state" in data:
        c.state(data["state"], ("state",))
    steps = data.get("steps")
    if not isinstance(steps, list):
        c.bad(("steps",), "steps must be a list of steps")
    else:
        if not MIN_STEPS <= len(steps) <= MAX_STEPS and not (drafts and is_draft(data)):
            draft = ": a draft, which File → Open lesson… opens to try" if is_draft(data) else ""
            c.bad(("steps",), f"a lesson has {MIN_STEPS} to {MAX_STEPS} steps (this one has {len(steps)}){draft}")
        for i, s in enumerate(steps):
            c.step(s, i)
    return c.problems


def is_draft(data: dict[str, Any]) -> bool:
    """A lesson still being written: one step at least, fewer than a lesson has (``MIN_STEPS``)."""
    steps = data.get("steps")
    return isinstance(steps, list) and 1 <= len(steps) < MIN_STEPS
