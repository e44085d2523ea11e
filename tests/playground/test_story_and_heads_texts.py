"""The Playground's sentences say what is on screen: the Multi-head banner counts the parameters the
playground really has (no biases, as lesson 5 counts them) and names the scale the heads really use; the story says
"edited" only when a number changed."""

from __future__ import annotations

import re

from app.learn.model.engine import LessonRun
from app.learn.model.files import find_lesson
from app.playground.model.playground import PlaygroundModel


def _banner_count(html: str) -> int:
    return int(re.search(r"<b>(\d+)</b>", html).group(1))


def test_multihead_banner_and_lesson_agree_on_the_parameter_count():
    lesson = find_lesson("multi-head")
    run = LessonRun(lesson, PlaygroundModel(lesson.preset))
    run.start(6)  # "Count the parameters"
    assert _banner_count(run.model.heads_info) == round(run.expected())
    assert "no bias" in run.model.heads_info and "bias" in run.text  # both say whether biases count
    run.close()


def test_multihead_banner_names_the_scale_the_heads_use():
    m = PlaygroundModel("cat-sat-mat")
    m.set_heads(2)
    assert "1/√2" in m.heads_info
    m.set_scale(1)
    assert "√" not in m.heads_info and "unscaled" in m.heads_info
    m.set_scale(0.25)
    assert "√" not in m.heads_info and "0.25" in m.heads_info


def test_switching_to_qkv_mode_is_no_edit():
    m = PlaygroundModel("cat-sat-mat")
    assert m.mode == "projection" and "edited" not in m.story
    m.set_mode("qkv")
    assert "edited" not in m.story and not m.preset_edited and "43.3%" in m.story  # the same numbers
    m.set_cell("Q", 0, 0, 5.0)
    assert "edited" in m.story


def test_multihead_banner_counts_the_matrices_as_they_are():
    m = PlaygroundModel("cat-sat-mat")  # X and W: W_Q, W_K 4×4 …
    m.set_dim("d_model", 6)
    m.set_heads(2)
    shapes = [m.matrices[n].shape for n in ("W_Q", "W_K", "W_V", "W_O")]
    assert _banner_count(m.heads_info) == sum(r * c for r, c in shapes)


def test_the_one_head_hint_names_the_box_of_the_heads_control_and_no_side(window):
    """"Choose 2 or more heads in the Heads control (right)" was wrong on a narrow window, where the control sits in
    the left column's second tab: the hint now names the box the control is in, which is the same in both
    layouts."""
    from PySide6.QtWidgets import QGroupBox

    hint = window.playground.heads_info.split("<br>")[-1]
    assert "Choose 2 or more" in hint
    assert "right" not in hint and "left" not in hint
    box = window.controls.heads_spin.parentWidget()
    while not isinstance(box, QGroupBox):
        box = box.parentWidget()
    assert f'"{box.title()}"' in hint
    # why no side will do: the box is in the right-hand column when wide, in the left one's tabs when narrow
    tab = window.tab
    tab.set_narrow(False)
    assert tab.indexOf(tab.controls_scroll) == tab.count() - 1 and tab.controls_scroll.isAncestorOf(box)
    tab.set_narrow(True)
    assert tab.indexOf(tab.side_tabs) == 0 and tab.side_tabs.isAncestorOf(box)
