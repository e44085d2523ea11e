"""The optional steps' maps export as the five steps do: the Playground's title with its whole setting (preset,
mask, scale and every option on) in the image's title and in the CSV's ``#`` lines; and the pipeline figure (File →
Export pipeline figure…, ``export --view pipeline``) draws the rotated q and k, the biased and the capped maps when
those steps are on, with the library's numbers."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication
from qt_settle import settled

from attention_core import alibi_bias


def settle(qtbot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):
        QApplication.processEvents()
    settled(qtbot)


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
    # the numbers are the library's: ALiBi added to the soft-capped scores (c = 2), by hand
    biased = np.genfromtxt(tmp_path / "biased.csv", comments="#", delimiter=",")
    scaled = pipe.heatmaps["scaled"].values()
    lq, lk = scaled.shape
    np.testing.assert_allclose(biased, 2.0 * np.tanh(scaled / 2.0) + alibi_bias(1, lq, lk)[0], atol=1e-12)


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


def hand_rotate_half(x: np.ndarray, base: float) -> np.ndarray:
    """Rotary in the rotate-half layout, by hand: column c turns with column c + d/2 by position × base^(−2c/d)."""
    n, d = x.shape
    half = d // 2
    theta = base ** (-np.arange(half) * 2.0 / d)
    angle = np.arange(n)[:, None] * theta[None, :]
    a, b = x[:, :half], x[:, half:]
    return np.hstack([a * np.cos(angle) - b * np.sin(angle), b * np.cos(angle) + a * np.sin(angle)])


def test_the_pipeline_figure_draws_the_optional_steps_with_their_numbers(qtbot, tmp_path):
    from app.common.titles import ExportContext
    from app.playground.qt.pipeline_figure import PipelineFigure, write_pipeline_figure
    from attention_core import attention_steps, get_preset

    p = get_preset("cat-sat-mat")
    n = p.q.shape[0]
    causal = np.tril(np.ones((n, n), dtype=bool))
    steps = attention_steps(p.q, p.k, p.v, mask=causal, rotary_base=100.0, bias=alibi_bias(1, n)[0], softcap=2.0)
    context = ExportContext(preset="cat-sat-mat", mask="causal", scale=0.5, d_k=4, rotary_base=100.0, alibi=True,
                            softcap=2.0)
    fig = PipelineFigure(steps, p.query_tokens, p.key_tokens, context=context)
    maps = fig.heatmaps
    q_rot, k_rot = hand_rotate_half(p.q, 100.0), hand_rotate_half(p.k, 100.0)
    np.testing.assert_allclose(maps["q_rotated"].values(), q_rot, atol=1e-12)
    np.testing.assert_allclose(maps["k_rotated"].values(), k_rot, atol=1e-12)
    scaled = q_rot @ k_rot.T * 0.5
    np.testing.assert_allclose(maps["scores"].values(), q_rot @ k_rot.T, atol=1e-12)
    hand_bias = -np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) / 256.0  # one head: slope 2^-8
    np.testing.assert_allclose(maps["capped"].values(), 2.0 * np.tanh(scaled / 2.0), atol=1e-12)  # soft-cap first
    np.testing.assert_allclose(maps["biased"].values(), 2.0 * np.tanh(scaled / 2.0) + hand_bias, atol=1e-12)
    fig.deleteLater()
    out = tmp_path / "pipeline.svg"
    title = write_pipeline_figure(out, steps, p.query_tokens, p.key_tokens, context=context)
    text = out.read_text(encoding="utf-8")
    for words in ("Q rotated", "K rotated", "Biased scores (+ bias)", "Soft-capped scores"):
        assert words in text, words
    assert "rotary base 100" in title and "ALiBi bias" in title and "soft-cap 2" in title
    # with every option off, none of them
    plain = attention_steps(p.q, p.k, p.v)
    fig = PipelineFigure(plain, p.query_tokens, p.key_tokens)
    assert set(fig.heatmaps) == {"q", "k", "v", "scores", "scaled", "masked", "weights", "output"}
    fig.deleteLater()


def test_export_view_pipeline_passes_the_options_to_the_figure(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "pipeline.svg"
    r = subprocess.run([sys.executable, "-m", "app", "export", "--preset", "cat-sat-mat", "--view", "pipeline",
                        "--rotary-base", "10000", "--softcap", "2", "--out", str(out)], cwd=root,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(root), "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    for words in ("Q rotated", "K rotated", "Soft-capped scores", "rotary base 10000", "soft-cap 2"):
        assert words in text, words
    assert "Biased scores" not in text  # ALiBi is off
