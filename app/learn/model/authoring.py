"""Writing lessons from the playground (File → Save state as lesson step…): the playground as it is now becomes a
step — its ``session`` (the whole state, as a session file holds it), the teacher's text, look or predict — appended
to a lesson file, or to a new one. The file is validated like any lesson (``app.learn.model.schema``) and its texts
and answer are computed on the state they will show before anything is written; the write is atomic. Qt-free; the
dialog is ``app.learn.qt.step_dialog``.

A new lesson has fewer steps than a lesson needs (``MIN_STEPS``) until the teacher adds them: such a *draft* is
saved when all else is right, with a note of how many steps are still missing. File → Open lesson… opens a draft to
try at once (marked as a draft in the Learn panel); ``lessons --check`` still reports it as not yet a lesson.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.learn.model import predict
from app.learn.model.context import context
from app.learn.model.expr import Evaluator, LessonExprError, render
from app.learn.model.schema import (
    DEFAULT_PRECISION,
    MAX_STEPS,
    MIN_STEPS,
    LessonFileError,
    check_lesson,
    load_json,
    positions,
)
from app.playground.model.playground import PlaygroundModel
from attention_core.fileio import atomic_write
from attention_core.presets import PRESET_NAMES

STEP_KINDS = ("look", "predict")
"""What a saved state can become: a step that shows it, or one that asks about it."""
MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class Saved:
    path: Path
    step: int
    """The step's number (1-based) in the file."""
    steps: int
    note: str
    """What the teacher should know: "a draft: … 3 more steps to make it a lesson …", or ""."""


def lesson_id(title: str) -> str:
    """An id from a title: lower-case letters, digits and '-' ("My first lesson" → "my-first-lesson")."""
    text = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:64].strip("-")
    return text or "my-lesson"


def make_step(model: PlaygroundModel, text: str, kind: str = "look", title: str = "",
              ask: dict[str, Any] | None = None, cover: list[str] | None = None, why: str = "") -> dict[str, Any]:
    """The playground now as a step: ``session`` (without the device: a lesson runs where it is opened)."""
    if kind not in STEP_KINDS:
        raise ValueError(f"a saved state becomes a look or a predict step, not {kind!r}")
    session = model.snapshot()
    session.pop("device", None)
    step: dict[str, Any] = {"kind": kind}
    if title.strip():
        step["title"] = title.strip()
    step["text"] = text.strip()
    if kind == "predict":
        if not ask:
            raise ValueError("a predict step needs a question: its answer expression (and choices, tolerance or row)")
        step["ask"] = ask
        if cover:
            step["cover"] = list(cover)
        if why.strip():
            step["why"] = why.strip()
    step["session"] = session
    return step


def new_lesson(title: str, model: PlaygroundModel) -> dict[str, Any]:
    """An empty lesson for ``model``'s preset (``cat-sat-mat`` when it has none): id from the title."""
    preset = model.state.preset_name if model.state.preset_name in PRESET_NAMES else PRESET_NAMES[0]
    if not title.strip():
        raise ValueError("a new lesson needs a title")
    return {"id": lesson_id(title), "title": title.strip(), "preset": preset, "precision": DEFAULT_PRECISION,
            "steps": []}


def read_lesson_data(path: str | Path) -> dict[str, Any]:
    """A lesson file's JSON as it is (any problem but the step count is refused with its line)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise ValueError(f"{p.name} is too large for a lesson file")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p.name} cannot be read: {exc}") from None
    try:
        data, _pos = load_json(text, str(p))
    except LessonFileError as exc:
        raise ValueError(str(exc)) from None
    return data


def check_step(step: dict[str, Any], model: PlaygroundModel, precision: int = DEFAULT_PRECISION) -> None:
    """The step's text (and its question's answer and why) computed on ``model`` as it is now: the state the step
    will show. ValueError with the reason."""
    ev = Evaluator(context(model), frozenset(model.query_tokens) | frozenset(model.key_tokens), None, precision)
    try:
        render(step["text"], ev)
        if "why" in step:
            render(step["why"], ev)
        ask = step.get("ask")
        if ask:
            value = predict.expected(ask, ev, model)
            if ask.get("type") == "choice" and str(value) not in ask.get("choices", []):
                raise ValueError(f"the computed answer {value!r} is not among the choices")
    except LessonExprError as exc:
        raise ValueError(str(exc)) from None


def append_step(path: str | Path, step: dict[str, Any], model: PlaygroundModel, title: str = "") -> Saved:
    """Append ``step`` to the lesson file at ``path`` (a new lesson titled ``title`` where there is no file yet):
    validated as a lesson, its texts computed on ``model``, then written atomically. ValueError with the reason;
    the file is then untouched."""
    p = Path(path)
    data = read_lesson_data(p) if p.exists() else new_lesson(title, model)
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise ValueError(f"{p.name}: its steps are not a list")
    if len(steps) >= MAX_STEPS:
        raise ValueError(f"{p.name} has {len(steps)} steps already, the most a lesson may have ({MAX_STEPS})")
    data = {**data, "steps": [*steps, step]}
    text = json.dumps(data, indent=1, ensure_ascii=False)
    problems = check_lesson(data, positions(text), drafts=True)
    if problems:
        raise ValueError("\n".join(pr.format(p.name) for pr in problems[:8]))
    precision = data.get("precision", DEFAULT_PRECISION)
    check_step(step, model, precision if isinstance(precision, int) else DEFAULT_PRECISION)
    atomic_write(p, lambda fh: fh.write(text + "\n"), text=True)
    n = len(data["steps"])
    more = MIN_STEPS - n
    note = "" if more <= 0 else (f"a draft: File → Open lesson… opens it to try; {more} more "
                                 f"step{'s' * (more > 1)} to make it a lesson ({MIN_STEPS} to {MAX_STEPS})")
    return Saved(p, n, n, note)
