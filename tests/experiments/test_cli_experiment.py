"""``experiment`` and the new ``train`` flags, run as users run them (a subprocess of ``python -m app``)."""

from __future__ import annotations

import csv
import json

import numpy as np
from test_cli import run_cli  # tests/ is on sys.path (rootdir-relative imports)

from attention_core import load_checkpoint


def test_experiment_list_names_the_presets():
    r = run_cli("experiment", "--list")
    assert r.returncode == 0, r.stderr
    ids = [line.split("\t")[0] for line in r.stdout.strip().splitlines()]
    assert ids == ["positions", "causal-vs-bidirectional", "heads-1-vs-4", "dropout", "tasks"]


def test_experiment_preset_writes_every_run_and_the_summary(tmp_path):
    out = tmp_path / "exp"
    r = run_cli("experiment", "--preset", "causal-vs-bidirectional", "--steps", "30", "--out", str(out))
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.strip().splitlines()]
    table = lines[-1]
    assert table["experiment"] == "causal-vs-bidirectional" and table["differing"] == ["causal"]
    assert [row["causal"] for row in table["runs"]] == [True, False]
    with open(out / "summary.csv") as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert len(rows) == 2
    for row, run_line, causal in zip(table["runs"], lines[:-1], (True, False), strict=True):
        folder = out / row["folder"]
        model, meta = load_checkpoint(folder / "model.safetensors")
        assert meta["extra"]["train_config"]["causal"] is causal
        assert (folder / "history.csv").is_file() and (folder / "config.json").is_file()
        assert round(run_line["sequence_accuracy"], 4) == row["sequence_accuracy"]


def test_experiment_refuses_bad_input(tmp_path):
    r = run_cli("experiment", "--preset", "nope", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown preset" in r.stderr
    bad = tmp_path / "runs.json"
    bad.write_text(json.dumps({"runs": [{"positional": "spiral"}, {}]}))
    r = run_cli("experiment", "--runs", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "run 1" in r.stderr and "positional" in r.stderr


def test_train_task_flags_reach_the_model_and_the_json(tmp_path):
    out = tmp_path / "run"
    r = run_cli("train", "--task", "copy", "--positional", "rotary", "--attention-dropout", "0.1", "--steps", "40",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["task"] == "copy" and summary["positional"] == "rotary"
    assert np.array(summary["head_task_scores"]).shape == np.array(summary["head_reversal_scores"]).shape == (2, 4)
    model, meta = load_checkpoint(out / "model.safetensors")
    assert model.config.positional == "rotary" and model.config.attention_dropout == 0.1
    assert meta["extra"]["train_config"]["task"] == "copy"
    r = run_cli("train", "--task", "induction", "--seq-len", "20", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "distinct tokens" in r.stderr
