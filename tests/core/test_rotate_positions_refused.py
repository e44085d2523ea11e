"""``rotate`` takes a token's index as a position: negative, fractional and NaN positions are refused with a
ValueError naming them (they were accepted, and NaN turned every number into NaN)."""

from __future__ import annotations

import numpy as np
import pytest

from attention_core.positions import rotate


@pytest.mark.parametrize("positions", [[0, -1, 2], [0, 1.5, 2], [0, np.nan, 2], [0, np.inf, 2], ["0", "1", "2"]])
def test_rotate_refuses_positions_that_are_no_index(positions):
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match="rotate: positions"):
        rotate(x, positions)


def test_rotate_still_takes_whole_positions_given_as_floats_or_tensors():
    import torch

    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    want = rotate(x, np.arange(3))
    assert np.array_equal(rotate(x, np.arange(3.0)), want)
    assert np.array_equal(rotate(x, [[0, 1, 2], [0, 1, 2]]), want)  # broadcastable to x.shape[:-1]
    assert np.array_equal(rotate(torch.as_tensor(x), torch.arange(3)).numpy(), want)
    with pytest.raises(ValueError, match="rotate: positions"):
        rotate(torch.as_tensor(x), torch.tensor([0.0, -2.0, 1.0]))
