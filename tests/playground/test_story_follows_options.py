"""The story line and "edited" follow the options that change the weights: rotary, ALiBi, the soft-cap.

Before, the story key held the inputs, the scale and the mask only: with rotary, ALiBi or a soft-cap on, the story
still read "'cat' puts 43.3% on itself" while ④ showed 0.53, and the preset was not marked edited."""

from __future__ import annotations

import re

import numpy as np
import pytest

from app.playground.model.playground import PlaygroundModel
from attention_core import attention_steps

OPTIONS = {
    "rotary": lambda m: m.set_rotary(100.0),
    "ALiBi": lambda m: m.set_alibi(True),
    "soft-cap": lambda m: m.set_softcap(0.5),
}


def story_percentages(story: str) -> list[float]:
    return [float(x) / 100 for x in re.findall(r"puts ([0-9.]+)%", story)]


@pytest.mark.parametrize("option", list(OPTIONS))
def test_an_option_that_changes_the_weights_marks_the_preset_edited_and_the_story_follows(option):
    m = PlaygroundModel("cat-sat-mat")
    assert "43.3%" in m.story and not m.preset_edited
    OPTIONS[option](m)
    assert m.preset_edited
    assert "edited" in m.story and "43.3%" not in m.story
    w = np.asarray(m.result.weights)
    assert story_percentages(m.story) == pytest.approx([round(float(r.max()) * 100, 1) / 100 for r in w[:3]])


def test_the_story_percentages_equal_a_hand_computation_with_the_soft_cap():
    """cat-sat-mat: Q = K = V = X (identity projections), scale 1/√4; soft-cap 0.5: 0.5·tanh(s/0.5), then softmax."""
    m = PlaygroundModel("cat-sat-mat")
    x = m.state.matrices["X"]
    m.set_softcap(0.5)
    s = (x @ x.T) * 0.5
    capped = 0.5 * np.tanh(s / 0.5)
    w = np.exp(capped) / np.exp(capped).sum(axis=1, keepdims=True)
    assert story_percentages(m.story) == pytest.approx([round(float(r.max()) * 100, 1) / 100 for r in w])
    ref = attention_steps(x, x, x, scale=0.5, softcap=0.5)
    np.testing.assert_allclose(m.result.weights, ref.weights, rtol=1e-12)


@pytest.mark.parametrize("option", list(OPTIONS))
def test_turning_the_option_off_again_gives_the_preset_its_story_back(option):
    m = PlaygroundModel("cat-sat-mat")
    story = m.story
    OPTIONS[option](m)
    {"rotary": lambda: m.set_rotary(None), "ALiBi": lambda: m.set_alibi(False),
     "soft-cap": lambda: m.set_softcap(None)}[option]()
    assert not m.preset_edited and m.story == story


def test_alibi_with_another_head_count_is_another_slope_so_an_edit():
    m = PlaygroundModel("cat-sat-mat")
    m.set_alibi(True)
    m.load_preset("cat-sat-mat")  # every option off again
    assert not m.preset_edited and m.alibi is False
    m.set_heads(2)
    assert not m.preset_edited  # heads alone change nothing the Steps view shows
    m.set_alibi(True)
    assert m.preset_edited
