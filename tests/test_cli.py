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
    steps = summary["steps"]
    assert f"step {steps}/{steps} (100%)" in r.stderr  # progress goes to stderr, stdout is the JSON
    model, meta = load_checkpoint(out / "model.safetensors")
    assert meta["extra"]["train_config"]["seed"] == 0
    config = json.loads((out / "config.json").read_text())
    assert config["model_config"]["num_heads"] == 4
    rows = list(csv.reader(ln for ln in (out / "history.csv").open() if not ln.startswith("#")))
    assert rows[0][0] == "step" and len(rows) == 1 + 1 + int(rows[-1][0])


def test_train_refuses_bad_config(tmp_path):
    r = run_cli("train", "--d-model", "30", "--heads", "4", "--out", str(tmp_path))
    assert r.returncode != 0 and "divisible" in r.stderr


@pytest.mark.parametrize("view", ["scores", "scaled", "weights", "output"])
def test_export_csv_numbers_equal_core(tmp_path, view):
    out = tmp_path / f"{view}.csv"
    r = run_cli("export", "--preset", "cat-sat-mat", "--view", view, "--out", str(out))
    assert r.returncode == 0, r.stderr
    p = get_preset("cat-sat-mat")
    s = attention_steps(p.q, p.k, p.v)
    expected = getattr(s, view)
    lines = out.read_text(encoding="utf-8").splitlines()
    labels = {ln.split(": ", 1)[0]: json.loads(ln.split(": ", 1)[1]) for ln in lines if ln.startswith("# rows")
              or ln.startswith("# columns")}  # the labels as #-lines (JSON lists); the numbers alone below them
    assert labels["# rows (query)"] == list(p.query_tokens)
    expected_cols = list(p.key_tokens) if view != "output" else [f"v{j}" for j in range(p.v.shape[1])]
    assert [v for k, v in labels.items() if k.startswith("# columns")] == [expected_cols]
    np.testing.assert_allclose(np.genfromtxt(out, comments="#", delimiter=","), expected, rtol=1e-12)


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


def test_export_title_names_the_view_and_the_setting_behind_the_map():
    from app.playground.cli import export_title

    assert export_title("scores", "magnitude", 0.5, 2) == "Scores Q·Kᵀ — preset magnitude · no mask · scale 0.5"
    assert export_title("scaled", "magnitude", 1.0, 2) == \
        "Scores Q·Kᵀ × 1 (unscaled) — preset magnitude · no mask · scale 1 (unscaled)"  # not "scaled"
    assert export_title("weights", "cat-sat-mat", None, 4, "causal") == \
        "Weights = softmax — preset cat-sat-mat · causal mask · scale 0.5 = 1/√4"  # the default, named
    assert export_title("output", "x", 0.3, 4) == "Output = weights·V — preset x · no mask · scale 0.3"


def test_train_progress_in_a_log_file_is_a_few_plain_lines(tmp_path):
    """stderr redirected to a file (as `train ... 2> log` does): a line every ~10 %, no carriage returns."""
    log = tmp_path / "train.log"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    with log.open("w") as fh:
        r = subprocess.run([sys.executable, "-m", "app", "train", "--steps", "40", "--out", str(tmp_path / "run")],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=fh, text=True, timeout=300)
    assert r.returncode == 0, log.read_text()
    text = log.read_text()
    assert "\r" not in text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    progress = [ln for ln in lines if ln.startswith("train: step ")]
    assert 5 <= len(progress) < 30 and len(lines) < 30
    for line in progress:
        assert "loss " in line and "seq-acc " in line, line
    assert progress[-1].startswith("train: step 40/40 (100%)")
    done = [int(ln.split()[2].split("/")[0]) for ln in progress]
    assert done == sorted(set(done))  # each line reports new progress


@pytest.mark.parametrize("size", [(30, 120), (0, 0)], ids=["sized", "unsized"])
def test_train_progress_on_a_terminal_is_a_live_bar(tmp_path, size):
    """stderr on a terminal (a pseudo-terminal here): tqdm's bar, redrawn in place with carriage returns. A terminal
    that reports no size (0 × 0, as an unsized pseudo-terminal does) still gets a bar: tqdm alone drew nothing."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    proc = subprocess.Popen([sys.executable, "-m", "app", "train", "--steps", "12", "--out", str(tmp_path / "run")],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    while True:  # read while it runs: a full pty buffer would block the child
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=300)
    os.close(master)
    assert proc.returncode == 0
    text = b"".join(chunks).decode("utf-8", "replace")
    frames = [f for f in text.split("\r") if "train" in f]
    assert len(frames) >= 2  # redrawn in place, not one line per update
    assert "12/12" in frames[-1] and "seq-acc" in frames[-1] and "step/s" in frames[-1]
