"""Every heatmap CSV the app writes (``export`` on the command line, the window's Export buttons, a training head)
opens with ``#`` lines naming what it shows and in which setting, and ``numpy.genfromtxt(path, comments='#',
delimiter=',')`` reads back exactly the numbers shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_core import attention_steps, causal_mask, get_preset

ROOT = Path(__file__).resolve().parents[1]


def read_back(path: Path) -> np.ndarray:
    """The one documented call."""
    return np.genfromtxt(path, comments="#", delimiter=",")


def comments(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# ") and ": " in line:
            key, _, value = line[2:].partition(": ")
            out[key] = value
    return out


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("view", ["scores", "scaled", "masked", "weights", "output"])
def test_cli_export_csv_names_its_setting_and_reads_back_exactly(tmp_path, view):
    out = tmp_path / f"{view}.csv"
    r = run_cli("export", "--preset", "cat-sat-mat", "--view", view, "--mask", "causal", "--scale", "0.7",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    p = get_preset("cat-sat-mat")
    expected = getattr(attention_steps(p.q, p.k, p.v, mask=causal_mask(3), scale=0.7), view)
    got = read_back(out)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)  # repr round-trips: exact, -inf where blocked included
    c = comments(out)
    assert c["preset"] == "cat-sat-mat" and c["mask"] == "causal"
    assert c["mode"] == "projection, self-attention: Q = X·W_Q, K = X·W_K, V = X·W_V"
    assert c["scale"].startswith("0.7 ") and c["view"]
    assert json.loads(c["rows (query)"]) == list(p.query_tokens)
    cols = list(p.key_tokens) if view != "output" else [f"v{j}" for j in range(p.v.shape[1])]
    assert json.loads(c[f"columns ({'value dimension' if view == 'output' else 'key'})"]) == cols


def test_cli_export_csv_of_a_qkv_preset_names_its_mode(tmp_path):
    out = tmp_path / "w.csv"
    r = run_cli("export", "--preset", "magnitude", "--view", "weights", "--out", str(out))
    assert r.returncode == 0, r.stderr
    p = get_preset("magnitude")
    s = attention_steps(p.q, p.k, p.v)
    np.testing.assert_array_equal(read_back(out).reshape(s.weights.shape), s.weights)  # one query: a 1-D read
    c = comments(out)
    assert c["mode"] == "Q, K, V given" and c["mask"] == "none" and float(c["scale"].split()[0]) == s.scale


def test_window_export_names_edited_and_reads_back_labels_with_commas_and_hashes(tmp_path):
    """The Export buttons' path (``export_heatmap`` with the Playground's context), Qt-free for CSV: once an input
    changed the preset is "edited"; tokens holding ``,`` or ``#`` never break the numbers."""
    from app.common.titles import step_title
    from app.playground.model.export_context import playground_context
    from app.playground.model.playground import PlaygroundModel
    from app.widgets.file_export import export_heatmap

    model = PlaygroundModel("cat-sat-mat")
    model.set_mask("causal")
    out = tmp_path / "w.csv"
    export_heatmap(out, model.result.weights, list(model.query_tokens), list(model.key_tokens),
                   step_title("weights"), kind="weights", context=playground_context(model))
    assert comments(out)["preset"] == "cat-sat-mat"
    model.set_cell("Q", 0, 0, 2.5)
    model.set_tokens("query", ["a,b", "#c", "d"])
    s = model.result
    export_heatmap(out, s.masked, list(model.query_tokens), list(model.key_tokens), step_title("masked"),
                   blocked=~s.mask, context=playground_context(model))
    np.testing.assert_array_equal(read_back(out), s.masked)
    c = comments(out)
    assert c["preset"] == "edited" and c["mask"] == "causal" and float(c["scale"].split()[0]) == s.scale
    assert json.loads(c["rows (query)"]) == ["a,b", "#c", "d"]


def test_training_context_is_named(tmp_path):
    from app.common.titles import ExportContext
    from app.widgets.file_export import export_heatmap

    values = np.array([[1.0, 0.0], [0.25, 0.75]])
    out = tmp_path / "head.csv"
    ctx = ExportContext(task="reversal", step=12, total_steps=79, accuracy=0.875, accuracy_step=9)
    export_heatmap(out, values, ["2", "SEP"], ["2", "SEP"], "layer 1 · head 2", kind="weights", context=ctx)
    np.testing.assert_array_equal(read_back(out), values)
    c = comments(out)
    assert c["task"] == "reversal" and c["step"] == "12 of 79"
    assert c["test sequence accuracy"] == "0.875 (measured at step 9)"


def test_train_history_csv_names_task_step_and_accuracy(tmp_path):
    """``train``'s history.csv: '#' lines with the task, the last step and its test accuracy (the JSON's own), then
    the column names and one row per step; the plain call reads the numbers, the names' row as nan."""
    r = run_cli("train", "--steps", "3", "--task", "copy", "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    path = tmp_path / "run" / "history.csv"
    c = comments(path)
    assert c["task"] == "copy" and c["step"] == "3 of 3"
    assert float(c["test sequence accuracy"].split()[0]) == summary["sequence_accuracy"]
    table = read_back(path)
    assert np.isnan(table[0]).all()  # the column names
    names = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")][0].split(",")
    assert table[1:, names.index("step")].tolist() == [0, 1, 2, 3]
    assert table[-1, names.index("sequence_accuracy")] == summary["sequence_accuracy"]


def test_summary_and_bench_csvs_open_with_what_they_are(tmp_path):
    from attention_core.scaling.measure import iter_scaling
    from attention_core.scaling.results import ScalingConfig, ScalingRun
    from attention_core.tiny.experiments import write_summary_csv

    write_summary_csv(tmp_path / "s.csv", [{"run": "a", "steps": 5, "sequence_accuracy": 0.5}])
    assert (tmp_path / "s.csv").read_text().startswith("# Attention Playground: experiment summary")
    table = read_back(tmp_path / "s.csv")
    assert table.shape == (2, 16) and table[1, 7] == 5 and table[1, 9] == 0.5
    cfg = ScalingConfig(devices=("cpu",), impls=("naive-numpy",), min_n=8, max_n=16, repeat=1, d=4, heads=1)
    run = ScalingRun(cfg)
    for item in iter_scaling(cfg):
        run.add(item)
    run.write_csv(tmp_path / "b.csv")
    c = comments(tmp_path / "b.csv")
    assert c["devices"] == "cpu" and c["implementations"] == "naive-numpy" and c["d"] == "4"
    table = read_back(tmp_path / "b.csv")
    n_col = 3  # CSV_COLUMNS: device, implementation, dtype, n, …
    assert table[1:, n_col].tolist() == [8, 16]


def test_inspect_csv_names_model_and_tokens_and_reads_back(tmp_path):
    """``inspect``'s CSV: '#' lines (the model, layers, heads, tokens), the column names, one row per attended pair;
    the plain call reads the positions and weights (the names' row as nan)."""
    r = run_cli("train", "--steps", "2", "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    model = str(tmp_path / "run" / "model.safetensors")
    out = tmp_path / "i.csv"
    r = run_cli("inspect", "--model", model, "--text", "3 5 7 SEP", "--layer", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    from attention_core.pretrained import load_pretrained

    trace = load_pretrained(model).trace("3 5 7 SEP")
    c = comments(out)
    assert json.loads(c["tokens"]) == [str(t) for t in trace.tokens]
    assert c["layers"].startswith("1; heads: 0, 1, 2, 3")
    table = read_back(out)[1:]
    assert len(table) == json.loads(r.stdout.strip().splitlines()[-1])["rows"]
    for layer, head, q, k, _qt, _kt, weight in table:
        assert weight == pytest.approx(trace.attentions[int(layer), int(head), int(q), int(k)], rel=1e-6, abs=1e-9)
