"""A real model's head opened in the Playground (Model tab → "Open this head in the Playground", one undo step):
undo and redo bring its numbers *and* its story back; two heads of the same name (the same head on two texts)
keep their own stories through undo and redo; the colour bars say no "range changed" (nothing was edited) and
the Saturation box shows all its lines."""

from __future__ import annotations

from qt_settle import settled

from tests.tolerance import assert_close


def traced(window, qtbot, path):
    session = window.inspect.model
    window.inspect.show()
    session.load(path)
    qtbot.waitUntil(lambda: session.trace is not None and not session.tracing, timeout=60_000)
    return session


def open_head(window, layer, head):
    session = window.inspect.model
    session.select_head(layer, head)
    window.inspect._tab.open_button.click()
    return session.trace


def test_redo_of_an_opened_head_restores_its_story(window, qtbot, tiny_model):
    m = window.playground
    first_story = m.story
    traced(window, qtbot, tiny_model)
    trace = open_head(window, 1, 2)
    opened = m.story
    assert opened.startswith(f"{trace.name} · layer 1 head 2 · ") and "edited" not in opened
    window.undo_action.trigger()  # Ctrl+Z
    assert m.story == first_story
    window.redo_action.trigger()  # Ctrl+Y
    assert m.story == opened  # was "": the head's preset is in no list of presets, so redo lost its story
    assert_close(m.result.weights, trace.attentions[1, 2])
    assert window.tab.story_label.text() == opened and window.tab.story_label.isVisible()


def test_the_same_head_on_two_texts_keeps_each_story_through_undo_and_redo(window, qtbot, tiny_model):
    m = window.playground
    session = traced(window, qtbot, tiny_model)
    first = open_head(window, 0, 1)
    story_a = m.story
    tokens = session.text.split()
    session.set_text(" ".join([tokens[1], tokens[0], *tokens[2:]]))  # another text: the head's preset, same name
    qtbot.waitUntil(lambda: session.trace is not first and session.trace is not None and not session.tracing,
                    timeout=60_000)
    second = open_head(window, 0, 1)
    story_b = m.story
    assert m.preset.name.endswith(" L0H1") and story_b.startswith(f"{second.name} · layer 0 head 1 · ")
    assert story_b != story_a and "edited" not in story_b  # its own story: not the first head's numbers' key
    window.undo_action.trigger()
    assert m.story == story_a
    assert_close(m.result.weights, first.attentions[0, 1])
    window.redo_action.trigger()
    assert m.story == story_b
    assert_close(m.result.weights, second.attentions[0, 1])


def test_an_opened_head_says_no_range_changed_and_shows_its_whole_saturation(window, qtbot, tiny_model):
    """Its inputs replace the preset's: no range "changed" (that answers an edit). And the Saturation box, updated
    while the Playground was out of sight behind the Model tab, is tall enough for its lines once shown again (it
    kept the old preset's height and cut the readout mid-line)."""
    tab = window.tab
    tab.set_narrow(True)  # as at 1280 px with the Learn dock open: the controls are a page of the left column
    tab.side_tabs.setCurrentWidget(tab.controls_scroll)
    settled(qtbot)
    box = tab.controls.saturation.parentWidget()  # the label's LabelBox
    assert box.height() >= box.needed_height()  # the premise: whole before
    traced(window, qtbot, tiny_model)
    open_head(window, 1, 2)
    m = window.playground
    assert not any("changed" in note for note in m.colours.notes.values()), m.colours.notes
    hm = tab.pipeline.heatmaps
    assert all("changed" not in hm[n].range_note() for n in hm), [hm[n].range_note() for n in hm]
    assert window.tabs.currentWidget() is tab
    settled(qtbot)
    rows = len(m.query_tokens)
    assert rows == 7 and m.saturation.count("<br>") == rows + 1  # the premise: 2 lines more than cat-sat-mat's
    assert box.isVisible() and box.needed_height() > 0
    qtbot.waitUntil(lambda: box.height() >= box.needed_height(), timeout=2000)
    label = tab.controls.saturation
    assert label.height() >= label.heightForWidth(label.width())
    window.edits.set_cell("Q", 0, 0, 40.0)  # an edit that moves the range still says so
    assert "changed" in m.colours.notes["scores"]
