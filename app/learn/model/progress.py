"""What is saved of a lesson walk (the ``ProgressStore`` entry of one lesson), so that a restart resumes exactly: the
step, the furthest step, the score (with the first try of every predict step and the answers given, from which it
is counted), whether it was finished. Qt-free.

A saved entry: ``{"step", "furthest", "score", "of", "done", "first_try": {"3": true}, "answers": {"3": "cat"},
"feedback": {"3": {"correct": true, "expected": "cat", "text": "Right: cat. …", "head": "Right: cat."}}}`` — the
feedback as it was given, so that a resumed lesson says what was said then (the numbers may differ now).
Entries saved before ``first_try`` existed still load: their ``score`` is carried over as it was (saved as
``carried`` from then on, beside the first tries made since).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LessonProgress:
    first_try: dict[int, bool] = field(default_factory=dict)
    """Predict steps answered, by index: whether the first answer was right (the score counts these)."""
    answers: dict[int, Any] = field(default_factory=dict)
    """The first answer of each predict step (a choice, a number, a (row, col) cell), to show its feedback again."""
    feedback: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The feedback of each predict step as given at its first answer (correct, expected, text, head)."""
    carried: int = 0
    """The score of an entry saved without ``first_try`` (an older version): kept as it was."""

    @classmethod
    def load(cls, saved: dict[str, Any], steps: list[dict[str, Any]]) -> LessonProgress:
        """From a saved entry; anything odd (a hand-edited file) is left out, never raised."""
        predicts = {i for i, st in enumerate(steps) if st.get("kind") == "predict"}
        out = cls()
        first = saved.get("first_try")
        if isinstance(first, dict):
            out.first_try = {int(k): bool(v) for k, v in first.items() if _index(k) in predicts}
        carried = saved.get("carried", 0) if isinstance(first, dict) else saved.get("score", 0)
        out.carried = min(carried, len(predicts)) if isinstance(carried, int) and not isinstance(carried, bool) else 0
        answers = saved.get("answers")
        if isinstance(answers, dict):
            out.answers = {int(k): _answer(v) for k, v in answers.items() if _index(k) in predicts}
        said = saved.get("feedback")
        if isinstance(said, dict):
            out.feedback = {int(k): v for k, v in said.items() if _index(k) in predicts and _said_ok(v)}
        return out

    def clear(self) -> None:
        self.first_try.clear()
        self.answers.clear()
        self.feedback.clear()
        self.carried = 0

    def record(self, index: int, given: Any, correct: bool, said: dict[str, Any] | None = None) -> None:
        """An answer: the first one of a step counts for the score and is kept, with the feedback given."""
        self.first_try.setdefault(index, bool(correct))
        self.answers.setdefault(index, _plain(given))
        if said is not None:
            self.feedback.setdefault(index, dict(said))

    def score(self, of: int) -> int:
        return min(self.carried + sum(1 for ok in self.first_try.values() if ok), of)

    def entry(self, old: dict[str, Any], index: int, of: int, finished: bool) -> dict[str, Any]:
        furthest = old.get("furthest", 0)
        return {"step": index, "furthest": max(index, furthest if isinstance(furthest, int) else 0),
                "score": self.score(of), "of": of, "done": bool(old.get("done")) or finished,
                "first_try": {str(k): v for k, v in sorted(self.first_try.items())},
                "answers": {str(k): v for k, v in sorted(self.answers.items())},
                "feedback": {str(k): v for k, v in sorted(self.feedback.items())},
                **({"carried": self.carried} if self.carried else {})}


def _index(key: Any) -> int:
    try:
        return int(key)
    except (TypeError, ValueError):
        return -1


def _said_ok(v: Any) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("correct"), bool)
            and all(isinstance(v.get(k), str) for k in ("expected", "text", "head")))


def _plain(given: Any) -> Any:
    """An answer as JSON holds it: a cell as [row, col], a number as a float, a choice as a string."""
    if isinstance(given, (tuple, list)):
        return [int(x) for x in given]
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        return float(given)
    return str(given)


def _answer(value: Any) -> Any:
    """A saved answer as ``LessonRun.answer`` takes it: a cell as a (row, col) tuple."""
    if isinstance(value, list) and len(value) == 2 and all(isinstance(x, int) for x in value):
        return int(value[0]), int(value[1])
    return value
