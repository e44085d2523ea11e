"""The command line, run as users run it: a subprocess of ``python -m app``."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_core import attention_steps, get_preset, load_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_train_writes_checkpoint_history_and_json(tmp_path):
    out = tmp_path / "run"
    r = run_cli("train", "--epochs", "1", "--seed", "0", "--out", str(out))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    for key in ("epochs", "reversal_accuracy", "sequence_accuracy", "head_reversal_scores", "seconds"):
        assert key in summary
    assert summary["sequence_accuracy"] >= 0.99
    assert np.array(summary["head_reversal_scores"]).shape == (2, 4)
    assert "[" in r.stderr and "/" in r.stderr  # the progress bar goes to stderr
    model, meta = load_checkpoint(out / "model.safetensors")
    assert meta["extra"]["train_config"]["seed"] == 0
    config = json.loads((out / "config.json").read_text())
    assert config["model_config"]["num_heads"] == 4
    rows = list(csv.reader((out / "history.csv").open()))
    assert rows[0][0] == "step" and len(rows) == 1 + 1 + int(rows[-1][0])


def test_train_refuses_bad_config(tmp_path):
    r = run_cli("train", "--d-model", "30", "--heads", "4", "--out", str(tmp_path))
    assert r.returncode != 0 and "divisible" in r.stderr


@pytest.mark.parametrize("view", ["scores", "scaled", "weights", "output"])
def test_export_csv_numbers_equal_core(tmp_path, view):
    out = tmp_path / f"{view}.csv"
    r = run_cli("export", "--preset", "cat-sat-mat", "--view", view, "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(out.open()))
    p = get_preset("cat-sat-mat")
    s = attention_steps(p.q, p.k, p.v)
    expected = getattr(s, view)
    assert [row[0] for row in rows[1:]] == list(p.query_tokens)
    expected_cols = list(p.key_tokens) if view != "output" else [f"v{j}" for j in range(p.v.shape[1])]
    assert rows[0][1:] == expected_cols
    np.testing.assert_allclose(np.array([[float(x) for x in row[1:]] for row in rows[1:]]), expected, rtol=1e-12)


def test_export_png_and_svg(tmp_path):
    png, svg = tmp_path / "w.png", tmp_path / "w.svg"
    assert run_cli("export", "--preset", "it-animal-street", "--view", "weights", "--out", str(png)).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000
    assert run_cli("export", "--preset", "magnitude", "--view", "scores", "--out", str(svg)).returncode == 0
    import xml.etree.ElementTree as ET

    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert "K3 off-axis" in svg.read_text()


@pytest.mark.parametrize(("args", "fragment"), [
    (("--preset", "nope", "--view", "weights"), "unknown preset"),
    (("--preset", "cat-sat-mat", "--view", "nope"), "unknown view"),
])
def test_export_refuses_unknown(tmp_path, args, fragment):
    r = run_cli("export", *args, "--out", str(tmp_path / "x.png"))
    assert r.returncode != 0 and fragment in r.stderr
    assert not (tmp_path / "x.png").exists()


def test_export_title_names_the_scale_behind_the_map():
    from app.cli import export_title

    assert export_title("scores", "magnitude", 1.0, 2) == "Scores Q·Kᵀ — magnitude"  # raw scores: no scale
    assert export_title("scaled", "magnitude", 1.0, 2) == "Scaled scores (× 1, unscaled) — magnitude"
    assert export_title("weights", "cat-sat-mat", None, 4) == "Weights = softmax (scale 1/√4) — cat-sat-mat"
    assert export_title("output", "x", 0.5, 4) == "Output = weights·V (scale 0.5 = 1/√4) — x"
