"""The rotate step's data (app/playground/model/rotary.py) against hand computations and ``attention_core.rotate``:
the angle of each column pair at each position, and the "why rotary is relative" curves, whose sum is the score of
the rotated q and k wherever the two sit, a function of m − n alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.playground.model.rotary import (
    angles,
    pair_labels,
    pair_scores,
    plotted_pair,
    relative_curves,
    rotary_data,
    rotary_picture,
)
from attention_core import attention_steps, rotate


def test_angles_by_hand():
    # dims 4, base 100: θ_0 = 1, θ_1 = 100^(−2/4) = 0.1; position 3 turns pair 0 by 3 rad, pair 1 by 0.3 rad
    got = angles([0, 3], 100.0, 4)
    assert got == pytest.approx(np.array([[0.0, 0.0], [3.0, 0.3]]), abs=1e-15)
    assert pair_labels(6) == ["k0·k3", "k1·k4", "k2·k5"]  # rotate-half: column p turns with p + dims/2


def test_pair_score_by_hand():
    # q = (a, b) = (1, 2) at m, k = (c, d) = (3, 4) at n, θ = 1 (dims 2): the score is (ac + bd)cos Δ + (ad − bc)sin Δ
    got = pair_scores([1.0, 2.0], [3.0, 4.0], [0.0, 1.0, -2.0], base=10000.0, dims=2)
    want = [11 * math.cos(x) + (4 - 6) * math.sin(x) for x in (0.0, 1.0, -2.0)]
    assert got[0] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("dims", [None, 4])
def test_curves_equal_the_rotated_dot_product_wherever_the_pair_sits(dims):
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((5, 6)), rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    steps = attention_steps(q, k, v, rotary_base=500.0, rotary_dims=dims)
    curves = relative_curves(steps, 4, 1)
    assert curves is not None and curves.offset == 3
    whole = np.isclose(curves.offsets, np.round(curves.offsets))
    for m, n in [(4, 1), (10, 7), (0, 3), (12, 0), (2, 2)]:  # the same offsets at other places, and others
        qr = rotate(q[4:5], np.array([m]), base=500.0, dims=dims)[0]
        kr = rotate(k[1:2], np.array([n]), base=500.0, dims=dims)[0]
        at = np.flatnonzero(whole & np.isclose(curves.offsets, m - n))
        assert at.size == 1
        assert curves.total[at[0]] == pytest.approx(float(qr @ kr), abs=1e-12)
    # at the offset where the pair sits now, the sum is the score the Steps view shows in ①
    now = np.flatnonzero(np.isclose(curves.offsets, curves.offset))[0]
    assert curves.total[now] == pytest.approx(steps.scores[4, 1], abs=1e-12)
    # the pairs add up, with the unrotated columns' constant
    assert curves.per_pair.sum(axis=0) + curves.rest == pytest.approx(curves.total, abs=1e-12)


def test_the_picture_follows_the_steps_positions_and_is_none_when_rotary_is_off():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((1, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    assert rotary_picture(attention_steps(q, k, v)) is None
    assert rotary_data(attention_steps(q, k, v)) is None
    steps = attention_steps(q, k, v, rotary_base=10000.0, positions=(np.array([2]), np.array([0, 1, 2])))
    pic = rotary_picture(steps)
    assert pic is not None and pic.q_angles.shape == (1, 2) and pic.k_angles.shape == (3, 2)
    assert pic.q_angles[0] == pytest.approx([2.0, 2.0 * 10000.0 ** -0.5])
    data = rotary_data(steps)
    assert data is not None and not data.same_positions and data.q_rows == ["m=2"]
    assert rotary_data(steps) is data  # kept: a hover that redraws the plot does not work it out again


def test_the_plotted_pair_is_the_pinned_query_key_cell():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((3, 4))
    steps = attention_steps(q, q, q, rotary_base=10000.0)
    assert plotted_pair(None, steps) == (2, 0)
    assert plotted_pair(("weights", 1, 2), steps) == (1, 2)
    assert plotted_pair(("output", 1, 2), steps) == (2, 0)  # an output cell has no key
