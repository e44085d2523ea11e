"""``multi_head_steps`` refuses a head count that is not a whole number, and zero query rows, with a ValueError
naming the argument (before: a bare TypeError from numpy's reshape or from ``"2" < 1``, and "cannot reshape array
of size 0" for zero rows)."""

from __future__ import annotations

import numpy as np
import pytest

from attention_core import multi_head_steps


@pytest.mark.parametrize("num_heads", [2.0, "2", True, None, 1.5, 0, -2])
def test_a_head_count_that_is_not_a_whole_number_is_refused_by_name(num_heads):
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"num_heads must be a whole number >= 1, got"):
        multi_head_steps(x, x, x, num_heads)


def test_a_numpy_integer_head_count_is_a_whole_number():
    x = np.arange(12.0).reshape(3, 4)
    mh = multi_head_steps(x, x, x, np.int64(2))
    np.testing.assert_array_equal(mh.output, multi_head_steps(x, x, x, 2).output)
    assert mh.num_heads == 2 and type(mh.num_heads) is int


def test_zero_query_rows_are_refused_by_name():
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"q: multi_head_steps needs at least one query row, got shape \(0, 4\)"):
        multi_head_steps(np.ones((0, 4)), x, x, 2)


def test_zero_keys_still_give_zero_weights_and_a_zero_output():
    """What already worked stays: no key for any query is a fully masked row (zeros, not NaN)."""
    mh = multi_head_steps(np.ones((3, 4)), np.ones((0, 4)), np.ones((0, 4)), 2)
    assert mh.output.shape == (3, 4) and np.all(mh.output == 0)
