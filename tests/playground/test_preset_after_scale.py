"""A preset loaded after the scale was set to 1 (or to a custom value) comes with the setting its story describes:
1/√d_k, so its story is its own, not "edited"; undo gives the scale back."""

from __future__ import annotations

import numpy as np
import pytest

from attention_core.presets import get_preset


def softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("mode", ["one", "custom"])
def test_a_preset_loaded_after_scale_1_tells_its_own_story(window, mode):
    m = window.playground
    buttons = window.controls.scale_buttons
    buttons[mode].click()  # the user's scale: 1 (unscaled), or the custom slider's
    assert m.state.scale_mode == mode
    assert window.load_preset("it-animal-street")
    preset = get_preset("it-animal-street")
    assert m.story == preset.story  # was "<b>it -> animal …, edited</b>: now …" though nothing was edited
    assert not m.preset_edited and m.state.scale_mode == "sqrt" and buttons["sqrt"].isChecked()
    q, k = np.asarray(preset.q, float), np.asarray(preset.k, float)
    np.testing.assert_allclose(m.result.weights, softmax(q @ k.T / np.sqrt(q.shape[1])), rtol=1e-12)
    assert window.tab.story_label.text() == preset.story
    window.undo_action.trigger()  # the preset's load is one step: the scale comes back with the old inputs
    assert m.state.scale_mode == mode and buttons[mode].isChecked()
