"""The lesson "How a model writes": its gen_ names against the formula and the policy's definition worked by hand,
and the whole lesson walked with right answers (accepted) and wrong ones (refused, the expected value said)."""

from __future__ import annotations

import pytest

from app.common.resources import resource_path
from app.common.runner import ThreadRunner
from app.learn.model.files import load_lesson
from app.learn.model.walk import dry_run
from app.model_tab.model.generate_lesson import PROMPT_TOKENS, GenerateNames
from app.model_tab.model.session import InspectSession

LESSON = "12-how-a-model-writes.json"


@pytest.fixture
def names(own_model):
    session = InspectSession(runner=ThreadRunner())
    session.load(own_model)
    assert session.wait_idle(120) and session.trace is not None
    yield GenerateNames(session).context(), session.model.info
    session.shutdown()


def test_the_cache_bytes_follow_the_formula(names):
    n, info = names
    for positions in (1, 7, 11):  # 2 (keys and values) x layers x K/V heads x positions x d_head x 4 bytes (float32)
        assert n["gen_bytes"](positions) == 2 * info.layers * info.kv_heads * positions * info.d_head * 4
    assert n["gen_mha_bytes"](5) == 2 * info.layers * info.heads * 5 * info.d_head * 4
    # while the 4th new token is made the cache holds the prompt and 3 more positions
    assert n["gen_bytes_after"](4) == n["gen_bytes"](PROMPT_TOKENS + 3)


def test_a_sinks_cache_keeps_the_positions_its_definition_names(names):
    n, _info = names
    q, w, s = 10, 6, 2
    kept = [k for k in range(q + 1) if k < s or q - k < w - s]  # StreamingLLM: the sinks and the most recent
    assert kept == [0, 1, 7, 8, 9, 10] and n["gen_kept"](q, w, s) == "0–1, 7–10"
    assert n["gen_kl"](q, w, s) >= 0 and n["gen_top_changed"](q, w, s) in (True, False)
    with pytest.raises(ValueError, match="already reaches"):
        n["gen_kept"](1, w, s)


@pytest.mark.parametrize("right", [True, False])
def test_the_lesson_walks_right_and_wrong(right):
    lesson = load_lesson(resource_path("lessons", LESSON))
    assert [st.get("view") for st in lesson.steps][1:] == ["generate"] * 5
    assert dry_run(lesson, right=right) == []
