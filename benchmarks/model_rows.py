"""``run_all.py``'s real-model rows: our trace against transformers' eager attention, the ablation scan against the
scan from the embeddings, a 4,096-token trace's memory and the window's stalls with a 4,096-token text.

Each runs its own benchmark script in a child process (a Qwen2-0.5B-shaped model takes ~2 GB, the long trace
~3.4 GB more: a child gives it all back) with ``--json`` where the script has it, and turns the figures into rows.
Together they take 15-25 minutes on the 2-core machine (the models are built first, then every comparison
alternates with its reference), so ``run_all.py`` measures them only with ``--models``; without it their rows are
carried from the last table with their own dates, as ``./test.sh``'s is.

- **pretrained**: ``bench_pretrained.py --side-by-side`` at ``lengths`` (128 by default; 1,024 with
  ``--model-lengths 128 1024``) on the GPT-2-small and Qwen2-0.5B shapes, and the scan comparison.
- **long**: ``bench_long_trace.py`` (Qwen2-0.5B shape, 4,096 tokens) and ``bench_long_gui.py`` (the window).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from budget_rows import Row, budgets, load_now, over, today

HERE = Path(__file__).resolve().parent
MODEL_SECTIONS = ("pretrained", "long")
MODEL_FIGURES = ("trace vs transformers eager", "ablation scan", "trace of ", "Model tab, 4,096 tokens")
"""How the figures of these rows begin: a run without ``--models`` carries the last table's rows that do."""
TRACE_RATIO = 1.0
"""Our trace against transformers eager ``output_attentions=True``: no slower (we record more than it does)."""
SCAN_SPEEDUP = 1.8
"""The ablation scan restarting at the ablated layer against every head's run from the embeddings."""
STALL_MS = 100.0
"""The longest event-loop stall while a 4,096-token trace is made, arrives and is drawn."""
SCROLL_MS = 100.0
"""One scroll or zoom of the head map's window, redrawn."""


def _run(script: str, *args: str, timeout: float = 3600) -> str:
    """The script's stdout; its stderr's tail in the error when it fails."""
    proc = subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=HERE.parent)
    if proc.returncode != 0:
        raise RuntimeError(f"{script} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return proc.stdout


def _load(figures: dict[str, Any]) -> str:
    """The 1-minute load average the script recorded with its figures, else the one now (it has just finished)."""
    load = figures.get("load")
    return f"{float(load[0]):.2f}" if isinstance(load, (list, tuple)) and load else load_now()


def pretrained_rows(lengths: list[int], rounds: int, folder: Path) -> list[Row]:
    """The side-by-side rows (one per shape and length) and the scan's."""
    out = folder / "side-by-side.json"
    _run("bench_pretrained.py", "--side-by-side", "--dir", str(folder), "--lengths", *map(str, lengths),
         "--rounds", str(rounds), "--json", str(out))
    figures = json.loads(out.read_text(encoding="utf-8"))
    load = _load(figures)
    rows = [side_by_side_row(r, load) for r in figures["rows"]]
    if figures.get("scan"):
        rows.append(scan_row(figures["scan"], load))
    return rows


def side_by_side_row(r: dict[str, Any], load: str) -> Row:
    ratio = float(r["ratio"])
    return Row(f"trace vs transformers eager, {r['shape']}, {int(r['tokens']):,} tokens",
               f"{float(r['ours_s']):.2f} s", f"ratio ≤ {TRACE_RATIO:g}",
               f"{ratio:.2f} (transformers {float(r['transformers_s']):.2f} s)", load, today(),
               over(ratio, TRACE_RATIO))


def scan_row(scan: dict[str, Any], load: str) -> Row:
    speedup = float(scan["speedup"])
    return Row("ablation scan, GPT-2-small, 144 heads", f"{float(scan['reuse_s']):.1f} s",
               f"≥ {SCAN_SPEEDUP:g} × faster than from the embeddings",
               f"{speedup:.2f} × (from the embeddings {float(scan['full_s']):.1f} s)", load, today(),
               over(SCAN_SPEEDUP, speedup))


def long_rows(folder: Path) -> list[Row]:
    """The long trace's memory and time, and the window's stalls and scrolling."""
    out = folder / "long-trace.json"
    _run("bench_long_trace.py", "--dir", str(folder), "--json", str(out))
    rows = [long_trace_row(json.loads(out.read_text(encoding="utf-8")))]
    return rows + long_gui_rows(_run("bench_long_gui.py", "--dir", str(folder / "qwen2-grid-narrow")))


def long_trace_row(f: dict[str, Any]) -> Row:
    peak, budget = float(f["peak_increase_mib"]), float(f["budget_mib"])
    return Row(f"trace of {int(f['tokens']):,} tokens, Qwen2-0.5B shape: peak memory",
               f"{peak:,.0f} MiB (trace {float(f['trace_s']):.0f} s, keeps {float(f['kept_mib']):,.0f} MiB)",
               f"≤ 1.5 × weights + 1 GiB = {budget:,.0f} MiB", "—", _load(f), today(), over(peak, budget))


def long_gui_rows(stdout: str) -> list[Row]:
    """The window's rows from ``bench_long_gui.py``'s printed lines (``longest event-loop stall meanwhile N ms``,
    ``median N ms, max M ms per step``); a row says "not measured" when its line is missing."""
    load = re.findall(r"load average before \(([\d.]+)", stdout)
    loaded = f"{float(load[0]):.2f}" if load else "—"
    stall = re.search(r"longest event-loop stall meanwhile (\d+) ms", stdout)
    scroll = re.search(r"scrolled / zoomed \d+ times: median (\d+) ms, max (\d+) ms", stdout)
    rows = []
    figure = "Model tab, 4,096 tokens: longest event-loop stall while tracing and drawing"
    if stall:
        rows.append(Row(figure, f"{stall.group(1)} ms", f"< {STALL_MS:g} ms", "—", loaded, today(),
                        over(float(stall.group(1)), STALL_MS)))
    else:
        rows.append(Row(figure, "not measured", f"< {STALL_MS:g} ms", over=None))
    figure = "Model tab, 4,096 tokens: head map scrolled or zoomed"
    if scroll:
        median, most = float(scroll.group(1)), float(scroll.group(2))
        rows.append(Row(figure, f"median {median:.0f} ms, max {most:.0f} ms", f"each < {SCROLL_MS:g} ms", "—",
                        loaded, today(), checks=budgets(median=over(median, SCROLL_MS), max=over(most, SCROLL_MS))))
    else:
        rows.append(Row(figure, "not measured", f"each < {SCROLL_MS:g} ms", over=None))
    return rows


def carried_model_rows(previous: dict[str, Row]) -> list[Row]:
    """The last table's real-model rows, as they stood (their own dates and status)."""
    return [row for figure, row in previous.items() if figure.startswith(MODEL_FIGURES)]


def model_rows(sections: list[str], lengths: list[int], rounds: int, folder: Path | None = None) -> list[Row]:
    """The rows of ``sections`` (of ``MODEL_SECTIONS``), the models built in ``folder`` (default: a temporary
    folder, removed after)."""
    with tempfile.TemporaryDirectory(prefix="run-all-models-") as tmp:
        where = folder or Path(tmp)
        rows: list[Row] = []
        if "pretrained" in sections:
            rows += pretrained_rows(lengths, rounds, where)
        if "long" in sections:
            rows += long_rows(where)
        return rows
