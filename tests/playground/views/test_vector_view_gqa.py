"""The Vectors view's model with grouped K/V heads and rotary: the arrows are the vectors ①
multiplies, so every q·k it shows is ①'s score, against a hand computation.

Before: with 4 heads and 2 K/V heads Q has d_k columns and K half as many; ``VectorSpace`` stacked them for its
PCA and raised numpy's shape error (inside the view's ``showEvent``: the window segfaulted). With rotary on, hover's
angle came from the unrotated rows while its q·k was the rotated score."""

from __future__ import annotations

import numpy as np
import pytest

from app.playground.model.playground import PlaygroundModel
from app.playground.views.vectors.model import VectorSpace


def grouped_keys_by_hand(k: np.ndarray, heads: int, kv_heads: int) -> np.ndarray:
    """K as each query head reads it: query head h reads K/V head h // (heads / kv_heads)'s columns."""
    width = k.shape[1] // kv_heads
    return np.concatenate([k[:, (h // (heads // kv_heads)) * width:][:, :width] for h in range(heads)], axis=1)


def rope_by_hand(x: np.ndarray, base: float) -> np.ndarray:
    """Rotate-half RoPE (Llama/NeoX), row i at position i: pair (c, c + d/2) turns by i · base^(-2c/d)."""
    n, d = x.shape
    half = d // 2
    out = x.copy()
    for i in range(n):
        for c in range(half):
            a = i * base ** (-2.0 * c / d)
            out[i, c] = x[i, c] * np.cos(a) - x[i, c + half] * np.sin(a)
            out[i, c + half] = x[i, c + half] * np.cos(a) + x[i, c] * np.sin(a)
    return out


@pytest.mark.parametrize(("preset", "heads", "kv_heads"), [("cat-sat-mat", 4, 2), ("cat-sat-mat", 2, 1),
                                                          ("cat-sat-mat", 4, 1), ("it-animal-street", 2, 1)])
def test_grouped_kv_heads_draw_the_keys_every_query_head_reads(preset, heads, kv_heads):
    m = PlaygroundModel(preset)
    space = VectorSpace(m)
    m.set_heads(heads)
    m.set_kv_heads(kv_heads)  # before the fix: ValueError from np.vstack (Q d_k columns, K d_k·kv/heads)
    c = m.computation
    q, k = np.asarray(c.q, dtype=np.float64), np.asarray(c.k, dtype=np.float64)
    assert k.shape[1] * heads == q.shape[1] * kv_heads  # the model really holds fewer K columns
    read = grouped_keys_by_hand(k, heads, kv_heads)
    np.testing.assert_array_equal(space.k, read)
    scores = q @ read.T  # float64, one head over all of d_k: the Steps view's ①
    np.testing.assert_allclose(m.result.scores, scores, rtol=1e-12, atol=0)
    for i in range(len(q)):
        for j in range(len(k)):
            p = space.pair(i, j)
            assert p.dot == pytest.approx(scores[i, j], rel=1e-12)
            assert p.k_norm == pytest.approx(float(np.linalg.norm(read[j])), rel=1e-12)
            cos = scores[i, j] / (np.linalg.norm(q[i]) * np.linalg.norm(read[j]))
            assert p.angle_deg == pytest.approx(float(np.degrees(np.arccos(np.clip(cos, -1, 1)))), abs=1e-9)
    assert len(space.queries) == len(q) and len(space.keys) == len(k)
    assert f"K/V heads {kv_heads} for {heads} heads" in space.plane_note
    assert "q·k is ①'s score" in space.plane_note
    assert not space.draggable


def test_grouped_kv_heads_in_two_dimensions_refuse_a_drag_with_the_reason():
    """d_k = 2, 2 heads, 1 K/V head: the plane is exact, yet a key arrow is K's one column twice, not a row of K."""
    m = PlaygroundModel("cat-sat-mat")
    m.set_mode("qkv")
    m.set_dim("d_k", 2)
    m.set_heads(2)
    m.set_kv_heads(1)
    space = VectorSpace(m)
    assert space.qk.exact
    assert not space.draggable
    assert "repeats K's columns" in space.drag_note
    with pytest.raises(ValueError, match="repeats K's columns"):
        space.drag_row("k", 0, (0.5, 0.5))


def test_rotary_draws_the_rotated_vectors_that_make_the_scores():
    m = PlaygroundModel("cat-sat-mat")
    space = VectorSpace(m)
    m.set_rotary(100.0)
    c = m.computation
    q = rope_by_hand(np.asarray(c.q, dtype=np.float64), 100.0)
    k = rope_by_hand(np.asarray(c.k, dtype=np.float64), 100.0)
    np.testing.assert_allclose(space.q, q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(space.k, k, rtol=1e-12, atol=1e-15)
    for i in range(len(q)):
        for j in range(len(k)):
            p = space.pair(i, j)
            cos = q[i] @ k[j] / (np.linalg.norm(q[i]) * np.linalg.norm(k[j]))
            assert p.dot == pytest.approx(float(q[i] @ k[j]), rel=1e-12)
            assert p.angle_deg == pytest.approx(float(np.degrees(np.arccos(np.clip(cos, -1, 1)))), abs=1e-9)
    assert "after the rotation" in space.plane_note
    assert not space.draggable
