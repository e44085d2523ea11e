"""The Flow view (Playground and Training) and the Training tab's causality probe, in the real window (offscreen).

Every line the canvas drew is read back (``FlowCanvas.drawn``) and compared with weights computed here by hand
(numpy softmax for the Playground, ``probe_attention`` on a model rebuilt from the recorded parameters for
Training); the probe's bars with a hand check of the causal mask's exact zeros."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from app.common.flow import MAX_LINE_WIDTH


def hand_weights(q, k, mask=None):
    s = q @ k.T / np.sqrt(q.shape[1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def drawn_weights(canvas, heads, lq, lk):
    """Repaint, then rebuild (heads, Lq, Lk) from the widths drawn (width = weight × MAX_LINE_WIDTH)."""
    canvas.grab()  # paints, recording every line
    out = np.zeros((heads, lq, lk))
    for line in canvas.drawn:
        assert line.width == pytest.approx(line.weight * MAX_LINE_WIDTH, rel=1e-12)
        out[line.head, line.query, line.key] = line.width / MAX_LINE_WIDTH
    return out


def hover(canvas, point: QPointF) -> None:
    ev = QMouseEvent(QEvent.Type.MouseMove, point, canvas.mapToGlobal(point), Qt.MouseButton.NoButton,
                     Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(canvas, ev)


@pytest.fixture
def flow(window, qtbot):
    window.view_tabs.setCurrentWidget(window.tab.flow)
    qtbot.waitExposed(window.tab.flow)
    return window.tab.flow


def test_line_widths_equal_the_weights_and_follow_edits(window, flow):
    m = window.playground
    m.load_preset("bank-river-loan")
    x = m.preset.x_q
    ref = hand_weights(x, x)
    np.testing.assert_allclose(drawn_weights(flow.canvas, 1, 3, 3)[0], ref, rtol=1e-12)
    assert len(flow.canvas.drawn) == 9
    # an edit through the undo stack: the lines follow
    assert window.edits.apply("Edit X", lambda mm: mm.set_cell("X", 0, 1, 2.5))
    x2 = x.copy()
    x2[0, 1] = 2.5  # identity projections: Q = K = X
    np.testing.assert_allclose(drawn_weights(flow.canvas, 1, 3, 3)[0], hand_weights(x2, x2), rtol=1e-12)
    # the causal mask: masked pairs have no line at all
    window.edits.apply("Mask", lambda mm: mm.set_mask("causal"))
    tri = np.tril(np.ones((3, 3), dtype=bool))
    np.testing.assert_allclose(drawn_weights(flow.canvas, 1, 3, 3)[0], hand_weights(x2, x2, tri), rtol=1e-12)
    assert {(d.query, d.key) for d in flow.canvas.drawn} == {(i, j) for i in range(3) for j in range(i + 1)}


def test_every_head_drawn_with_its_own_weights(window, flow, qtbot):
    m = window.playground
    m.load_preset("lesson-random-4x8")
    window.edits.apply("Heads", lambda mm: mm.set_heads(2))
    q, k = m.computation.q, m.computation.k
    got = drawn_weights(flow.canvas, 2, 4, 4)
    for h in range(2):  # head h takes columns 4h..4h+3, scaled by 1/sqrt(4)
        np.testing.assert_allclose(got[h], hand_weights(q[:, 4 * h:4 * h + 4], k[:, 4 * h:4 * h + 4]), rtol=1e-12)
    assert [act.text() for act in flow.head_checks] == ["head 1", "head 2"]
    assert flow.heads_button.text() == "heads 2/2 ▾"
    flow.head_checks[0].setChecked(False)  # switch a head off: only head 2's lines remain
    flow.canvas.grab()
    assert {d.head for d in flow.canvas.drawn} == {1} and flow.heads_button.text() == "heads 1/2 ▾"


def test_hover_isolates_a_token_and_says_its_weights(window, flow):
    m = window.playground
    m.load_preset("cat-sat-mat")
    flow.canvas.grab()
    hover(flow.canvas, flow.canvas.token_pos("query", 1))
    assert flow.canvas.hover == ("query", 1)
    flow.canvas.grab()
    bright = {(d.query, d.key) for d in flow.canvas.drawn if not d.faded}
    assert bright == {(1, 0), (1, 1), (1, 2)}
    x = m.preset.x_q
    row = hand_weights(x, x)[1]
    text = flow.hover_label.text()
    assert text.startswith("query 'sat' looks at")
    for tok, w in zip(("cat", "sat", "mat"), row):
        assert f"{tok} = {w:.3f}" in text
    hover(flow.canvas, flow.canvas.token_pos("key", 2))
    flow.canvas.grab()
    assert {(d.query, d.key) for d in flow.canvas.drawn if not d.faded} == {(0, 2), (1, 2), (2, 2)}
    assert flow.hover_label.text().startswith("key 'mat' is looked at by")
    # renamed tokens: the labels and the read-out follow
    assert window.edits.apply("Rename", lambda mm: mm.set_tokens("query", "a b c"))
    assert flow.canvas.data.query_tokens == ("a", "b", "c")  # self-attention: the keys are renamed too
    assert flow.hover_label.text().startswith("key 'c' is looked at by — ")


def test_flow_exports_png_and_svg_with_context(window, flow, tmp_path):
    window.playground.load_preset("cat-sat-mat")
    title = flow.export(tmp_path / "flow.svg")
    assert "preset cat-sat-mat" in title and "Attention flow" in title
    assert "<title>" in (tmp_path / "flow.svg").read_text()
    flow.export(tmp_path / "flow.png")
    from PySide6.QtGui import QImage

    img = QImage(str(tmp_path / "flow.png"))
    assert not img.isNull() and img.text("Title") == title
    with pytest.raises(ValueError):
        flow.export(tmp_path / "flow.pdf")


# ------------------------------------------------------------------------------------------------- Training
TINY = dict(seq_len=3, vocab_size=6, d_model=8, num_heads=2, num_layers=2, steps=6, train_size=64, test_size=16,
            train_eval_size=4, eval_every=3)


@pytest.fixture
def trained_panel(finish_run):
    from attention_core.tiny.config import TrainConfig

    return finish_run(TrainConfig(**TINY))


def reference_maps(session, index):
    from app.training.model.tools import model_from_params
    from attention_core.tiny.analysis import probe_attention

    snap = session.history[index]
    model = model_from_params(session.model_config, snap.params)
    import torch

    return probe_attention(model, torch.tensor(snap.probe), True)


def test_training_flow_follows_scrubbing_and_the_layer_then_the_probe(trained_panel, qtbot, tmp_path):
    p, s = trained_panel, trained_panel.session
    p.tabs.setCurrentWidget(p.flow)
    qtbot.waitExposed(p.flow)
    n = 2 * TINY["seq_len"]
    for index in (len(s.history) - 1, 0, 3):
        s.seek(index)
        qtbot.wait(80)  # the view redraws at most once a frame
        for layer in (0, 1):
            p.flow.layer_combo.setCurrentIndex(layer)
            ref = reference_maps(s, index)[layer]
            got = drawn_weights(p.flow.canvas, 2, n, n)
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7)
            assert f"layer {layer + 1} at step {s.history[index].step}" in p.flow.title_label.text()
        # causal: no line ever goes to a later position
        assert all(d.key <= d.query for d in p.flow.canvas.drawn)
    title = p.flow.export(tmp_path / "training-flow.png")
    assert f"layer 2 at step {s.history[3].step}" in title and "reversal task" in title
    # with a model's heads and layers, neither new tab widens the column (Try it sets its minimum width)
    for view in (p.flow, p.causality):
        assert view.minimumSizeHint().width() <= p.tryit.minimumSizeHint().width()
    s.go_live()
    qtbot.wait(80)
    check_causality_view(p, qtbot, tmp_path)


def check_causality_view(p, qtbot, tmp_path):
    """The Training tab's causality probe (on the same run: training one costs seconds)."""
    s, view = p.session, p.causality
    p.tabs.setCurrentWidget(view)
    qtbot.waitExposed(view)
    assert view.position_spin.value() == TINY["seq_len"]  # the SEP position by default
    assert view.position_spin.maximum() == 2 * TINY["seq_len"] - 2
    view.position_spin.setValue(2)
    view.trials_spin.setValue(5)
    assert view.run()
    qtbot.waitUntil(lambda: view.model.current and not view.busy, timeout=20_000)
    r = view.model.result
    assert r.step == s.history[-1].step and r.probe.position == 2 and r.probe.trials == 5
    heights = view.chart.heights
    assert np.all(heights[:3] == 0.0) and np.all(heights[3:] > 0.0)  # the causal mask: exactly 0 up to t
    assert "0 (exactly)" in view.numbers_label.text()
    assert "exactly 0" in view.meaning_label.text()
    # the grid is scrubbed to step 0: the probe follows it
    s.seek(0)
    qtbot.waitUntil(lambda: view.model.current and not view.busy, timeout=20_000)
    assert view.model.result.step == 0 and np.all(view.chart.heights[:3] == 0.0)
    title = view.export(tmp_path / "probe.svg")
    assert "step 0" in title and "causal mask" in title
    # refused input shows next to the controls
    view.model.position = 99
    assert view.model.job() is None and "position must be in 0..4" in view.error_label.text()
    assert view.error_label.isVisibleTo(view)
