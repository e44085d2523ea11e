"""A real model's head opened in the Playground (Model tab → "Open this head in the Playground", one undo step):
undo and redo bring its numbers *and* its story back, and two heads of the same name (the same head on two texts)
keep their own stories through undo and redo."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """An app-trained reversal model (2 layers × 4 heads), saved as ``attention-playground train`` saves a run."""
    from app.training.cli import write_run_folder
    from attention_core.train_config import TrainConfig
    from attention_core.training import ReversalTrainer

    trainer = ReversalTrainer(TrainConfig(steps=2, seed=0))
    trainer.run(lambda _r: None)
    out = tmp_path_factory.mktemp("tiny-run")
    write_run_folder(out, trainer)
    return out


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
    np.testing.assert_allclose(m.result.weights, trace.attentions[1, 2], atol=1e-6)
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
    np.testing.assert_allclose(m.result.weights, first.attentions[0, 1], atol=1e-6)
    window.redo_action.trigger()
    assert m.story == story_b
    np.testing.assert_allclose(m.result.weights, second.attentions[0, 1], atol=1e-6)
