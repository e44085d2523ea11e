"""Exported figures say what they show: the title names the view, the preset, the mask and the
scale; no "①" step glyphs; colour bars are labelled; the title fits. Titles are read back from the files' metadata
(PNG text "Title", SVG <title>, PDF /Title), and SVG text from the drawing itself, so nothing needs OCR."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def png_title(path: Path) -> str:
    from PIL import Image

    with Image.open(path) as im:
        return im.text.get("Title", "")


def svg_title_and_text(path: Path) -> tuple[str, str]:
    root = ET.parse(path).getroot()
    title = next((el.text or "" for el in root.iter() if el.tag.endswith("title")), "")
    text = " ".join(el.text or "" for el in root.iter() if el.tag.endswith("text"))
    return title, text


def test_cli_export_title_names_preset_scale_and_mask(tmp_path):
    """The issue's check: `export --preset cat-sat-mat --scale 1 --mask causal --view weights`."""
    out = tmp_path / "X.png"
    r = run_cli("export", "--preset", "cat-sat-mat", "--scale", "1", "--mask", "causal", "--view", "weights",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    title = png_title(out)
    assert "cat-sat-mat" in title
    assert "causal" in title
    assert "scale 1 " in title + " " and "unscaled" in title
    assert "Weights" in title  # the view
    assert "softmax(scaled" not in title and "Scaled" not in title  # scale 1 = nothing was scaled


def test_cli_export_scale_one_is_not_called_scaled(tmp_path):
    out = tmp_path / "s.svg"
    r = run_cli("export", "--preset", "magnitude", "--scale", "1", "--view", "scaled", "--out", str(out))
    assert r.returncode == 0, r.stderr
    title, text = svg_title_and_text(out)
    assert "Scaled" not in title and "unscaled" in title and "magnitude" in title and "no mask" in title
    assert "scaled score" not in text  # the colour bar too: these are the raw scores


def test_cli_export_default_scale_is_named_with_its_value(tmp_path):
    out = tmp_path / "w.svg"
    r = run_cli("export", "--preset", "cat-sat-mat", "--view", "masked", "--mask", "causal", "--out", str(out))
    assert r.returncode == 0, r.stderr
    title, text = svg_title_and_text(out)
    assert "scale 0.5 = 1/√4" in title  # d_k = 4 for cat-sat-mat
    assert "Masked scores" in text and "masked score" in text  # the drawn title and the colour bar's label


def test_export_heatmap_is_backward_compatible_and_returns_the_title(tmp_path, qapp):
    from app.widgets.file_export import export_heatmap

    out = tmp_path / "old.png"
    returned = export_heatmap(out, [[0.25, 0.75], [1.0, 0.0]], ["a", "b"], ["c", "d"], "weights", kind="weights")
    assert returned == "weights" == png_title(out)


def test_export_drops_circled_step_numbers_and_labels_the_colour_bar(tmp_path, qapp):
    from app.common.titles import ExportContext
    from app.widgets.file_export import export_heatmap

    out = tmp_path / "scores.svg"
    ctx = ExportContext(preset="edited", mask="none", scale=0.25, d_k=16)
    title = export_heatmap(out, np.array([[1.0, -2.0], [0.5, 3.0]]), ["q0", "q1"], ["k0", "k1"], "① Scores Q·Kᵀ",
                           context=ctx, colorbar_label="score")
    svg_title, text = svg_title_and_text(out)
    for shown in (title, svg_title, text):
        assert not any("\u2460" <= ch <= "\u2473" for ch in shown), shown
    assert title == svg_title
    assert "Scores Q·Kᵀ" in title and "edited" in title and "no mask" in title and "scale 0.25 = 1/√16" in title
    assert "score" in text.split()


def test_default_colour_bar_labels_follow_the_kind(tmp_path, qapp):
    from app.widgets.file_export import export_heatmap

    for kind, label in (("weights", "weight"), ("signed", "value")):
        out = tmp_path / f"{kind}.svg"
        export_heatmap(out, [[0.5, 0.5]], ["q"], ["a", "b"], "m", kind=kind)
        assert label in svg_title_and_text(out)[1].split(), kind


def test_a_long_context_widens_the_image_instead_of_clipping_the_title(tmp_path, qapp):
    from PIL import Image

    from app.widgets.file_export import export_heatmap
    from app.widgets.heatmap.export import title_width

    context = "training · " + " · ".join(f"detail number {i}" for i in range(8))
    out = tmp_path / "long.png"
    export_heatmap(out, [[0.1, 0.9], [0.4, 0.6]], ["a", "b"], ["c", "d"], "A small map", kind="weights",
                   context=context)
    with Image.open(out) as im:
        width = im.size[0] / 2  # PNGs are rendered at 2x
    assert title_width("A small map", context) > 520  # longer than the default minimum width: the test means it
    assert width >= title_width("A small map", context)


def test_training_context_names_task_step_and_accuracy():
    from app.common.titles import ExportContext, full_title

    title = full_title("layer 1 · head 2", ExportContext(task="reversal", step=40, total_steps=79, accuracy=0.97,
                                                         accuracy_step=39))
    assert title == "layer 1 · head 2 — reversal task · step 40 / 79 · test sequence accuracy 97% (at step 39)"


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_cli_exports_the_whole_pipeline(tmp_path, suffix):
    out = tmp_path / f"pipeline{suffix}"
    r = run_cli("export", "--preset", "cat-sat-mat", "--mask", "causal", "--scale", "1", "--view", "pipeline",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == out.resolve()
    if suffix == ".png":
        title = png_title(out)
    elif suffix == ".svg":
        title, text = svg_title_and_text(out)
        for step in ("Scores Q·Kᵀ", "Masked scores", "Weights = softmax", "Output = weights·V", "Q (queries)",
                     "K (keys)", "V (values)"):
            assert step in text, step
        # every step map has its own labelled colour bar
        for label in ("score", "masked score", "weight", "output value"):
            assert label in text, label
        assert "Scaled scores" not in text  # scale 1: the second map is the raw scores × 1
    else:
        data = out.read_bytes()
        assert data.startswith(b"%PDF")
        assert "cat-sat-mat".encode("utf-16-be") in data  # the document title (UTF-16 in the info dictionary)
        return
    for needle in ("cat-sat-mat", "causal mask", "scale 1 (unscaled)"):
        assert needle in title, (needle, title)


def test_cli_pipeline_refuses_csv(tmp_path):
    out = tmp_path / "pipeline.csv"
    r = run_cli("export", "--preset", "cat-sat-mat", "--view", "pipeline", "--out", str(out))
    assert r.returncode == 2 and ".pdf" in r.stderr
    assert not out.exists()


def test_pipeline_figure_shows_the_core_numbers(qapp):
    from app.playground.qt.pipeline_figure import PipelineFigure
    from attention_core import attention_steps, causal_mask, get_preset

    p = get_preset("bank-river-loan")
    steps = attention_steps(p.q, p.k, p.v, mask=causal_mask(3), scale=0.7)
    fig = PipelineFigure(steps, p.query_tokens, p.key_tokens, context="ctx")
    try:
        for name in ("scores", "scaled", "masked", "weights", "output"):
            np.testing.assert_array_equal(fig.heatmaps[name].values(), getattr(steps, name))
        np.testing.assert_array_equal(fig.heatmaps["v"].values(), steps.v)
        assert fig.heatmaps["masked"].blocked() is not None and fig.heatmaps["scores"].blocked() is None
        assert fig.plain_title.endswith("— ctx")
    finally:
        fig.deleteLater()
