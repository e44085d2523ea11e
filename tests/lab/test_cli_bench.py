"""``attention-playground bench``: the scaling lab on the command line (CSV, JSON line, progress, refusals)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from attention_core.scaling.results import CSV_COLUMNS, IMPLEMENTATIONS

ROOT = Path(__file__).resolve().parents[2]


def _upper_half_slope(ns: list[int], secs: list[float]) -> float:
    """The slope the bench reports, recomputed independently from the CSV (numpy's least squares)."""
    order = np.argsort(ns)
    x, y = np.log(np.asarray(ns, float)[order]), np.log(np.asarray(secs, float)[order])
    k = max(0, min(len(x) // 2, len(x) - 2))
    return float(np.polyfit(x[k:], y[k:], 1)[0])


def _bench(out: Path) -> tuple[dict, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "app", "bench", "--devices", "cpu", "--max-n", "1024", "--repeat", "2",
                        "--heads", "1", "--d", "64", "--threads", "1", "--out", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1  # one JSON line on stdout, nothing else
    return json.loads(lines[0]), r.stderr


def test_cpu_run_writes_every_column_and_its_slopes(tmp_path):
    """Single-threaded (torch --threads 1, BLAS through its environment variables), one head, d = 64, n to 1024.

    The run writes every column for every point, and the slopes it reports are the fit of its own CSV. How steep they
    are (n² for the naive paths: a CPU-time slope in [1.4, 2.5]) is a time, judged in
    ``benchmarks/bench_cli_slopes.py`` (run_all.py's "bench: CPU-time slope" rows) with the load average beside it,
    not here: on a shared machine a neighbour's cache traffic moved it past any bound a test could keep."""
    out = tmp_path / "bench.csv"
    summary, err = _bench(out)
    assert "bench: point" in err and "100%" in err  # progress on stderr (plain lines: not a terminal)
    rows = list(csv.DictReader(ln for ln in out.open() if not ln.startswith("#")))
    assert tuple(rows[0]) == CSV_COLUMNS
    sizes = [16, 32, 64, 128, 256, 512, 1024]
    assert [(r_["implementation"], int(r_["n"])) for r_ in rows] == [(i, n) for n in sizes for i in IMPLEMENTATIONS]
    for row in rows:
        assert row["device"] == "cpu" and row["skipped_reason"] == "" and float(row["seconds"]) > 0
        assert float(row["peak_mib"]) >= 0 and row["peak_method"] in ("rss", "tracemalloc") and row["threads"] == "1"
    for impl in IMPLEMENTATIONS:
        mine = [r_ for r_ in rows if r_["implementation"] == impl]
        series = summary["series"][f"cpu/{impl}"]
        assert series["largest_n"] == 1024
        ns = [int(r_["n"]) for r_ in mine]
        assert series["slope"] == pytest.approx(_upper_half_slope(ns, [float(r_["seconds"]) for r_ in mine]),
                                                abs=1e-3)
        assert series["cpu_slope"] == pytest.approx(
            _upper_half_slope(ns, [float(r_["cpu_seconds"]) for r_ in mine]), abs=1e-3)
    # the numpy path's memory is traced exactly: three n×n float32 matrices at its peak grow as n²
    assert 1.8 <= summary["series"]["cpu/naive-numpy"]["memory_slope"] <= 2.1
    assert summary["matmul_gflops"]["cpu"] > 0


@pytest.mark.parametrize("args, message", [
    (["--out", "x.txt"], "--out must name a .csv file"),
    (["--devices", "cuda:7", "--out", "x.csv"], "cuda:7 is not available here"),
    (["--impl", "magic", "--out", "x.csv"], "unknown implementation 'magic'"),
    (["--max-n", "4", "--out", "x.csv"], "--max-n 4 is below --min-n 16"),
    (["--threads", "10000", "--out", "x.csv"], "--threads 10000 is out of range: expected an integer from 0 to 256"),
    (["--dtype", "float16", "--out", "x.csv"], "--dtype float16: nothing chosen can run it"),
    (["--out", "nowhere/x.csv"], "the folder nowhere does not exist"),
    (["--dtype", "int8", "--out", "x.csv"], "dtype"),
])
def test_bad_arguments_are_refused_with_the_reason(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_over_limit_points_appear_in_the_csv_with_their_reason(tmp_path, capsys):
    out = tmp_path / "b.csv"
    assert main(["bench", "--impl", "naive-numpy", "--min-n", "128", "--max-n", "512", "--repeat", "1",
                 "--heads", "1", "--d", "8", "--memory-limit-mib", "1.5", "--out", str(out)]) == 0
    rows = {int(r["n"]): r for r in csv.DictReader(ln for ln in out.open() if not ln.startswith("#"))}
    assert rows[256]["skipped_reason"] == "" and float(rows[256]["seconds"]) > 0
    assert rows[512]["skipped_reason"].startswith("needs ~3") and rows[512]["seconds"] == ""
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["series"]["cpu/naive-numpy"]["largest_n"] == 256
