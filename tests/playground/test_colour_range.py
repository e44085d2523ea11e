"""The step maps' colour ranges, derived by the model (app.playground.model.colour_range): shared across ①–③, stable
under edits that do not move the maximum past a nice bound, and a note when they do move."""

from __future__ import annotations

import numpy as np
import pytest

from app.playground.model.colour_range import NICE_STEPS, SHARED_STEPS, nice_bound
from app.playground.model.playground import PlaygroundModel


@pytest.mark.parametrize("m", [1e-7, 0.013, 0.5, 0.99, 1.0, 1.01, 1.93, 2.0, 7.3, 9.99, 123.0, 4.5e149])
def test_nice_bound_covers_the_data_and_wastes_at_most_half(m):
    b = nice_bound(m)
    assert m <= b <= 1.5 * m * (1 + 1e-9)
    mantissa = b / 10 ** np.floor(np.log10(b))
    assert any(np.isclose(mantissa, s) for s in NICE_STEPS) or np.isclose(mantissa, 1.0)


@pytest.mark.parametrize("m", [0.0, 1e-300, float("nan"), float("inf")])
def test_nice_bound_of_nothing_is_one(m):
    assert nice_bound(m) == 1.0


def qkv_model() -> PlaygroundModel:
    m = PlaygroundModel()
    m.set_mode("qkv")  # Q, K, V edited directly: an edit of Q's row 0 changes only row 0 of the scores
    return m


def test_shared_range_shows_the_scale():
    m = qkv_model()
    m.set_scale(0.5)
    lv = m.colours.levels
    assert lv["scores"] == lv["scaled"] == lv["masked"]
    hi = lv["scores"][1]
    assert hi >= np.abs(m.result.scores).max()
    # the same cell lands at different places of the one range: ② is visibly paler than ①
    assert abs(m.result.scaled[0, 0] / hi - m.result.scores[0, 0] / hi) > 0.2
    assert all(m.colours.notes[n].startswith("shared") for n in SHARED_STEPS)
    m.set_shared_range(False)
    lv = m.colours.levels
    assert lv["scaled"][1] < lv["scores"][1]  # each its own range: ② spreads its smaller numbers again
    assert lv["weights"] == (0.0, 1.0)


def test_shared_range_option_is_evented_and_not_undoable():
    m = qkv_model()
    seen: list[frozenset[str]] = []
    m.events.changed.connect(seen.append)
    before = m.snapshot()
    m.set_shared_range(False)
    assert seen == [frozenset({"colours"})] and m.snapshot() == before
    m.set_shared_range(False)  # no change, no event
    assert len(seen) == 1


def test_small_edit_keeps_the_range_and_a_big_one_says_it_changed():
    m = qkv_model()
    before = dict(m.colours.levels)
    m.set_cell("Q", 0, 1, 0.6)  # row 0's scores move, the maximum stays under the bound
    assert m.colours.levels == before
    assert not any("changed" in note for note in m.colours.notes.values())
    m.set_cell("Q", 0, 0, 5.0)
    assert m.colours.levels["scores"] != before["scores"]
    assert m.colours.notes["scores"] == "⚠ range changed"
    m.set_cell("Q", 2, 3, 0.31)  # the next edit: the range is stable again and the note says what it is
    assert "changed" not in m.colours.notes["scores"]


def test_masked_cells_do_not_stretch_the_range():
    m = qkv_model()
    m.set_mask("causal")
    assert np.isinf(m.result.masked).any()
    assert np.isfinite(m.colours.levels["masked"]).all()


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_flow_says_no_mask_iff_nothing_is_blocked(mask):
    m = qkv_model()
    m.set_mask(mask)
    assert ("no mask: same as ②" in m.flow["masked"]) == (mask == "none")
    assert ("where blocked" in m.flow["masked"]) == (mask != "none")
    assert "<b>Q</b>" in m.flow["scores"] and "<b>K</b>" in m.flow["scores"] and "Q·Kᵀ" in m.flow["scores"]
    assert "<b>V</b>" in m.flow["output"] and "· V" in m.flow["output"]
    assert "softmax" in m.flow["weights"] and "+ mask" in m.flow["masked"]


def test_flow_follows_the_scale():
    m = qkv_model()
    m.set_scale(0.25)
    assert "× 0.25" in m.flow["scaled"]
    m.set_scale(1.0)
    assert "× 1" in m.flow["scaled"] and "unscaled" in m.flow["scaled"]


def test_heads_banner_iff_more_than_one_head():
    m = qkv_model()
    assert m.heads_banner == ""
    m.set_heads(2)
    assert "Heads = 2" in m.heads_banner and "href='multihead'" in m.heads_banner
    m.set_heads(1)
    assert m.heads_banner == ""
