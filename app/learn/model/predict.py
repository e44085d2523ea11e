"""A predict step's answer, computed from the live model: the right answer, how it is written, whether a given
answer is right, and a right (or wrong) sample for ``lessons --run``. Qt-free; ``LessonRun`` asks here."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from app.learn.model.context import token_index
from app.learn.model.expr import Evaluator, Labeled, LessonExprError, format_value
from app.playground.model.playground import PlaygroundModel


@dataclass(frozen=True)
class Feedback:
    """A predict step's feedback as given (``text``, at the answer; ``head``: its first sentence, about the answer);
    ``feedback_now`` says it again for the numbers on screen now."""
    correct: bool
    answer: Any
    expected: str
    text: str
    head: str = ""


def saved(fb: Feedback) -> dict[str, Any]:
    """``fb`` as the lesson's progress keeps it (JSON), to say it again after a restart."""
    return {"correct": fb.correct, "expected": fb.expected, "text": fb.text, "head": fb.head}


def from_saved(said: dict[str, Any], answer: Any) -> Feedback:
    return Feedback(bool(said["correct"]), answer, str(said["expected"]), str(said["text"]), str(said["head"]))


def feedback_now(fb: Feedback, expected_now: str, why_now: str) -> str:
    """``fb`` for the numbers now: as given while the answer is the same (its ``why`` with today's numbers); once
    they changed, what was said then, the answer now, and the ``why`` now."""
    if not fb.head:
        return fb.text
    if expected_now == fb.expected:
        return f"{fb.head} {why_now}".strip()
    return (f"{fb.head} That was for the numbers when you answered; they changed since: the answer is now "
            f"{expected_now}. {why_now}").strip()


def expected(ask: dict[str, Any], evaluator: Evaluator, model: PlaygroundModel) -> Any:
    """The right answer of ``ask`` (a predict step's question), computed from the model now."""
    value = evaluator.value(ask["answer"])
    if ask["type"] == "number":
        return float(value) if not isinstance(value, Labeled) else _fail("the answer must be one number")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if ask["type"] == "cell" and isinstance(value, (int, float)):
        return model.key_tokens[int(value)]
    return value


def expected_text(ask: dict[str, Any], value: Any) -> str:
    """The right answer as the feedback writes it (a number to the step's tolerance)."""
    if ask["type"] == "number":
        return "0" if value == 0 else format_value(value, f".{_decimals(ask.get('tolerance', 0.01))}f")
    return str(value)


def check(ask: dict[str, Any], given: Any, exp: Any, exp_text: str, model: PlaygroundModel) -> tuple[bool, str, str]:
    """Whether ``given`` answers ``ask`` rightly (``exp`` is the live answer), with the answer as given and the
    expected answer as the feedback writes them. ValueError for an answer that is no answer (not a number)."""
    if ask["type"] == "number":
        try:
            g = float(given)
        except (TypeError, ValueError):
            raise ValueError(f"{given!r} is not a number") from None
        return abs(g - exp) <= float(ask.get("tolerance", 0.01)), format_value(g), exp_text
    if ask["type"] == "cell":
        row = token_index(model.query_tokens, ask["row"])
        r, c = given
        shown = f"{model.query_tokens[r]} → {model.key_tokens[c]}"
        correct = int(r) == row and model.key_tokens[int(c)] == exp
        return correct, shown, f"{model.query_tokens[row]} → {exp}"
    if str(exp) not in ask["choices"]:
        raise ValueError(f"the computed answer {exp!r} is not among the choices")
    return str(given) == str(exp), str(given), exp_text


def sample(ask: dict[str, Any], exp: Any, model: PlaygroundModel, right: bool) -> Any:
    """An answer that is right (or wrong) now: what ``lessons --run`` gives."""
    if ask["type"] == "number":
        return exp if right else exp + 10 * float(ask.get("tolerance", 0.01)) + 1.0
    if ask["type"] == "cell":
        row = token_index(model.query_tokens, ask["row"])
        col = model.key_tokens.index(exp)
        return (row, col) if right else (row, (col + 1) % len(model.key_tokens))
    return exp if right else next(c for c in ask["choices"] if c != str(exp))


def _fail(msg: str) -> Any:
    raise LessonExprError(msg)


def _decimals(tol: float) -> int:
    return max(0, min(6, int(math.ceil(-math.log10(2 * float(tol))))))  # ±0.005 → 2 decimals, ±0.5 → none
