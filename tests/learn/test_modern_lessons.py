"""The lessons on today's attention (positions, FlashAttention, K/V heads and windows): walked right and wrong
through the lesson runner, their answers checked against independent references (a hand-written rotate-half
rotation, the masked scores' running max, hand counts of bytes and visible keys), and the option keys of the lesson
format refused with a reason when malformed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.learn.model.context import context
from app.learn.model.engine import LessonRun
from app.learn.model.expr import Evaluator
from app.learn.model.files import bundled_lessons, parse_lesson
from app.learn.model.schema import LessonFileError
from app.learn.model.walk import step_records
from app.playground.model.playground import PlaygroundModel

IDS = ("positions", "flash-attention", "kv-heads-windows")


def lesson(lesson_id: str):
    return next(x for x in bundled_lessons() if x.id == lesson_id)


@pytest.mark.parametrize("lesson_id", IDS)
@pytest.mark.parametrize("right", [True, False])
def test_the_lesson_walks_right_and_wrong(lesson_id: str, right: bool) -> None:
    les = lesson(lesson_id)
    run = LessonRun(les, PlaygroundModel(les.preset))
    try:
        recs = list(step_records(run, right))
    finally:
        run.close()
    assert len(recs) == len(les.steps) and all(r["behaved"] for r in recs), [r for r in recs if not r["behaved"]]
    predicts = [r for r in recs if r["kind"] == "predict"]
    assert len(predicts) >= 3 and all(r["correct"] is right for r in predicts)
    if not right:
        assert all(r["expected"] in r["feedback"] for r in predicts)


def rotate_half(x: np.ndarray, pos: int, base: float = 10000.0) -> np.ndarray:
    """Llama's rotate-half rotary of one row at one position, written out (the reference)."""
    d = x.shape[0]
    inv = base ** (-np.arange(0, d, 2) / d)
    ang = np.concatenate([pos * inv, pos * inv])
    half = np.concatenate([-x[d // 2:], x[: d // 2]])
    return x * np.cos(ang) + half * np.sin(ang)


def opened(lesson_id: str, step: int) -> LessonRun:
    """The lesson walked (rightly) up to ``step`` (0-based) and opened there."""
    les = lesson(lesson_id)
    run = LessonRun(les, PlaygroundModel(les.preset))
    run.start(step)
    return run


def test_rotary_scores_depend_on_the_offset_only() -> None:
    run = opened("positions", 3)
    m = run.model
    ev = Evaluator(context(m))
    q, k = m.computation.q[0], m.computation.k[1]
    for a, b in ((3, 1), (7, 5), (5, 1)):
        hand = float(rotate_half(q, a) @ rotate_half(k, b)) * m.result.scale
        assert ev.value(f"rotated_score(Q[t0], K[t1], {a}, {b})") == pytest.approx(hand, abs=1e-12)
    assert run.expected() == pytest.approx(ev.value("rotated_score(Q[t0], K[t1], 3, 1)"), abs=1e-12)
    run.close()


def test_alibi_bias_is_minus_slope_times_distance() -> None:
    run = opened("positions", 6)
    slope = 2 ** (-8 / 4)  # Press et al.: the first of 4 heads
    assert run.expected() == pytest.approx(-slope * 2, abs=1e-12)
    run.close()


def test_flash_running_max_is_the_max_of_the_scaled_scores_seen() -> None:
    run = opened("flash-attention", 1)
    s = run.model.result.scaled
    assert run.expected() == pytest.approx(s[0, :2].max(), abs=1e-12)
    run.go(2)
    assert run.expected() == pytest.approx(s[0, :4].max(), abs=1e-12)
    assert Evaluator(context(run.model)).value("rescale(0, 1)") == pytest.approx(
        np.exp(s[0, :2].max() - s[0, :4].max()), abs=1e-12)
    run.close()


def test_kv_bytes_and_visible_keys_by_hand() -> None:
    run = opened("kv-heads-windows", 1)
    assert run.expected() == 2 * 2 * 2 * 2  # K and V × 2 K/V heads × 2 columns × 2 bytes
    run.close()
    run = opened("kv-heads-windows", 6)  # W = 3, 2 sinks: query 6 sees keys 4, 5, 6 and 0, 1
    assert run.expected() == 5
    run.go(7)
    assert run.expected() == "no"  # key 2 is in neither query 5's window (3-5) nor the sinks (0-1)
    run.close()


@pytest.mark.parametrize(("state", "reason"), [({"rotary": -1}, "rotary must be"), ({"alibi": 1}, "alibi must be"),
                                               ({"window": {"window": 0}}, "window must be"),
                                               ({"blocks": [2]}, "blocks must be"), ({"kv_heads": 0}, "kv_heads must"),
                                               ({"mask": "custom"}, "mask must be one of")])
def test_malformed_option_states_are_refused_with_a_reason(state: dict, reason: str) -> None:
    data = {"id": "x", "title": "X", "preset": "cat-sat-mat",
            "steps": [{"kind": "look", "text": "t", "state": state}] * 5}
    with pytest.raises(LessonFileError, match=reason):
        parse_lesson(json.dumps(data, indent=1), "x.json")


def test_option_goals_are_checked_and_shown() -> None:
    data = {"id": "x", "title": "X", "preset": "cat-sat-mat",
            "steps": [{"kind": "do", "text": "t", "goal": {"rotary": False}}] * 5}
    with pytest.raises(LessonFileError, match="goal rotary must be true"):
        parse_lesson(json.dumps(data, indent=1), "x.json")
