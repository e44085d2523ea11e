"""The Vectors tab: a simulated mouse drags arrow heads (Q and K follow by the dragged amount, every step follows,
one undo step per drag), hover numbers equal a hand computation, d_k > 2 shows the PCA plane and refuses drags."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from qt_settle import settled

from attention_core import attention_steps

pytestmark = pytest.mark.usefixtures("qtbot")


def show_vectors(window, qtbot, preset="it-animal-street"):
    window.playground.load_preset(preset)
    tab = window.tab
    tab.view_tabs.setCurrentWidget(tab.vectors)
    view = tab.vectors
    qtbot.waitUntil(lambda: view.plot.isVisible() and view.plot.width() > 200, timeout=3000)
    settled(qtbot)
    return view


def pixel_of(view, xy) -> QPoint:
    """Viewport pixel of a point of the plane."""
    scene = view.box.mapViewToScene(QPointF(float(xy[0]), float(xy[1])))
    return view.plot.mapFromScene(scene)


def data_of(view, pixel: QPoint) -> np.ndarray:
    p = view.box.mapSceneToView(view.plot.mapToScene(pixel))
    return np.array([p.x(), p.y()])


def drag(view, start: QPoint, end: QPoint, steps: int = 6) -> None:
    vp = view.plot.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for n in range(1, steps + 1):
        p = start + (end - start) * (n / steps)
        QTest.mouseMove(vp, QPoint(round(p.x()), round(p.y())))
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)


def assert_steps_follow(window, qtbot):
    """The model's steps and the Steps view's maps equal attention_steps on the model's Q, K, V."""
    m = window.playground
    st = m.state
    ref = attention_steps(st.matrices["Q"], st.matrices["K"], st.matrices["V"], scale=st.scale())
    for name in ("scores", "scaled", "masked", "weights", "output"):
        np.testing.assert_allclose(getattr(m.result, name), getattr(ref, name), rtol=1e-12)
    window.tab.view_tabs.setCurrentWidget(window.tab.pipeline)
    settled(qtbot)
    for name in ("scores", "weights", "output"):
        np.testing.assert_allclose(window.tab.pipeline.heatmaps[name].values(), getattr(ref, name), rtol=1e-12)


def drag_and_check(window, qtbot, view, kind: str, row: int) -> None:
    """Drag the head of Q[row] or K[row]: the row moves by the dragged amount, one undo step, steps follow."""
    m = window.playground
    name = "Q" if kind == "q" else "K"
    old = m.matrices[name][row].copy()
    start = pixel_of(view, old)
    end = start + QPoint(-60, 45)
    moved = data_of(view, end) - data_of(view, start)  # the dragged amount, in the plane
    assert np.linalg.norm(moved) > 0.3
    decimals = view.drag_decimals()
    assert 10.0 ** -decimals <= float(min(view.box.viewPixelSize()))  # rounding finer than one pixel
    count = window.undo_stack.count()
    drag(view, start, end)
    new = m.matrices[name][row].copy()
    np.testing.assert_allclose(new, old + moved, atol=0.5 * 10.0 ** -decimals + 1e-9)
    assert not np.allclose(new, old)
    assert window.undo_stack.count() == count + 1  # six moves, one step
    # the arrow's head is where the mouse let go, and every step follows the new row
    arrow = next(a for a in view.plot.arrows if a.kind == kind and a.index == row)
    np.testing.assert_allclose(arrow.tip, new)
    assert_steps_follow(window, qtbot)
    window.undo_stack.undo()
    np.testing.assert_array_equal(m.matrices[name][row], old)
    assert_steps_follow(window, qtbot)
    window.undo_stack.redo()
    np.testing.assert_array_equal(m.matrices[name][row], new)
    window.tab.view_tabs.setCurrentWidget(view)
    settled(qtbot)


def test_dragging_arrow_heads_edits_rows_one_undo_step_per_drag(window, qtbot):
    view = show_vectors(window, qtbot)
    m = window.playground
    count = window.undo_stack.count()
    drag_and_check(window, qtbot, view, "q", 0)  # 'it' = [3, 1]
    drag_and_check(window, qtbot, view, "k", 1)  # 'street' = [1, 4]
    assert window.undo_stack.count() == count + 2  # two drags, two steps (never merged into one)
    # a drag on empty plane pans the view and edits nothing
    before = m.snapshot()["matrices"]
    x_range = view.box.viewRange()[0]
    empty = pixel_of(view, [x_range[0] + 0.3, -0.2])
    drag(view, empty, empty + QPoint(50, 0))
    assert m.snapshot()["matrices"] == before
    assert view.box.viewRange()[0] != x_range


def test_hover_numbers_equal_a_hand_computation_and_export(window, qtbot, tmp_path):
    view = show_vectors(window, qtbot)
    # the pointer over the head of 'street', as pyqtgraph's scene reports it: QTest's synthetic moves stop reaching
    # the scene once an earlier test in the same process has moved the mouse (offscreen), so the scene's own signal
    # is sent; the view's handling of it (the hit test, the read-out) is what this test checks
    scene_pos = view.box.mapViewToScene(QPointF(1.0, 4.0))
    view.plot.scene().sigMouseMoved.emit(scene_pos)
    qtbot.waitUntil(lambda: view.space.hovered == ("k", 1), timeout=5000)
    q, k = np.array([3.0, 1.0]), np.array([1.0, 4.0])
    dot = 3.0 * 1.0 + 1.0 * 4.0
    qn, kn = math.sqrt(10.0), math.sqrt(17.0)
    angle = math.degrees(math.acos(dot / (qn * kn)))
    scores = np.array([3 * 3 + 1 * 1, dot, 3 * 1.5 + 1 * 0.5]) / math.sqrt(2.0)
    weight = math.exp(scores[1]) / np.exp(scores).sum()
    p = view.space.pair(0, 1)
    assert (p.dot, p.q_norm, p.k_norm) == pytest.approx((dot, qn, kn), rel=1e-12)
    assert p.angle_deg == pytest.approx(angle, rel=1e-12)
    assert p.weight == pytest.approx(weight, rel=1e-12)
    text = view.hover_label.text()
    for shown in (f"q·k = {dot:.4g}", f"|q| {qn:.4g}", f"|k| {kn:.4g}", f"cos {angle:.1f}°", f"weight {weight:.3f}"):
        assert shown in text, (shown, text)
    # the selected query's projection onto each key: the foot of q on k's line
    np.testing.assert_allclose(view.space.feet[1], (q @ k) / (k @ k) * k, rtol=1e-12)
    # a new scale changes the hovered weight at once
    window.playground.set_scale(1.0)
    weight1 = math.exp(dot) / np.exp(scores * math.sqrt(2.0)).sum()
    assert f"weight {weight1:.3f}" in view.hover_label.text()
    check_export(view, tmp_path)


def test_pca_plane_above_two_dimensions_and_drag_is_off(window, qtbot):
    view = show_vectors(window, qtbot, "cat-sat-mat")
    m = window.playground
    m.set_mode("qkv")  # Q, K, V edited directly, d_k = 4: only the plane stops the drag
    q, k = m.matrices["Q"].copy(), m.matrices["K"].copy()
    s = np.linalg.svd(np.vstack([q, k]), compute_uv=False)
    ratio = s[:2] ** 2 / (s ** 2).sum()
    assert not view.space.draggable
    note = view.note.text()
    assert "PCA" in note and f"{ratio.sum():.0%}" in note and "exact only in 2-D" in note
    assert view.plot.plot_item.getAxis("bottom").labelText == f"PC1 ({ratio[0]:.0%})"
    count = window.undo_stack.count()
    start = pixel_of(view, view.space.queries[0])
    drag(view, start, start + QPoint(40, 30))
    np.testing.assert_array_equal(m.matrices["Q"], q)
    assert window.undo_stack.count() == count
    assert "exact only in 2-D" in view.hover_label.text()  # said again where the user looks
    # back to d_k = 2: exact, draggable, axes are the columns
    m.set_dim("d_k", 2)
    assert view.space.draggable and view.space.qk.exact
    np.testing.assert_array_equal(view.space.queries, m.matrices["Q"])


def check_export(view, tmp_path):
    for suffix in ("png", "svg"):
        path = tmp_path / f"v.{suffix}"
        title = view.export(path)
        assert path.stat().st_size > 1000
        assert "it-animal-street" in title and "exact plane" in title
    from PySide6.QtGui import QImage

    assert "Queries (blue) and keys (orange)" in QImage(str(tmp_path / "v.png")).text("Title")
    assert "<title>" in (tmp_path / "v.svg").read_text()


def test_hidden_vectors_tab_waits_and_catches_up_when_shown(window, qtbot):
    """Behind another tab the Vectors model does no geometry per edit (two SVDs); shown again, it is current."""
    from attention_core import pca_2d

    view = show_vectors(window, qtbot, "lesson-random-4x8")  # d_k = 8: a PCA plane
    tab = window.tab
    tab.view_tabs.setCurrentWidget(tab.pipeline)
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=3000)
    before = view.space.queries.copy()
    seen = []
    view.space.events.geometry.connect(lambda: seen.append(1))
    q_before = window.playground.computation.q.copy()
    assert window.edits.set_cell("X", 0, 0, 5.0)  # projection mode: Q = X W_Q moves
    assert not np.array_equal(window.playground.computation.q, q_before)  # the edit changed the queries
    assert seen == [] and np.array_equal(view.space.queries, before)  # nothing computed for a hidden tab
    tab.view_tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.isVisible(), timeout=3000)
    c = window.playground.computation  # the Q and K attention used
    expected = pca_2d(np.vstack([c.q, c.k])).coords[: len(c.q)]
    np.testing.assert_allclose(view.space.queries, expected, atol=1e-12)
    assert len(seen) == 1
