"""The Playground's Flow view in the real window (offscreen): every line the canvas drew is read back
(``FlowCanvas.drawn``) and compared with weights computed here by hand (numpy softmax). The Training tab's flow is
tests/training/test_training_flow.py."""

from __future__ import annotations

import numpy as np
import pytest
from flow_drawing import drawn_weights
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication


def hand_weights(q, k, mask=None):
    s = q @ k.T / np.sqrt(q.shape[1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


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
