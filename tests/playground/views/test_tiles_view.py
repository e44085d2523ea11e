"""The Tiles view in the real window (offscreen): its table holds exactly the FlashSteps numbers of the tile shown
(and they are the running max and sum of the keys seen so far, computed here by hand from the masked scores), Step
and the slider move through the tiles, tiles the causal mask blocks are greyed, the last tile's output matches
Steps' to 1e-12, and the block sizes are one undo step each, refused with the reason beside them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from app.playground.views.tiles import model as tm
from attention_core import flash_steps


@pytest.fixture
def tiles(window, qtbot):
    m = window.playground
    m.load_preset("random-3")  # 4 queries × 4 keys
    m.set_mask("causal")
    window.view_tabs.setCurrentWidget(window.tab.tiles)
    qtbot.waitExposed(window.tab.tiles)
    return window.tab.tiles


def table_column(view, col: int) -> list[float]:
    return [view.table.item(r, col).data(256) for r in range(view.table.rowCount())]  # Qt.UserRole


def hand_m_l(masked: np.ndarray, seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, l = np.full(len(seen), -np.inf), np.zeros(len(seen))
    for i, n in enumerate(seen):
        s = masked[i, :n]
        if n and np.isfinite(s).any():
            m[i] = s.max()
            l[i] = np.exp(s - m[i]).sum()
    return m, l


def test_the_table_shows_the_flash_numbers_of_each_tile_as_step_moves(window, tiles):
    m = window.playground
    res = m.result
    ref = flash_steps(res.q, res.k, res.v, mask=res.mask, scale=res.scale, block_q=2, block_k=2)
    tiles.show_tile(1)
    seen = np.zeros(4, dtype=int)
    for n, tile in enumerate(ref.tiles, start=1):
        assert tiles.index == n and tiles.slider.value() == n
        assert tiles.position.text() == f"tile {n} of {len(ref.tiles)}"
        seen[tile.rows.start:tile.rows.stop] = tile.cols.stop
        m_hand, l_hand = hand_m_l(res.masked, seen)
        shown_m, shown_l = np.array(table_column(tiles, 1)), np.array(table_column(tiles, 2))
        np.testing.assert_array_equal(shown_m[tile.rows.start:tile.rows.stop], tile.m)  # the record's own fields
        np.testing.assert_array_equal(shown_l[tile.rows.start:tile.rows.stop], tile.l)
        np.testing.assert_allclose(shown_m, m_hand, atol=1e-12)
        np.testing.assert_allclose(shown_l, l_hand, atol=1e-12)
        rescale = np.array(table_column(tiles, 3))
        np.testing.assert_array_equal(rescale[tile.rows.start:tile.rows.stop], tile.rescale)
        if n < len(ref.tiles):
            tiles.step.click()
    assert not tiles.step.isEnabled()  # the last tile


def test_the_slider_shows_any_tile_and_causal_tiles_are_greyed(tiles):
    tiles.slider.setValue(3)
    assert tiles.index == 3 and tiles.grid.frame.index == 3
    assert tiles.grid.frame.current.q_block == 1 and tiles.grid.frame.current.k_block == 0
    assert tiles.grid.cell_status(0, 3) == tm.SKIPPED  # queries 0-1 against keys 2-3: all in their future
    assert tiles.grid.cell_status(1, 2) == tm.SKIPPED
    assert tiles.grid.cell_status(0, 0) == tm.DONE
    assert tiles.grid.cell_status(2, 0) == tm.CURRENT
    assert tiles.grid.cell_status(3, 3) == "pending"
    tiles.back.click()
    assert tiles.index == 2


def test_at_the_end_the_output_sits_beside_steps_with_their_largest_difference(window, tiles):
    tiles.slider.setValue(tiles.slider.maximum())
    assert "largest |tiles − Steps|" in tiles.difference.text()
    diff = float(re.search(r"= ([0-9.e+-]+)<", tiles.difference.text()).group(1))
    assert diff <= 1e-12
    np.testing.assert_allclose(tiles.flash_output.values(), window.playground.result.output, atol=1e-12)
    np.testing.assert_array_equal(tiles.steps_output.values(), window.playground.result.output)
    # random-3: 4 × 4 scores, d_k = d_v = 8; 2 × 2 tiles hold at most max(2·2 scores, 2·8 of q or of o) numbers
    assert "largest array held: 16 numbers" in tiles.memory.text()
    assert "never builds: 16 (100%)" in tiles.memory.text()


def test_block_sizes_are_one_undo_step_and_refused_with_a_reason(window, tiles):
    m, stack = window.playground, window.undo_stack
    before = stack.count()
    tiles.block_q.setValue(3)
    assert (m.block_q, m.block_k) == (3, 2)
    assert stack.count() == before + 1
    assert tiles.flash.block_q == 3 and len(tiles.flash.tiles) == 4  # 2 query blocks × 2 key blocks
    stack.undo()
    assert (m.block_q, m.block_k) == (2, 2) and tiles.block_q.value() == 2
    index = stack.index()
    tiles.block_k.setValue(0)
    assert tiles.refusal.text()  # the reason, beside the controls
    assert (m.block_q, m.block_k) == (2, 2) and tiles.block_k.value() == 2
    assert stack.index() == index  # nothing pushed by the refusal
    tiles.block_k.setValue(1)
    assert m.block_k == 1 and tiles.refusal.text() == ""
