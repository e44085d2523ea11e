"""The Multi-head view's K/V heads (grouped-query / multi-query attention) in the real window (offscreen): the
control is one undo step and refuses a count that does not divide the heads beside itself; the heads are grouped
by the K/V head they read, each map equal to a hand computation (numpy softmax over the shared K/V head's columns),
and the parameters and KV-cache bytes per token equal hand counts against standard multi-head."""

from __future__ import annotations

import numpy as np
import pytest

from app.playground.views.multihead.model import kv_grouping


def softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture
def heads_view(window, qtbot):
    m = window.playground
    m.load_preset("random-4")  # 4 tokens, d_k = d_v = 8
    m.set_heads(4)
    window.view_tabs.setCurrentWidget(window.tab.multihead)
    qtbot.waitExposed(window.tab.multihead)
    return window.tab.multihead


def test_two_kv_heads_group_the_query_heads_and_each_map_reads_its_shared_head(window, heads_view):
    m, stack = window.playground, window.undo_stack
    index = stack.index()
    heads_view.kv_heads.setValue(2)
    assert m.kv_heads == 2 and stack.index() == index + 1
    g = kv_grouping(m)
    assert g.kv_head_of == (0, 0, 1, 1) and g.members == ((0, 1), (2, 3)) and g.kind == "grouped-query"
    assert len(heads_view.group_frames) == 2
    for frame, members in zip(heads_view.group_frames, g.members):
        assert all(frame.isAncestorOf(heads_view.head_maps[h]) for h in members)
    text = heads_view.grouping.text()
    assert "K/V head 1</b></span> → query heads 1, 2" in text and "K/V head 2</b></span> → query heads 3, 4" in text
    q, k = m.computation.q, m.computation.k  # K as edited: 2 K/V heads × 2 columns
    assert k.shape == (4, 4)
    for h in range(4):
        kv = h // 2
        hand = softmax(q[:, 2 * h:2 * h + 2] @ k[:, 2 * kv:2 * kv + 2].T / np.sqrt(2))
        np.testing.assert_allclose(heads_view.head_maps[h].values(), hand, atol=1e-12)
    stack.undo()
    assert m.kv_heads == 4 and heads_view.kv_heads.value() == 4 and len(heads_view.group_frames) == 4


def test_parameters_and_cache_bytes_against_standard_multi_head_by_hand(window, heads_view):
    heads_view.kv_heads.setValue(2)
    g = kv_grouping(window.playground)
    d_model, d_head, kv = 8, 2, 2
    kv_width = kv * d_head
    # W_Q, W_O: d_model x d_model; W_K, W_V: d_model x kv_width; a bias per output column of each
    assert g.parameters == 2 * d_model * d_model + 2 * d_model * kv_width + 2 * d_model + 2 * kv_width == 216
    assert g.standard_parameters == 4 * d_model * d_model + 4 * d_model == 288
    assert (g.weights, g.standard_weights) == (2 * d_model * d_model + 2 * d_model * kv_width, 4 * d_model * d_model)
    # a key and a value of d_head numbers per K/V head, 2 bytes each
    assert g.kv_bytes == kv * (d_head + d_head) * 2 == 16
    assert g.standard_kv_bytes == 4 * (d_head + d_head) * 2 == 32
    assert "<b>16 bytes</b>" in heads_view.grouping.text() and "standard: 32 bytes, 2× as many" in \
        heads_view.grouping.text()
    heads_view.kv_heads.setValue(1)
    g = kv_grouping(window.playground)
    assert g.kind == "multi-query" and g.kv_bytes == 8 and g.members == ((0, 1, 2, 3),)


def test_a_kv_count_that_does_not_divide_the_heads_is_refused_beside_the_control(window, heads_view):
    m, stack = window.playground, window.undo_stack
    index = stack.index()
    heads_view.kv_heads.setValue(3)
    assert heads_view.kv_refusal.text()  # the model's reason, next to the control
    assert m.kv_heads == 4 and heads_view.kv_heads.value() == 4 and stack.index() == index
    heads_view.kv_heads.setValue(2)
    assert heads_view.kv_refusal.text() == "" and m.kv_heads == 2
