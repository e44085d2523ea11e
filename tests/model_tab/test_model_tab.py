"""The Model tab in the real window: an app-trained model opened, its heads drawn as the trace says, hover and the
next-token list, one head opened in the Playground (its steps are the model's), and undo back."""

from __future__ import annotations

import numpy as np
from qt_settle import settled

from tests.tolerance import assert_close


def open_model(window, qtbot, path):
    host = window.inspect
    tab = host.show()
    host.model.load(path)
    qtbot.waitUntil(lambda: host.model.trace is not None and not host.model.tracing, timeout=60_000)
    settled(qtbot)
    return host.model, tab


def test_the_model_tab_is_listed_last_and_built_when_opened(window):
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert titles == ["Playground", "Training", "Experiments", "Lab", "Model"]
    assert window.inspect._tab is None  # nothing of it built before it is opened


def test_before_a_model_the_tab_names_no_head_and_draws_no_numbers(window):
    """No model yet: the button named "layer 0 head 0" of nothing, and the empty mosaic's axes counted -0.3 … 1.3
    (tests/widgets/test_empty_maps_and_titles.py holds the mosaic to it)."""
    tab = window.inspect.show()
    assert window.inspect.model.trace is None
    assert tab.open_button.text() == "Open this head\nin the Playground" and not tab.open_button.isEnabled()
    assert tab.grid.plot.getAxis("left")._tickLevels == [[]]


def test_heads_are_drawn_from_the_trace_and_hover_moves_the_next_token_list(window, qtbot, own_model):
    session, tab = open_model(window, qtbot, own_model)
    t = session.trace
    assert tab.grid.shape == (2, 4)
    for layer in range(2):
        for head in range(4):
            np.testing.assert_array_equal(tab.grid.values(layer, head), t.attentions[layer, head])
    assert tab.tokens.tokens == t.tokens
    assert f"after '{t.tokens[-1]}'" in tab.next_label.text()
    session.hover(1)
    best = t.top_next(1)[1][0][0]
    assert f"after '{t.tokens[1]}'" in tab.next_label.text() and best in tab.next_label.text()
    assert tab.tokens.highlight == 1
    tab.grid.headClicked.emit(1, 2)
    assert session.selected == (1, 2) and tab.views.currentWidget() is tab.head_map
    np.testing.assert_array_equal(tab.head_map.values(), t.attentions[1, 2])
    assert "layer 1 head 2" in tab.open_button.text()
    assert "attention-playground" in tab.sources.info_label.text() or "reversal" in tab.sources.info_label.text()
    assert window.statusBar().currentMessage().startswith("Model: ")


def test_a_head_opens_in_the_playground_and_undo_returns(window, qtbot, own_model):
    session, tab = open_model(window, qtbot, own_model)
    before = window.playground.result.weights.copy()
    session.select_head(1, 2)
    tab.open_button.click()
    assert window.tabs.currentWidget() is window.tab
    assert "Ctrl+Z returns" in window.statusBar().currentMessage()
    t = session.trace
    shown = window.playground.result
    assert_close(shown.weights, t.attentions[1, 2])
    assert_close(shown.q, t.q[1, 2])
    assert window.playground.mask_mode == "causal" and window.playground.state.scale_mode == "sqrt"  # 1/√d_head
    assert window.playground.story.startswith(f"{t.name} · layer 1 head 2 · ")  # the head's own story, not "edited"
    window.edits.set_cell("Q", 0, 0, 1.5)
    assert "edited" in window.playground.story  # and once a number changes, it says so
    window.undo_stack.undo()
    window.undo_stack.undo()
    np.testing.assert_array_equal(window.playground.result.weights, before)


def test_a_refused_text_is_said_next_to_the_box(window, qtbot, own_model):
    session, tab = open_model(window, qtbot, own_model)
    tab.text_edit.setText("not numbers")
    tab.trace_button.click()
    qtbot.waitUntil(lambda: not session.tracing, timeout=30_000)
    assert tab.error_label.isVisible() and "is not a token of this model" in tab.error_label.text()
    assert tab.tokens.tokens == session.trace.tokens  # the previous trace stays on screen, consistent
