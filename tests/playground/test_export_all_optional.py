"""File → Export all steps writes the optional steps that are on (rotated Q and K, soft-capped and biased scores)
beside the five, with the library's numbers; the five keep their file names. It wrote only the five before."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QApplication


def _csv(path):  # type: ignore[no-untyped-def]
    return np.genfromtxt(path, comments="#", delimiter=",")


def test_export_all_writes_the_optional_steps_that_are_on(window, qtbot, tmp_path):
    window.edits.apply("preset", lambda m: m.load_preset("cat-sat-mat"))
    window.edits.apply("rotary", lambda m: m.set_rotary(500.0))
    window.edits.apply("alibi", lambda m: m.set_alibi(True))
    window.edits.apply("cap", lambda m: m.set_softcap(2.0))
    window.tabs.setCurrentIndex(1)  # the Steps view hidden behind another tab: what is exported is still current
    QApplication.processEvents()
    written = window.export_all(tmp_path / "all")
    names = sorted({p.stem for p in written})
    # sorted by name they read in the order computed: the soft-cap (2a), then the bias (2b)
    assert names == ["0-k_rotated", "0-q_rotated", "1-scores", "2-scaled", "2a-capped", "2b-biased", "3-masked",
                     "4-weights", "5-output"]
    assert len(written) == 27 and all(p.stat().st_size > 0 for p in written)
    r = window.playground.result
    np.testing.assert_allclose(_csv(tmp_path / "all" / "0-q_rotated.csv"), r.q_rotated, rtol=1e-12)
    np.testing.assert_allclose(_csv(tmp_path / "all" / "0-k_rotated.csv"), r.k_rotated, rtol=1e-12)
    np.testing.assert_allclose(_csv(tmp_path / "all" / "2b-biased.csv"), r.biased, rtol=1e-12)
    np.testing.assert_allclose(_csv(tmp_path / "all" / "2a-capped.csv"), r.capped, rtol=1e-12)
    np.testing.assert_allclose(_csv(tmp_path / "all" / "4-weights.csv"), r.weights, rtol=1e-12)


def test_with_every_option_off_export_all_writes_the_five(window, tmp_path):
    written = window.export_all(tmp_path / "all")
    assert sorted({p.stem for p in written}) == ["1-scores", "2-scaled", "3-masked", "4-weights", "5-output"]
