"""The optional steps' maps export as the five steps do: the Playground's title with its whole setting (preset,
mask, scale and every option on) in the image's title and in the CSV's ``#`` lines; and the pipeline figure (File →
Export pipeline figure…, ``export --view pipeline``) draws the rotated q and k, the biased and the capped maps when
those steps are on, with the library's numbers."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from attention_core import alibi_bias


def settle(qtbot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):
        QApplication.processEvents()
    qtbot.wait(10)


def every_option_on(window) -> None:  # type: ignore[no-untyped-def]
    window.edits.apply("preset", lambda m: m.load_preset("cat-sat-mat"))
    window.edits.apply("rotary", lambda m: m.set_rotary(500.0, 2))
    window.edits.apply("alibi", lambda m: m.set_alibi(True))
    window.edits.apply("cap", lambda m: m.set_softcap(2.0))
    window.edits.apply("mask", lambda m: m.set_mask("sliding"))
    window.edits.apply("window", lambda m: m.set_window(2, 1))


OPTION_WORDS = ("rotary base 500 on 2 of", "ALiBi bias", "soft-cap 2", "window 2 + 1 sink")
CSV_LINES = ("# rotary: rotary base 500 on 2 of", "# alibi: ALiBi bias", "# softcap: soft-cap 2",
             "# window: window 2 + 1 sink", "# preset: cat-sat-mat")


def test_every_new_map_exports_with_the_playgrounds_title_and_context(window, qtbot, tmp_path):
    every_option_on(window)
    settle(qtbot)
    pipe = window.pipeline
    maps = {"biased": pipe.heatmaps["biased"], "capped": pipe.heatmaps["capped"],
            **{name: hm for name, hm in pipe.rotary.maps.items() if not hm.isHidden()}}
    assert {"q", "q_rotated", "k", "k_rotated", "q_angles"} <= set(maps)
    for name, hm in maps.items():
        csv = tmp_path / f"{name}.csv"
        hm.export(csv)
        comments = [ln for ln in csv.read_text(encoding="utf-8").splitlines() if ln.startswith("#")]
        for line in CSV_LINES:
            assert any(c.startswith(line) for c in comments), (name, line, comments)
        png = tmp_path / f"{name}.png"
        hm.export(png)
        title = QImage(str(png)).text("Title")
        assert all(words in title for words in OPTION_WORDS), (name, title)
        assert "preset cat-sat-mat" in title and "scale" in title, (name, title)
    # each names what it shows, not only the window's short caption
    assert QImage(str(tmp_path / "capped.png")).text("Title").startswith("Soft-capped scores")
    assert QImage(str(tmp_path / "q_rotated.png")).text("Title").startswith("Q rotated")
    # the numbers are the library's: ALiBi added to the scaled scores, by hand
    biased = np.genfromtxt(tmp_path / "biased.csv", comments="#", delimiter=",")
    scaled = pipe.heatmaps["scaled"].values()
    lq, lk = scaled.shape
    np.testing.assert_allclose(biased, scaled + alibi_bias(1, lq, lk)[0], atol=1e-12)


def test_maps_built_after_the_exports_were_installed_follow_the_setting(window, qtbot, tmp_path):
    """The maps are built on first need, long after the window wired its exports: a later one still names the
    setting (and an option turned on later shows up in it)."""
    window.edits.apply("cap", lambda m: m.set_softcap(3.0))
    settle(qtbot)
    window.edits.apply("rotary", lambda m: m.set_rotary(10000.0))
    settle(qtbot)
    out = tmp_path / "capped.csv"
    window.pipeline.heatmaps["capped"].export(out)
    text = out.read_text(encoding="utf-8")
    assert "# softcap: soft-cap 3" in text and "# rotary: rotary base 10000" in text
    out = tmp_path / "k.csv"
    window.pipeline.rotary.maps["k_rotated"].export(out)
    assert "# softcap: soft-cap 3" in out.read_text(encoding="utf-8")
