"""The Tiles view's Qt-free model: every frame's running max, sum and output against a hand computation from the
masked scores of ``attention_steps`` (the prefix of keys a row has seen), the tiles' status under a causal mask,
the output against Steps', and the CSV rows of ``export --view tiles``."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from app.playground.model.playground import PlaygroundModel
from app.playground.views.tiles import model as tm
from attention_core import attention_steps, causal_mask, flash_steps


def expected_state(masked: np.ndarray, v: np.ndarray, row: int, seen: int) -> tuple[float, float, np.ndarray]:
    """m, l, o of ``row`` after its first ``seen`` keys, from the full masked row (what the tiles never build)."""
    s = masked[row, :seen]
    if not np.isfinite(s).any():
        return -np.inf, 0.0, np.zeros(v.shape[1])
    m = float(s.max())
    p = np.exp(s - m)
    return m, float(p.sum()), p @ v[:seen]


@pytest.mark.parametrize(("lq", "lk", "bq", "bk", "causal"), [(4, 4, 2, 2, True), (5, 7, 2, 3, False),
                                                             (6, 6, 4, 1, True), (3, 5, 3, 5, False)])
def test_every_frame_holds_the_running_max_sum_and_output_of_the_keys_seen(lq: int, lk: int, bq: int, bk: int,
                                                                          causal: bool) -> None:
    rng = np.random.default_rng(lq * 10 + lk)
    q, k, v = rng.normal(size=(lq, 3)), rng.normal(size=(lk, 3)), rng.normal(size=(lk, 2))
    mask = np.tril(np.ones((lq, lk), dtype=bool)) if causal else None
    ref = attention_steps(q, k, v, mask=mask)
    flash = flash_steps(q, k, v, mask=mask, scale=ref.scale, block_q=bq, block_k=bk)
    seen = np.zeros(lq, dtype=int)  # keys each row has been through, in the order the tiles were computed
    for n, tile in enumerate(flash.tiles, start=1):
        seen[tile.rows.start:tile.rows.stop] = tile.cols.stop
        frame = tm.frame_at(flash, n)
        assert frame.index == n and frame.current is tile
        for row in range(lq):
            m, l, o = expected_state(ref.masked, v, row, seen[row])
            assert frame.m[row] == pytest.approx(m, abs=1e-12) if np.isfinite(m) else frame.m[row] == -np.inf
            assert frame.l[row] == pytest.approx(l, abs=1e-12)
            np.testing.assert_allclose(frame.o[row], o, atol=1e-12)
    last = tm.frame_at(flash, len(flash.tiles))
    assert last.finished
    np.testing.assert_allclose(last.partial, ref.output, atol=1e-12)
    assert tm.largest_difference(flash, ref.output) <= 1e-12


def test_causal_tiles_above_the_diagonal_are_skipped_and_the_current_one_marked() -> None:
    q = k = v = np.eye(4)
    flash = flash_steps(q, k, v, mask=causal_mask(4), block_q=2, block_k=2)
    frame = tm.frame_at(flash, 1)
    assert frame.status.shape == (2, 2)
    assert frame.status[0, 1] == tm.SKIPPED  # every (query 0-1, key 2-3) cell is in the future
    assert frame.status[0, 0] == tm.CURRENT
    assert frame.status[1, 0] == tm.PENDING and frame.status[1, 1] == tm.PENDING
    end = tm.frame_at(flash, 99)  # clamped to the last tile
    assert end.index == len(flash.tiles) == 4
    assert sorted(end.status.ravel().tolist()) == [tm.CURRENT, tm.DONE, tm.DONE, tm.SKIPPED]
    assert tm.frame_at(flash, -3).index == 1


def test_a_larger_max_arriving_rescales_what_the_row_held() -> None:
    # query 0 scores key 0 at 1 and key 1 at 3: the second tile brings a larger max, so its rescale is e^(1 - 3)
    q = np.array([[1.0, 0.0]])
    k = np.array([[1.0, 0.0], [3.0, 0.0]])
    v = np.array([[1.0], [2.0]])
    flash = flash_steps(q, k, v, scale=1.0, block_q=1, block_k=1)
    first, second = tm.frame_at(flash, 1), tm.frame_at(flash, 2)
    assert tm.rescaled_rows(first) == []  # nothing held yet: nothing to shrink
    assert tm.rescaled_rows(second) == [0]
    assert second.rescale[0] == pytest.approx(np.exp(1.0 - 3.0), abs=1e-15)
    assert second.m[0] == 3.0
    assert second.l[0] == pytest.approx(np.exp(-2.0) + 1.0, abs=1e-15)


def test_the_playgrounds_flash_is_of_what_steps_shows() -> None:
    m = PlaygroundModel("random-3")
    m.set_mask("causal")
    flash = tm.flash_of(m)
    assert tm.largest_difference(flash, m.result.output) <= 1e-12
    assert (flash.block_q, flash.block_k) == tm.block_sizes(m)
    assert flash.full_matrix_elements == len(m.query_tokens) * len(m.key_tokens)


def test_csv_rows_are_one_per_tile_with_exact_numbers() -> None:
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    flash = flash_steps(q, k, v, mask=np.tril(np.ones((4, 5), dtype=bool)), block_q=2, block_k=2)
    text = tm.tiles_csv_text(flash, ["# Attention Playground: tiles"])
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    assert tuple(rows[0]) == tm.CSV_HEADER
    assert len(rows) - 1 == len(flash.tiles) == 6
    for row, tile in zip(rows[1:], flash.tiles):
        rec = dict(zip(tm.CSV_HEADER, row))
        assert (int(rec["q_block"]), int(rec["k_block"])) == (tile.q_block, tile.k_block)
        assert rec["skipped"] == ("yes" if tile.skipped else "no")
        assert [float(x) for x in rec["m"].split()] == [float(x) for x in tile.m]
        assert [float(x) for x in rec["l"].split()] == [float(x) for x in tile.l]
    assert rows[1 + 2][5] == "yes"  # query rows 0-1 against keys 4: all in their future
