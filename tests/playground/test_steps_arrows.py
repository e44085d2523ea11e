"""The Steps view as one flow: an arrow with its operation into every map, Q/K/V where they enter, ③ saying
"no mask: same as ②" iff nothing is blocked, and the heads banner (iff Heads > 1) linking to the Multi-head tab;
a refused head count is said next to the Heads control."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
def test_arrows_name_each_operation_and_the_mask(window, mask):
    m = window.playground
    m.load_preset("cat-sat-mat")
    m.set_mask(mask)
    if mask == "padding":
        m.toggle_padding(1)
    arrows = {name: a.text() for name, a in window.pipeline.arrows.items()}
    assert "Q·Kᵀ" in arrows["scores"] and "<b>Q</b>" in arrows["scores"] and "<b>K</b>" in arrows["scores"]
    assert "× " in arrows["scaled"] and "①" in arrows["scaled"]
    assert "+ mask" in arrows["masked"] and "softmax" in arrows["weights"]
    assert "· V" in arrows["output"] and "<b>V</b>" in arrows["output"]
    assert ("no mask: same as ②" in arrows["masked"]) == (mask == "none")
    assert ("hatched" in arrows["masked"]) == (mask != "none")
    assert all(window.pipeline.arrows[n].isVisible() for n in arrows)


ARROW = "⟶"


def test_each_arrow_is_one_glyph_that_reads_as_an_arrow(window):
    """"① ─× 0.5─▶" rendered as "① −× 0.5−▶": the box-drawing line in the app's font looked like a minus sign next to
    the operation. Each arrow is one long-arrow glyph the font has, wider than a minus sign, between the source and
    its operation."""
    from PySide6.QtGui import QFontMetricsF
    from PySide6.QtWidgets import QLabel

    from app.playground.model.texts import plain_text

    for arrow in window.pipeline.arrows.values():
        text = plain_text(arrow.text())
        assert "─" not in text and "▶" not in text, text
        assert text.count(ARROW) == 1, text
        fm = QFontMetricsF(arrow.font())
        assert fm.inFontUcs4(ord(ARROW)) and fm.horizontalAdvance(ARROW) >= 1.5 * fm.horizontalAdvance("−")
        source, op = (part.strip() for part in text.split(ARROW))
        assert source and op, text
    assert plain_text(window.pipeline.arrows["scaled"].text()).startswith(f"① {ARROW} × ")
    probe = QLabel(window.pipeline.arrows["weights"].text())  # the arrow is as wide as the font draws it, not a dash
    assert probe.fontMetrics().horizontalAdvance(ARROW) > probe.fontMetrics().horizontalAdvance("-") * 2


def test_heads_banner_iff_heads_and_its_link_opens_multi_head(window, qtbot):
    tab = window.tab
    window.load_preset("lesson-random-4x8")
    assert not tab.heads_banner.isVisible()
    window.controls.heads_spin.setValue(2)
    assert tab.heads_banner.isVisible() and "Heads = 2" in tab.heads_banner.text()
    tab.heads_banner.linkActivated.emit("multihead")
    assert window.view_tabs.currentWidget() is window.multihead
    assert not tab.heads_banner.isVisible()  # it speaks about the Steps view only
    window.view_tabs.setCurrentWidget(window.pipeline)
    assert tab.heads_banner.isVisible()
    window.controls.heads_spin.setValue(1)
    assert not tab.heads_banner.isVisible()


def test_refused_heads_are_said_next_to_the_heads_control(window):
    window.load_preset("lesson-random-4x8")  # d_k = 8
    c = window.controls
    c.heads_spin.setValue(3)
    assert window.playground.num_heads == 1 and c.heads_spin.value() == 1
    assert c.heads_error.isVisible() and "divide" in c.heads_error.text()
    assert c.heads_error.parentWidget() is c.heads_spin.parentWidget()  # the same group box
    assert not window.error_label.isVisible()  # not in the left column
    gap = c.heads_error.mapTo(window, c.heads_error.rect().topLeft()).y() - \
        c.heads_spin.mapTo(window, c.heads_spin.rect().bottomLeft()).y()
    assert 0 <= gap < 40  # right under it
    c.heads_spin.setValue(2)
    assert window.playground.num_heads == 2 and not c.heads_error.isVisible()
