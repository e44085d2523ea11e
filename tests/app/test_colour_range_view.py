"""The Steps view applies the model's colour ranges: ① and ② share one range, so the scale shows in colour, and
an edit that leaves the range alone leaves every unedited row's colours alone (checked on the colours
pyqtgraph paints: the image data through its levels and colour map)."""

from __future__ import annotations

import numpy as np

from app.views.heatmap_style import colormap


def painted(hm) -> np.ndarray:
    """The RGB of every cell as the map paints it."""
    lo, hi = hm.image.getLevels()
    norm = np.clip((np.asarray(hm.image.image) - lo) / (hi - lo), 0, 1)
    return colormap(hm.kind()).map(norm.ravel(), mode="float")[:, :3].reshape(*norm.shape, 3)


def setup(window, scale=0.5):
    m = window.playground
    m.load_preset("cat-sat-mat")
    m.set_mode("qkv")  # Q edited directly: an edit of Q's row 0 changes row 0 of the scores only
    m.set_scale(scale)
    return m


def test_shared_range_colours_scores_and_scaled_differently(window):
    setup(window, 0.5)
    hm = window.pipeline.heatmaps
    assert window.tab.shared_range.isChecked()
    assert hm["scores"].levels() == hm["scaled"].levels() == hm["masked"].levels()
    a, b = painted(hm["scores"]), painted(hm["scaled"])
    assert np.abs(a[0, 0] - b[0, 0]).max() > 0.05  # the same cell, visibly different
    assert "shared" in hm["scores"].range_note()


def test_switching_the_shared_range_off_gives_each_map_its_own(window):
    m = setup(window, 0.5)
    window.tab.shared_range.setChecked(False)
    assert not m.shared_range
    hm = window.pipeline.heatmaps
    assert hm["scaled"].levels()[1] < hm["scores"].levels()[1]
    m.set_shared_range(True)  # the model is the truth: the box follows it
    assert window.tab.shared_range.isChecked()
    assert hm["scaled"].levels() == hm["scores"].levels()


def test_editing_row_0_keeps_row_2_colours_when_the_range_holds(window):
    m = setup(window, 0.5)
    hm = window.pipeline.heatmaps
    before = {name: painted(hm[name]) for name in ("scores", "scaled", "masked")}
    levels = hm["scores"].levels()
    m.set_cell("Q", 0, 1, 0.6)
    assert hm["scores"].levels() == levels
    for name, old in before.items():
        new = painted(hm[name])
        np.testing.assert_array_equal(new[1:], old[1:])  # rows 1 and 2: exactly the same colours
        assert not np.array_equal(new[0], old[0])  # row 0 did change
    assert "changed" not in hm["scores"].range_note()


def test_a_range_that_moves_is_said_on_the_colour_bar(window):
    m = setup(window, 0.5)
    hm = window.pipeline.heatmaps["scaled"]
    m.set_cell("Q", 0, 0, 5.0)
    assert hm.range_note().startswith("⚠ range changed")
    assert hm.colorbar.getAxis("left").label.isVisible() and "changed" in hm.colorbar.getAxis("left").labelText
