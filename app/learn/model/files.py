"""Lesson files: loading (``app.learn.model.schema`` validates), the bundled lessons, and where a learner's progress
is kept. Qt-free. (Checking a file — the schema, then a dry run — is ``app.learn.model.walk.check_file``.)"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from app.common.resources import resource_path
from app.learn.model.schema import (
    DEFAULT_PRECISION,
    MIN_STEPS,
    LessonFileError,
    Path_,
    Problem,
    check_lesson,
    load_json,
)

LESSON_DIR = resource_path("lessons")
"""The bundled lessons: resources/lessons/, wherever app.common.resources finds it (wheel, checkout, bundle)."""


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    preset: str
    steps: list[dict[str, Any]]
    state: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    file: str = ""
    lines: dict[Path_, int] = field(default_factory=dict, repr=False)
    precision: int = DEFAULT_PRECISION
    """Decimals of the numbers its texts show without a format (or with a bare ``g``)."""

    def line(self, step: int) -> int:
        return self.lines.get(("steps", step), 1)

    @property
    def draft(self) -> bool:
        """Fewer steps than a lesson has: a teacher's draft, loaded only where asked (``drafts=True``) to try."""
        return len(self.steps) < MIN_STEPS


def parse_lesson(text: str, file: str = "<lesson>", drafts: bool = False) -> Lesson:
    """A lesson from JSON text; ``LessonFileError`` (file, line, reason per problem) when the schema is broken.
    ``drafts``: a draft (1 to ``MIN_STEPS`` - 1 steps, as File → Save state as lesson step… starts one) loads too,
    to be tried; everything else about it is checked as for any lesson."""
    data, pos = load_json(text, file)
    problems = check_lesson(data, pos, drafts)
    if problems:
        raise LessonFileError(file, problems)
    return Lesson(data["id"], data["title"], data["preset"], data["steps"], data.get("state", {}),
                  data.get("summary", ""), file, pos, data.get("precision", DEFAULT_PRECISION))


def load_lesson(path: str | Path, drafts: bool = False) -> Lesson:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LessonFileError(str(path), [Problem(1, f"cannot read: {exc}")]) from None
    return parse_lesson(text, str(path), drafts)


def bundled_lessons() -> list[Lesson]:
    """The lessons shipped in resources/lessons/, in file-name order."""
    return [load_lesson(p) for p in sorted(LESSON_DIR.glob("*.json"))]


def find_lesson(id_or_file: str) -> Lesson:
    """A bundled lesson by id, else a lesson file by path; ValueError when neither."""
    for lesson in bundled_lessons():
        if lesson.id == id_or_file:
            return lesson
    if Path(id_or_file).is_file():
        return load_lesson(id_or_file)
    ids = ", ".join(x.id for x in bundled_lessons())
    raise ValueError(f"no lesson {id_or_file!r}: neither a bundled lesson ({ids}) nor a file")


# ---------------------------------------------------------------------------------------------- progress
class ProgressStore(Protocol):
    def load(self, lesson_id: str) -> dict[str, Any]: ...

    def save(self, lesson_id: str, progress: dict[str, Any]) -> None: ...


class MemoryStore:
    """Progress kept in memory (tests, the CLI)."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}

    def load(self, lesson_id: str) -> dict[str, Any]:
        return dict(self.data.get(lesson_id, {}))

    def save(self, lesson_id: str, progress: dict[str, Any]) -> None:
        self.data[lesson_id] = dict(progress)


class JsonStore(MemoryStore):
    """Progress in one JSON file (the app's data folder): {lesson id: {"step", "furthest", "score", "done"}}."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.data = {str(k): v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}
        except (OSError, ValueError):
            self.data = {}

    def save(self, lesson_id: str, progress: dict[str, Any]) -> None:
        super().save(lesson_id, progress)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1), encoding="utf-8")
            tmp.replace(self.path)
        except OSError:
            pass  # progress is a convenience: a read-only disk must not stop the lesson


