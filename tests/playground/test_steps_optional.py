"""The Steps view's optional steps and their controls: ⓡ rotate, bias and soft-cap maps appear only while on and show
the model's numbers (checked against attention_core's own functions and hand formulas, not the maps' source); each
control is one undo step, refuses a bad value under itself, and follows undo and a session; d_k = 128 shows every
column."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication
from qt_settle import settled

from app.playground.qt.pipeline import STEPS
from attention_core import alibi_bias, rotate
from attention_core.presets import random_preset


def settle(qtbot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):
        QApplication.processEvents()
    settled(qtbot)


def test_with_every_option_off_the_view_is_the_five_maps(window):
    pipe = window.pipeline
    assert pipe.shown == STEPS and list(pipe.heatmaps) == list(STEPS)
    assert pipe.rotary is None  # never built while rotary was never on


def test_rotate_step_appears_only_while_on_and_shows_the_rotation(window, qtbot):
    pipe, m = window.pipeline, window.playground
    window.edits.apply("rotary", lambda mm: mm.set_rotary(100.0))
    settle(qtbot)
    strip = pipe.rotary
    assert strip is not None and strip.isVisible()
    q, k = m.computation.q, m.computation.k
    lq, lk = q.shape[0], k.shape[0]
    np.testing.assert_allclose(strip.maps["q"].values(), q, atol=0)
    np.testing.assert_allclose(strip.maps["q_rotated"].values(), rotate(q, np.arange(lq), base=100.0), atol=1e-12)
    np.testing.assert_allclose(strip.maps["k_rotated"].values(), rotate(k, np.arange(lk), base=100.0), atol=1e-12)
    d = q.shape[1]
    theta = 100.0 ** (-np.arange(0, d, 2) / d)  # by hand: pair p turns position × 100^(−2p/d)
    np.testing.assert_allclose(strip.maps["q_angles"].values(), np.arange(lq)[:, None] * theta, atol=1e-12)
    # the plot's dashed sum, where the pair sits now, is the score ① shows
    curves = strip.plot.curves
    assert curves is not None
    now = np.flatnonzero(np.isclose(curves.offsets, curves.offset))[0]
    assert curves.total[now] == pytest.approx(pipe.heatmaps["scores"].values()[curves.query, curves.key], abs=1e-12)
    # hovering a rotated cell goes to the model as that step's cell (the explanation bar shows its rotation)
    strip.maps["q_rotated"].cellHovered.emit(1, 0)
    assert m.hovered == ("q_rotated", 1, 0)
    window.edits.apply("rotary off", lambda mm: mm.set_rotary(None))
    settle(qtbot)
    assert strip.isHidden() and pipe.shown == STEPS


def test_bias_and_softcap_maps_show_the_model_numbers(window, qtbot):
    pipe, m = window.pipeline, window.playground
    window.edits.apply("alibi", lambda mm: mm.set_alibi(True))
    settle(qtbot)
    assert pipe.shown == ("scores", "scaled", "biased", "masked", "weights", "output")
    scaled = pipe.heatmaps["scaled"].values()
    lq, lk = scaled.shape
    np.testing.assert_allclose(pipe.heatmaps["biased"].values(), scaled + alibi_bias(1, lq, lk)[0], atol=1e-12)
    assert pipe.heatmaps["biased"].isVisible()
    window.edits.apply("cap", lambda mm: mm.set_softcap(0.5))
    settle(qtbot)
    assert pipe.shown == ("scores", "scaled", "capped", "biased", "masked", "weights", "output")  # soft-cap first
    capped = 0.5 * np.tanh(scaled / 0.5)
    np.testing.assert_allclose(pipe.heatmaps["capped"].values(), capped, atol=1e-12)
    np.testing.assert_allclose(pipe.heatmaps["biased"].values(), capped + alibi_bias(1, lq, lk)[0], atol=1e-12)
    assert m.result.capped is not None
    window.undo_stack.undo()
    window.undo_stack.undo()
    settle(qtbot)
    assert pipe.shown == STEPS and not any(pipe._built[n][0].isVisible() for n in ("biased", "capped"))


def controls(window):  # type: ignore[no-untyped-def]
    return window.tab.controls


def test_each_control_is_one_undo_step_and_follows_undo(window, qtbot):
    c, m, stack = controls(window), window.playground, window.undo_stack
    pos = c.positions
    n = stack.count()
    pos.rotary_check.setChecked(True)
    assert m.rotary_base == 10000.0 and stack.count() == n + 1
    pos.alibi_check.setChecked(True)
    assert m.alibi and stack.count() == n + 2
    pos.softcap_check.setChecked(True)
    assert m.softcap == 5.0 and stack.count() == n + 3
    c.mask_combo.setCurrentIndex(c.mask_combo.findData("sliding"))
    assert m.mask_mode == "sliding" and stack.count() == n + 4
    assert c.window_row.isVisibleTo(c)
    c.window_row.window_spin.setValue(2)
    assert m.window == 2 and stack.count() == n + 5
    for _ in range(5):
        stack.undo()
    settle(qtbot)
    # the controls follow the model back
    assert not pos.rotary_check.isChecked() and not pos.alibi_check.isChecked()
    assert not pos.softcap_check.isChecked() and c.mask_combo.currentData() == m.mask_mode
    stack.redo()
    assert pos.rotary_check.isChecked() and not pos.base_edit.text() == ""


def test_bad_values_are_refused_under_their_control(window, qtbot):
    c, m, stack = controls(window), window.playground, window.undo_stack
    pos = c.positions
    pos.rotary_check.setChecked(True)
    n = stack.count()
    pos.dims_spin.setValue(3)  # odd: columns turn in pairs
    assert m.rotary_dims is None and stack.count() == n
    assert pos.rotary_error.isVisibleTo(c) and "even" in pos.rotary_error.text()
    assert pos.dims_spin.value() == 0  # back to the model's ("all")
    pos.base_edit.setText("1")
    pos.base_edit.editingFinished.emit()
    assert m.rotary_base == 10000.0 and "base" in pos.rotary_error.text()
    assert pos.base_edit.text() == "10000"
    pos.softcap_check.setChecked(True)
    pos.softcap_edit.setText("-2")
    pos.softcap_edit.editingFinished.emit()
    assert m.softcap == 5.0 and pos.softcap_error.isVisibleTo(c) and pos.softcap_edit.text() == "5"
    c.mask_combo.setCurrentIndex(c.mask_combo.findData("sliding"))
    n = stack.count()
    c.window_row.window_spin.setValue(0)
    assert m.window != 0 and stack.count() == n and c.window_row.error.isVisibleTo(c)
    assert c.window_row.window_spin.value() == m.window
    # a later accepted change clears the refusal
    c.window_row.window_spin.setValue(2)
    assert m.window == 2 and not c.window_row.error.isVisibleTo(c)


def test_controls_follow_a_session(window, qtbot):
    m, pos = window.playground, controls(window).positions
    window.edits.apply("rotary", lambda mm: mm.set_rotary(500.0, 2))
    window.edits.apply("cap", lambda mm: mm.set_softcap(3.0))
    snap = m.snapshot()
    window.edits.apply("preset", lambda mm: mm.load_preset("cat-sat-mat"))
    assert not pos.rotary_check.isChecked()
    m.restore(snap)
    settle(qtbot)
    assert pos.rotary_check.isChecked() and pos.base_edit.text() == "500" and pos.dims_spin.value() == 2
    assert pos.softcap_check.isChecked() and pos.softcap_edit.text() == "3"
    assert window.pipeline.rotary is not None and window.pipeline.rotary.isVisible()


def test_d_k_128_shows_every_column(window, qtbot):
    m = window.playground
    window.edits.apply("8 x 128", lambda mm: mm.load_preset(random_preset(2, n_tokens=8, d_model=128)))
    window.edits.apply("qkv", lambda mm: mm.set_mode("qkv"))
    window.edits.apply("rotary", lambda mm: mm.set_rotary(10000.0))
    settle(qtbot)
    assert m.dims["d_k"] == 128 and m.dims["d_v"] == 128
    table = window.editors["Q"].table
    assert table.model().columnCount() == 128
    assert table.horizontalScrollBar().maximum() > 0  # the editor scrolls to the rest, nothing is cut
    assert window.pipeline.heatmaps["output"].values().shape == (8, 128)
    assert window.pipeline.rotary.maps["q_rotated"].values().shape == (8, 128)
    assert window.pipeline.rotary.maps["q_angles"].values().shape == (8, 64)
    assert controls(window).heads_spin.maximum() >= 128
