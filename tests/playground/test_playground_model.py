"""PlaygroundModel without any window: validation, events, derived values (all against independent numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.playground.model.playground import PlaygroundModel


def reference(q, k, v, mask=None, scale=None):
    """float64 attention written here, not in the core."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    scale = 1 / math.sqrt(q.shape[1]) if scale is None else scale
    scores = q @ k.T
    scaled = scores * scale
    masked = scaled if mask is None else np.where(mask, scaled, -np.inf)
    ex = np.exp(masked - masked.max(axis=1, keepdims=True))
    weights = ex / ex.sum(axis=1, keepdims=True)
    return scores, scaled, weights, weights @ v


def record(model):
    seen: list[frozenset[str]] = []
    model.events.changed.connect(seen.append)
    return seen


def test_result_follows_every_edit():
    m = PlaygroundModel("cat-sat-mat")
    m.set_mode("qkv")
    m.set_cell("Q", 0, 0, 3.0)
    m.set_mask("causal")
    m.set_scale(1.0)
    q, k, v = m.matrices["Q"], m.matrices["K"], m.matrices["V"]
    scores, scaled, weights, out = reference(q, k, v, np.tril(np.ones((3, 3), bool)), 1.0)
    np.testing.assert_allclose(m.result.scores, scores, rtol=1e-12)
    np.testing.assert_allclose(m.result.scaled, scaled, rtol=1e-12)
    np.testing.assert_allclose(m.result.weights, weights, rtol=1e-12)
    np.testing.assert_allclose(m.result.output, out, rtol=1e-12)
    m.set_scale("standard")
    assert m.result.scale == pytest.approx(0.5)


def test_every_change_emits_events_naming_it():
    m = PlaygroundModel("it-animal-street")
    seen = record(m)
    matrices: list[frozenset[str]] = []
    m.events.matrices.connect(matrices.append)
    m.set_cell("K", 1, 0, 2.5)
    assert {"matrices", "result"} <= seen[-1] and "mask" not in seen[-1]
    assert matrices[-1] == {"K"}
    m.set_mask("custom")
    assert "mask" in seen[-1] and "matrices" not in seen[-1]
    m.pin("weights", 0, 1)
    assert seen[-1] == {"pinned", "explanation"}
    m.set_cell("K", 1, 0, 0.0)
    assert "explanation" in seen[-1]  # the pinned cell's explanation is recomputed with the new numbers


@pytest.mark.parametrize("call, message", [
    (lambda m: m.set_cell("Q", 0, 0, float("nan")), "finite"),
    (lambda m: m.set_cell("Q", 9, 0, 1.0), "outside"),
    (lambda m: m.set_cell("nope", 0, 0, 1.0), "no matrix"),
    (lambda m: m.set_heads(3), "divide"),
    (lambda m: m.set_dim("Lq", 0), "between"),
    (lambda m: m.set_mask("sometimes"), "mask"),
    (lambda m: m.set_scale(-1.0), "positive"),
    (lambda m: m.set_scale("big"), "standard"),
    (lambda m: m.set_mode("matrix"), "mode"),
    (lambda m: m.set_tokens("q", "a b"), "Give 3"),
    (lambda m: m.set_device("cuda:7"), "not available"),
    (lambda m: m.pin("weights", 5, 0), "no cell"),
])
def test_refused_edits_change_nothing(call, message):
    m = PlaygroundModel("cat-sat-mat")
    before = m.snapshot()
    weights = m.result.weights.copy()
    seen = record(m)
    with pytest.raises(ValueError, match=message):
        call(m)
    assert m.snapshot() == before and not seen
    np.testing.assert_array_equal(m.result.weights, weights)


def test_story_is_never_stale():
    m = PlaygroundModel("cat-sat-mat")
    assert "43.3%" in m.story and not m.preset_edited
    m.set_cell("X", 0, 0, 3.0)
    w = m.result.weights[0, 0]
    assert "43.3%" not in m.story and "edited" in m.story and f"{w:.1%}" in m.story
    m.set_cell("X", 0, 0, 1.0)  # back to the preset's numbers: its own story applies again
    assert "43.3%" in m.story
    m.set_mode("qkv")  # Q, K, V mode: no projections any more, so "identity projections" would be false
    assert "identity projections" not in m.story
    m.set_mode("projection", "cross")  # X_q = Q, X_kv = K = V here: no number changed, so no "edited"
    assert "identity projections" not in m.story and "edited" not in m.story and "cross-attention" in m.story


def test_pinned_cell_that_disappears_is_unpinned():
    m = PlaygroundModel("cat-sat-mat")
    m.pin("weights", 2, 2)
    assert m.explanation.startswith("weight[mat, mat]")
    m.set_dim("Lq", 2)
    assert m.pinned is None and m.explanation == ""
    m.pin("output", 1, 3)
    m.set_heads(2)
    m.pin("head:1", 0, 0)
    m.set_heads(1)
    assert m.pinned is None


def test_explanation_contains_the_current_value():
    m = PlaygroundModel("it-animal-street")
    m.pin("scores", 0, 1)
    assert "7" in m.explanation  # 3·1 + 1·4
    m.set_cell("K", 1, 0, 2.5)
    assert "11.5" in m.explanation
    m.hover("weights", 0, 0)
    assert m.explanation.startswith("weight[it, animal]")
    m.hover(None)
    assert "11.5" in m.explanation  # back to the pinned cell


def test_snapshot_restore_round_trip_and_device():
    m = PlaygroundModel("lesson-random-4x8")
    m.set_available_devices(["cpu", "cuda:0"])
    start = m.snapshot()
    m.set_mask("causal")
    m.set_heads(2)
    end = m.snapshot()
    m.restore(start)
    assert m.snapshot() == start
    m.restore(end)
    assert m.snapshot() == end and m.mask_mode == "causal" and m.num_heads == 2
    m.set_available_devices([])
    assert m.devices == ["cpu"] and m.device == "cpu"


def test_regression_hovering_an_output_column_beyond_the_keys_with_a_mask():
    """Found by the stateful fuzz test: the output's columns are value dimensions; explaining output[0, 3] with a
    padding mask over 3 keys indexed the mask with column 3 and raised IndexError."""
    m = PlaygroundModel("it-animal-street")
    m.set_dim("d_v", 4)
    m.set_mask("padding")
    m.hover("output", 0, 3)
    assert m.explanation.startswith("output[it, v3]")


def test_regression_growing_a_self_attention_x_keeps_keys_equal_to_queries():
    """Found by the stateful fuzz test: in self-attention (one X) a new token was 'q3' as a query but 'k3' as a
    key, and undo/redo did not return to the same state."""
    m = PlaygroundModel("cat-sat-mat")
    m.set_dim("Lq", 4)
    assert m.query_tokens == m.key_tokens == ["cat", "sat", "mat", "q3"]
    snap = m.snapshot()
    m.restore(snap)
    assert m.snapshot() == snap


def test_regression_values_that_overflow_are_refused_and_nothing_changes():
    """Found by the window monkey test: X = 1e308 passed the cell check, then X·W and the scores overflowed to
    infinity and the result could not be computed (undo raised). The model now refuses such an edit."""
    m = PlaygroundModel("cat-sat-mat")
    before, weights = m.snapshot(), m.result.weights.copy()
    with pytest.raises(ValueError, match="too large"):
        m.set_cell("X", 0, 0, 1e308)
    assert m.snapshot() == before
    np.testing.assert_array_equal(m.result.weights, weights)
    m.set_cell("X", 0, 0, 1e70)  # large, but every result stays below the display limit: accepted
    assert np.isfinite(m.result.weights).all()
    with pytest.raises(ValueError, match="too large"):
        m.set_block("X", 1, 0, np.full((1, 4), 1e200))
    bad = m.snapshot()
    bad["matrices"]["X"][2][2] = 1e300
    with pytest.raises(ValueError):
        m.restore(bad)
    assert m.matrices["X"][2, 2] == 0.7
