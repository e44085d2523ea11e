"""The Generate view in the real window on the app's own trained model: Step draws the step's own numbers (the
distribution, the grown map, every head's newest row, the cache and its bytes), a refused value is said under its
control, Ctrl+Z takes the newest token back while the view is shown (and leaves the Playground's undo alone), and the
generated text opens in the Heads view."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from qt_settle import settled

from app.model_tab.model.generate_views import distribution


def open_generate(window, qtbot, path):
    host = window.inspect
    tab = host.show()
    host.model.load(path)
    qtbot.waitUntil(lambda: host.model.trace is not None and not host.model.tracing, timeout=60_000)
    tab.views.setCurrentWidget(tab.generate)
    settled(qtbot)
    return host.model, tab, tab.generate


def step(qtbot, view, n=1):
    want = len(view.model.steps) + n
    if n == 1:
        view.step_button.click()
    else:
        view.count_spin.setValue(n)
        view.run_button.click()
    qtbot.waitUntil(lambda: not view.model.running, timeout=60_000)
    assert len(view.model.steps) == want


def test_step_draws_the_steps_own_numbers(window, qtbot, own_model):
    session, _tab, view = open_generate(window, qtbot, own_model)
    assert view.chart.rows() == [] and not view.undo_button.isEnabled()
    step(qtbot, view, 3)
    s = view.model.steps[-1]
    assert view.chart.rows() == distribution(s)
    session.select_head(1, 3)
    grown = view.grown.values()
    assert grown.shape == (3, s.query_position + 1)
    for i, st in enumerate(view.model.steps):
        np.testing.assert_allclose(grown[i, list(st.cache_positions)], st.attentions[1, 3])
    np.testing.assert_allclose(view.newest.values(), s.attentions.reshape(-1, len(s.cache_positions)))
    assert f"{int(s.cache_bytes):,} bytes" in view.cache_label.text()
    for st in view.model.steps:  # each new token in the text, on its probability's colour
        assert st.token.replace("␣", " ") in view.text_view.toPlainText()
    assert view.undo_button.isEnabled() and "made" in view.status_label.text()


def test_a_refused_value_is_said_under_its_control_and_the_old_one_shown(window, qtbot, own_model):
    _session, _tab, view = open_generate(window, qtbot, own_model)
    view.greedy_check.setChecked(False)
    assert not view.model.greedy
    view.temperature_edit.setText("-1")
    view.temperature_edit.editingFinished.emit()
    label = view.errors["temperature"]
    assert not label.isHidden() and "above 0" in label.text()
    assert view.model.temperature == 1.0 and view.temperature_edit.text() == "1"
    view.cache_combo.setCurrentText("sinks")
    view.sinks_edit.setText("40")
    view.sinks_edit.editingFinished.emit()
    assert not view.errors["sinks"].isHidden() and "fewer than the window" in view.errors["sinks"].text()
    assert view.model.sinks == 4
    view.temperature_edit.setText("0.7")
    view.temperature_edit.editingFinished.emit()
    assert label.isHidden() and view.model.temperature == 0.7


def test_ctrl_z_takes_the_newest_token_back_while_the_view_is_shown(window, qtbot, own_model):
    _session, tab, view = open_generate(window, qtbot, own_model)
    step(qtbot, view, 2)
    playground_undo = window.undo_stack.index()
    view.step_button.setFocus()
    QTest.keyClick(view.step_button, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(view.model.steps) == 1
    assert window.undo_stack.index() == playground_undo  # the Playground's history is left alone
    tab.views.setCurrentWidget(tab.grid)  # another view: Ctrl+Z is the window's again
    QTest.keyClick(tab.grid, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(view.model.steps) == 1


def test_the_generated_text_opens_in_the_heads_view(window, qtbot, own_model):
    session, tab, view = open_generate(window, qtbot, own_model)
    assert not view.heads_button.isEnabled()
    step(qtbot, view, 2)
    ids = view.model.ids()
    view.heads_button.click()
    assert tab.views.currentWidget() is tab.grid
    qtbot.waitUntil(lambda: not session.tracing, timeout=30_000)
    assert [int(i) for i in session.trace.ids] == ids


def test_the_traces_read_outs_step_aside_for_the_generate_view(window, qtbot, own_model):
    """The bar under the views speaks of the traced text (its next tokens, "Open layer … in the Playground"): hidden
    while the Generate view, which has its own, is in front; back with the Heads view."""
    _session, tab, _view = open_generate(window, qtbot, own_model)
    assert tab.open_button.isHidden() and tab.next_label.isHidden()
    tab.views.setCurrentWidget(tab.grid)
    assert not tab.open_button.isHidden() and not tab.next_label.isHidden()
