"""The lessons a learner has beyond the bundled ones, kept across restarts: every lesson file in the "My lessons"
folder of the app's data folder, and every file opened with File → Open lesson… (remembered by path in a small JSON
list, written atomically). A remembered file that vanished, or no longer loads, is dropped from the list with a
note, never an error. Qt-free.

    lib = LessonLibrary.default()          # <data folder>/My lessons, <data folder>/opened-lessons.json
    lessons, notes = lib.lessons()         # notes: one line per file dropped
    lib.remember("/home/me/my-lesson.json")
"""

from __future__ import annotations

import json
from pathlib import Path

from app.learn.model.files import Lesson, load_lesson
from app.learn.model.schema import LessonFileError
from attention_core.fileio import atomic_write

MY_LESSONS = "My lessons"
OPENED_FILE = "opened-lessons.json"


class LessonLibrary:
    """``folder``: the "My lessons" folder (read, never created here); ``list_file``: the remembered paths."""

    def __init__(self, folder: str | Path, list_file: str | Path) -> None:
        self.folder, self.list_file = Path(folder), Path(list_file)
        self.files: list[str] = self._read()

    @classmethod
    def default(cls) -> LessonLibrary:
        from app.common.paths import data_dir

        base = data_dir(create=False)
        return cls(base / MY_LESSONS, base / OPENED_FILE)

    def _read(self) -> list[str]:
        try:
            data = json.loads(self.list_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        files = data.get("files") if isinstance(data, dict) else None
        return [str(f) for f in files if isinstance(f, str)] if isinstance(files, list) else []

    def _write(self) -> None:
        text = json.dumps({"files": self.files}, indent=1)
        try:
            atomic_write(self.list_file, lambda fh: fh.write(text), text=True)
        except OSError:
            pass  # a convenience: a read-only disk must not stop the lesson from opening

    def remember(self, path: str | Path) -> None:
        """A lesson file opened: listed again at the next launch (unless it lies in the "My lessons" folder)."""
        p = str(Path(path).resolve())
        if Path(p).parent == self.folder.resolve() or p in self.files:
            return
        self.files.append(p)
        self._write()

    def forget(self, path: str | Path) -> None:
        p = str(Path(path).resolve())
        if p in self.files:
            self.files.remove(p)
            self._write()

    def lessons(self) -> tuple[list[Lesson], list[str]]:
        """The "My lessons" folder's lessons (file-name order), then the remembered files (in the order opened);
        a file that cannot be loaded is left out with a note, and a remembered one is forgotten."""
        lessons: list[Lesson] = []
        notes: list[str] = []
        mine = sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []
        for path in mine:
            try:
                lessons.append(load_lesson(path, drafts=True))
            except LessonFileError as exc:
                notes.append(f"{path.name} in {MY_LESSONS} is not listed: {exc.problems[0].reason}")
        for f in list(self.files):
            path = Path(f)
            try:
                if not path.is_file():
                    raise LessonFileError(f, [])
                lessons.append(load_lesson(path, drafts=True))
            except LessonFileError as exc:
                why = exc.problems[0].reason if exc.problems else "the file is gone"
                notes.append(f"{path.name} is no longer listed: {why} ({f})")
                self.forget(f)
        by_id = {x.id: x for x in lessons}  # one lesson per id: a later one wins, in the place of the first
        return list(by_id.values()), notes
