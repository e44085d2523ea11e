"""At first launch the Mask box shows no window row under "none": W and S show while the mask is "sliding" only.

Before, the row was built before it had a parent, its "hide" skipped (it read as hidden then), and it showed with
the panel: "W 3 sinks S 0" under "none"."""

from __future__ import annotations


def test_the_window_row_shows_with_the_sliding_mask_only(window):
    row = window.controls.window_row
    assert window.playground.mask_mode == "none"
    assert not row.isVisible()
    window.edits.apply("Mask: sliding window", lambda m: m.set_mask("sliding"))
    assert row.isVisible()
    assert row.window() is window  # a row of the panel, never a window of its own
    window.edits.apply("Mask: causal", lambda m: m.set_mask("causal"))
    assert not row.isVisible()
