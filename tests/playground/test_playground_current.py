"""Regression tests: what the Playground shows after a change describes the state after that change.

Each case was seen on the first version: the story line kept quoting the preset's numbers after an edit, and kept
saying "identity projections so Q=K=V=X" in Q/K/V and cross modes. Driven through the real window."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from test_playground import type_into


def sdpa(q, k, v, mask=None, scale=None):
    t = [torch.tensor(np.asarray(a), dtype=torch.float64) for a in (q, k, v)]
    m = None if mask is None else torch.tensor(mask)
    scores = (t[0] @ t[1].T) * scale
    if m is not None:
        scores = scores.masked_fill(~m, float("-inf"))
    return torch.softmax(scores, -1).numpy(), F.scaled_dot_product_attention(*t, attn_mask=m, scale=scale).numpy()


def test_story_follows_a_typed_edit_in_qkv_mode(window, qtbot):
    window.load_preset("cat-sat-mat")
    assert "43.3%" in window.story_label.text()
    window.tab.inputs.choose_mode(0)  # Q, K, V directly
    assert "identity projections" not in window.story_label.text()
    type_into(qtbot, window, "Q", 0, 0, "3")
    m = window.playground
    weights, _ = sdpa(m.matrices["Q"], m.matrices["K"], m.matrices["V"], scale=0.5)
    story = window.story_label.text()
    assert "43.3%" not in story and f"{weights[0, 0]:.1%}" in story and "edited" in story
    np.testing.assert_allclose(window.pipeline.heatmaps["weights"].values(), weights, rtol=1e-12)


def test_story_follows_an_edit_of_x_and_the_causal_mask(window, qtbot):
    window.load_preset("cat-sat-mat")
    type_into(qtbot, window, "X", 0, 0, "3")
    x = window.playground.matrices["X"]
    weights, _ = sdpa(x, x, x, scale=0.5)
    assert f"{weights[0, 0]:.1%}" in window.story_label.text()  # 96.3 %
    c = window.controls
    c.mask_combo.setCurrentIndex(c.mask_combo.findData("causal"))
    weights, _ = sdpa(x, x, x, mask=np.tril(np.ones((3, 3), bool)), scale=0.5)
    assert weights[0, 0] == 1.0 and "100.0%" in window.story_label.text()
    window.undo_action.trigger()
    window.undo_action.trigger()  # back to the preset: its own story again
    assert "43.3%" in window.story_label.text() and "edited" not in window.story_label.text()


def test_cross_mode_does_not_claim_identity_projections(window):
    window.load_preset("cat-sat-mat")
    window.tab.inputs.choose_mode(2)
    assert "identity projections" not in window.story_label.text()


def test_pinned_explanation_and_status_follow_edits(window, qtbot):
    window.load_preset("it-animal-street")
    window.pipeline.heatmaps["scores"].cellClicked.emit(0, 1)
    assert "7" in window.explain_label.text()
    type_into(qtbot, window, "K", 1, 0, "2.5")
    assert "11.5" in window.explain_label.text()
    assert "1 queries × 3 keys" in window.statusBar().currentMessage()
    window.dim_spins["Lk"].setValue(4)
    assert "1 queries × 4 keys" in window.statusBar().currentMessage()
    window.dim_spins["Lk"].setValue(1)  # key 1 no longer exists: unpinned, the bar shows the hint
    assert window.playground.pinned is None and "Hover over any cell" in window.explain_label.text()
    assert window.pipeline.heatmaps["scores"].overlay.selected is None


def test_every_view_agrees_with_the_model_after_undo_and_redo(window, qtbot):
    window.load_preset("lesson-random-4x8")
    type_into(qtbot, window, "W_Q", 1, 2, "2")
    window.controls.scale_buttons["one"].setChecked(True)
    window.undo_action.trigger()
    window.undo_action.trigger()
    window.redo_action.trigger()
    m = window.playground
    for name, hm in window.pipeline.heatmaps.items():
        np.testing.assert_array_equal(hm.values(), getattr(m.result, name))
    np.testing.assert_array_equal(window.derived["Q"].values(), m.computation.q)
    assert window.editors["W_Q"].model.matrix()[1, 2] == 2.0
    assert window.controls.scale_label.text().startswith(f"scale = {m.result.scale:.4g}")


def test_public_automation_surface(qapp):
    """The README's script: create_main_window → w.playground → result equals SDPA."""
    import app

    w = app.create_main_window()
    try:
        m = w.playground
        m.load_preset("cat-sat-mat")
        m.set_mode("qkv")
        m.set_cell("Q", 0, 0, 3.0)
        m.set_mask("causal")
        m.set_scale(1.0)
        m.pin("weights", 1, 0)
        q, k, v = m.matrices["Q"], m.matrices["K"], m.matrices["V"]
        weights, out = sdpa(q, k, v, mask=np.tril(np.ones((3, 3), bool)), scale=1.0)
        np.testing.assert_allclose(m.result.weights, weights, rtol=1e-12)
        np.testing.assert_allclose(m.result.output, out, rtol=1e-12)
        assert f"{m.result.weights[1, 0]:.4g}" in m.explanation
        np.testing.assert_array_equal(w.pipeline.heatmaps["weights"].values(), m.result.weights)
        from app.playground.model.playground import PlaygroundModel
        from app.training.model.session import TrainingSession

        assert isinstance(m, PlaygroundModel) and isinstance(w.training, TrainingSession)
    finally:
        w.confirm_on_close = False
        w.close()


def test_a_refusal_goes_once_the_state_changes_by_undo_too(window):
    """Found by the currency oracle: a refused edit's message stayed after Undo changed the state it was about."""
    window.load_preset("cat-sat-mat")
    window.edits.set_cell("X", 0, 0, 2.0)
    assert window.edits.apply("bad", lambda m: m.set_dim("d_model", 0)) is False  # refused with its reason
    assert window.error_label.isVisibleTo(window) and window.error_label.text().startswith("⚠")
    window.undo_action.trigger()  # the edit before is undone: the state the refusal was about is gone
    assert not window.error_label.isVisibleTo(window)
