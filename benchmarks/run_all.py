"""Every budget of the project in one table: measured now, printed, and written into docs/benchmarks.md.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/run_all.py [--test-minutes M] [--skip edits launch ...]
                                                                     [--models [--model-lengths 128 1024]]
                                                                     [--no-write] [--slack 0.25]

Rows, each with its target, its ratio to a baseline measured in the same run where there is one (the baseline's own
absolute figure beside it, so that runs on machines of different speeds can be compared), the 1-minute load average
when it was measured, the date, and which of its budgets hold:

- **edit → all views repainted** per size (``bench_gui_edit.measure_edits``, when that function exists): median and
  p95 in ms; baseline: a bare pyqtgraph window repainting five ImageItems of the same shapes (the floor).
- **launch → window shown** (``bench_gui_edit.measure_launch``): median seconds from before the process starts to
  the first frame processed; baseline: a bare PySide6 + pyqtgraph window, launched alternately in the same run.
- **bundle size** (dist/attention-playground, when built; else "not built"): MiB on disk.
- **the wheel**: its size in MiB and file count, and whether it holds every file of resources/ (the newest
  ``dist/attention_playground-*.whl`` when there is one, else built here with ``python -m build --wheel
  --no-isolation`` into a temporary folder, a few seconds); and its clean install (a new venv, torch pinned, the
  wheel and its dependencies: ``scripts/check_wheel.sh``), not measured here (minutes, and a download) but carried
  from docs/packaging.md's "The wheel" section with the date and load recorded there, as the ./test.sh row is.
- **--self-test** of the bundle (when built) and from source: median wall seconds; the bundle's baseline is the
  source's.
- **responsiveness** (``bench_responsiveness.measure``): ``train --steps 5``'s start-up over its compute (baseline
  ``python -c "import torch"``), Cancel in the scaling run and the Lab (baseline: the call in flight), QtRunner's
  timed wait, a stop signal in the app's code and in an import, a heads scan's start (baseline: the whole scan):
  what tests once asserted as wall-clock bounds.
- **bench: CPU-time slope** (``bench_cli_slopes.slope_rows``): the naive paths of ``attention-playground bench``
  grow as n² (a slope in [1.4, 2.5]), once judged in tests/lab/test_cli_bench.py.
- **./test.sh**: minutes, from ``--test-minutes`` (time ``./test.sh`` yourself: ``/usr/bin/time -f %e ./test.sh``);
  without the flag, the figure already in docs/benchmarks.md's table is carried over with its own date and load.
  It is not measured here: the whole suite takes the machine for many minutes, and run_all is no part of ./test.sh.
- **real models** (``model_rows.py``, with ``--models``; else carried from the last table): our trace against
  transformers' eager attention per shape and length (ratio ≤ 1.0), the ablation scan against the scan from the
  embeddings (≥ 1.8 ×), a 4,096-token trace's peak memory (≤ 1.5 × the weights + 1 GiB), and the window with a
  4,096-token text (the longest event-loop stall, the head map's scroll and zoom: < 100 ms each).

The table goes to stdout and into docs/benchmarks.md between ``<!-- budgets:start -->`` and ``<!-- budgets:end -->``
(``--no-write``: stdout only), followed on stdout by which budgets hold and which are missed. With ``--skip``, the
rows of the skipped sections are carried over from the last table as they stood (their own dates and status). Exit 1
when a figure misses its budget by more than ``--slack`` (25 %): the load of a shared machine moves the absolute
figures, so a miss within the slack is reported, not failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_cli_slopes import slope_rows  # noqa: E402
from budget_rows import HEADER, Row, budgets, load_now, over, today  # noqa: E402
from model_rows import MODEL_SECTIONS, carried_model_rows, model_rows  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- budgets:start -->", "<!-- budgets:end -->"
BUNDLE = ROOT / "dist" / "attention-playground"
DIST = ROOT / "dist"
PACKAGING_DOC = ROOT / "docs" / "packaging.md"
RESOURCES = ROOT / "resources"
BUNDLE_TARGET_MIB = 600.0
SELF_TEST_TARGET_S = 3.0
TEST_TARGET_MIN = 10.0  # ./test.sh on a fresh clone of this machine kind, after set-up
"""./test.sh on the 2-core machine (ruff, mypy, lint-imports and the whole suite). CI allows a run 90 minutes."""
SLACK = 0.25
SECTIONS = ("edits", "launch", "bundle", "wheel", "self-test", "responsiveness", "slopes", "test", *MODEL_SECTIONS)


# ---------------------------------------------------------------- measuring
def edit_rows(edits: int) -> list[Row]:
    import bench_gui_edit as bench

    if not hasattr(bench, "measure_edits"):
        return [Row("edit → views repainted", "not measured", "median < 8 ms", over=None,
                    date=today(), load=load_now())]
    figures = bench.measure_edits(edits)
    median_t, p95_t = getattr(bench, "TARGET_MEDIAN_MS", 8.0), getattr(bench, "TARGET_P95_MS", 16.0)
    ratio_t = getattr(bench, "TARGET_RATIO", 1.4)
    rows = []
    for size, f in figures.items():
        rows.append(Row(f"edit → views repainted, {size}", f"median {f['median']:.2f} ms, p95 {f['p95']:.2f} ms",
                        f"median < {median_t:g} ms, p95 < {p95_t:g} ms, ratio ≤ {ratio_t:g}",
                        f"{f['ratio']:.2f} (floor {f['floor_median']:.2f} ms)", f"{f['load']:.2f}", today(),
                        checks=budgets(median=over(f["median"], median_t), p95=over(f["p95"], p95_t),
                                  ratio=over(f["ratio"], ratio_t))))
    return rows


def launch_rows(runs: int) -> list[Row]:
    import bench_gui_edit as bench

    f = bench.measure_launch(runs)
    median, ratio = float(f["median"]), float(f["ratio"])
    target_s, target_ratio = bench.TARGET_LAUNCH_S, bench.TARGET_LAUNCH_RATIO
    return [Row("launch → window shown", f"median {median:.3f} s", f"< {target_s:g} s, ratio ≤ {target_ratio:g}",
                f"{ratio:.2f} (bare window {float(f['bare_median']):.3f} s; CPU {float(f['cpu_ratio']):.2f})",
                f"{float(f['load']):.2f}", today(),
                checks=budgets(time=over(median, target_s), ratio=over(ratio, target_ratio)))]


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def bundle_rows(bundle: Path = BUNDLE) -> list[Row]:
    if not (bundle / "attention-playground").is_file():
        return [Row("bundle size (onedir)", "not built", f"< {BUNDLE_TARGET_MIB:g} MiB", over=None)]
    mib = folder_mib(bundle)
    built = dt.date.fromtimestamp((bundle / "attention-playground").stat().st_mtime).isoformat()
    return [Row("bundle size (onedir)", f"{mib:.0f} MiB", f"< {BUNDLE_TARGET_MIB:g} MiB", date=built,
                over=over(mib, BUNDLE_TARGET_MIB))]


def newest_wheel(dist: Path = DIST) -> Path | None:
    wheels = sorted(dist.glob("attention_playground-*.whl"), key=lambda p: p.stat().st_mtime)
    return wheels[-1] if wheels else None


def build_wheel(out: Path) -> Path | None:
    """The wheel built from the checkout into ``out`` with the venv's setuptools (no download); None on failure."""
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
                           str(ROOT)], capture_output=True, text=True, timeout=600)
    return newest_wheel(out) if proc.returncode == 0 else None


def resource_files(resources: Path = RESOURCES) -> list[str]:
    """Every file under resources/, relative to it (Python's caches left out)."""
    return sorted(p.relative_to(resources).as_posix() for p in resources.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def wheel_size_row(wheel: Path | None, resources: Path = RESOURCES, built_here: bool = False) -> Row:
    """The wheel's size and file count; its budget: every file of resources/ inside, at ``app/resources/``."""
    figure, target = "wheel: size, files", "every file of resources/ inside"
    if wheel is None or not wheel.is_file():
        return Row(figure, "not built (python -m build --wheel failed)", target, over=None)
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = resource_files(resources)
    missing = [f for f in expected if f"app/resources/{f}" not in names]
    when = today() if built_here else dt.date.fromtimestamp(wheel.stat().st_mtime).isoformat()
    value = (f"{wheel.stat().st_size / 2**20:.2f} MiB, {len(names)} files ({len(expected) - len(missing)} of "
             f"{len(expected)} resources; {'built now' if built_here else wheel.name})")
    return Row(figure, value, target, date=when, over=len(missing) / max(1, len(expected)))


def wheel_install_row(doc: Path = PACKAGING_DOC) -> Row:
    """The clean install's time as docs/packaging.md's "The wheel" section records it (``clean install A-B s``),
    with the date and load written there: carried, not measured (scripts/check_wheel.sh measures it)."""
    figure, target = "wheel: clean install (new venv, torch pinned, the wheel)", "— (carried from docs/packaging.md)"
    text = doc.read_text(encoding="utf-8") if doc.is_file() else ""
    section = text.split("## The wheel", 1)[1].split("\n## ", 1)[0] if "## The wheel" in text else ""
    seconds = re.search(r"clean install ([\d]+(?:[-–][\d]+)? s)", section)
    if not seconds:
        return Row(figure, "not recorded (scripts/check_wheel.sh)", target, over=None)
    date = re.search(r"Measured (\d{4}-\d{2}-\d{2})", section)
    load = re.search(r"load ~?([\d.]+)", section)
    return Row(figure, f"{seconds.group(1)} (carried: scripts/check_wheel.sh)", target, "—",
               load.group(1) if load else "—", date.group(1) if date else "", over=None)


def wheel_rows(dist: Path = DIST) -> list[Row]:
    wheel = newest_wheel(dist)
    if wheel is not None:
        return [wheel_size_row(wheel), wheel_install_row()]
    with tempfile.TemporaryDirectory(prefix="run-all-wheel-") as tmp:
        return [wheel_size_row(build_wheel(Path(tmp)), built_here=True), wheel_install_row()]


def self_test_rows(runs: int, bundle: Path = BUNDLE) -> list[Row]:
    """The source's and (when built) the bundle's --self-test, alternating, ``runs`` each after one warm-up."""
    import bench_bundle  # its wall-clock runner: the one the bundle's start-up figures use

    exe = bundle / "attention-playground"
    sides = {"source": [sys.executable, "-m", "app", "--self-test"]}
    if exe.is_file():
        sides["bundle"] = [str(exe), "--self-test"]
    load = load_now()
    times: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="run-all-self-test-") as tmp:
        for n in range(runs + 1):
            for side, cmd in sides.items():
                seconds = bench_bundle.wall(cmd + [str(Path(tmp) / f"{side}-{n}")])
                if n:  # the first of each: a warm-up (the disk cache)
                    times[side].append(seconds)
    source = statistics.median(times["source"])
    rows = [Row("--self-test (source)", f"median {source:.2f} s", f"< {SELF_TEST_TARGET_S:g} s", load=load,
                date=today(), over=over(source, SELF_TEST_TARGET_S))]
    if "bundle" in times:
        bundled = statistics.median(times["bundle"])
        rows.insert(0, Row("--self-test (bundle)", f"median {bundled:.2f} s", f"< {SELF_TEST_TARGET_S:g} s",
                           f"{bundled / source:.2f} (source {source:.2f} s)", load, today(),
                           over(bundled, SELF_TEST_TARGET_S)))
    else:
        rows.insert(0, Row("--self-test (bundle)", "not built", f"< {SELF_TEST_TARGET_S:g} s", over=None))
    return rows


def responsiveness_rows(runs: int) -> list[Row]:
    import bench_responsiveness as bench

    rows = []
    for name, f in bench.measure(runs).items():
        rows.append(Row(bench.LABELS[name], f"median {bench.show(f['median'])}", bench.target_text(name),
                        f"{f['ratio']:.3g} ({bench.BASELINES[name]} {bench.show(f['baseline'])})",
                        f"{f['load']:.2f}", today(), bench.over(name, f)))
    return rows


def test_rows(minutes: float | None, previous: dict[str, Row]) -> list[Row]:
    name = "./test.sh (whole suite)"
    target = f"< {TEST_TARGET_MIN:g} min"
    if minutes is not None:
        return [Row(name, f"{minutes:.1f} min", target, load=load_now(), date=today(),
                    over=over(minutes, TEST_TARGET_MIN))]
    if name in previous:  # carried over from the last table, with its own date and load
        old = previous[name]
        value = re.match(r"([\d.]+) min", old.value)
        return [Row(name, old.value, target, old.ratio, old.load, old.date,
                    over(float(value.group(1)), TEST_TARGET_MIN) if value else None)]
    return [Row(name, "not given (--test-minutes)", target, over=None)]


# ---------------------------------------------------------------- the table
def render_table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def parse_table(text: str) -> dict[str, Row]:
    """The rows of the table between the markers in ``text`` (a document), by figure; {} when there is none."""
    if START not in text or END not in text:
        return {}
    rows = {}
    for line in text.split(START, 1)[1].split(END, 1)[0].splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) != len(HEADER) or cells[0] == HEADER[0] or set(cells[0]) <= {"-"}:
            continue
        rows[cells[0]] = Row(cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], over=None,
                             kept_status=cells[6])
    return rows


def write_table(doc: Path, table: str, when: str | None = None) -> None:
    """Put ``table`` between the markers of ``doc`` (the text around them kept); a document without the markers
    gets a "Budgets" section with them at its end."""
    text = doc.read_text(encoding="utf-8") if doc.is_file() else ""
    stamp = f"Measured {when or today()} by `benchmarks/run_all.py`."
    block = f"{START}\n{stamp}\n\n{table}\n{END}"
    if START in text and END in text and text.index(START) < text.index(END):
        head, rest = text.split(START, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + "## Budgets\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")


def missed(rows: list[Row], slack: float = SLACK) -> list[Row]:
    """The rows whose figure misses its budget by more than ``slack``."""
    return [r for r in rows if r.over is not None and r.over > slack]


def carried(rows: list[Row], previous: dict[str, Row]) -> list[Row]:
    """``rows`` and, after them, the rows of the last table that were not measured now (their sections skipped),
    as they stood, with their own dates: a run of some sections does not wipe the others' figures from the doc."""
    measured = {r.figure for r in rows}
    return rows + [old for figure, old in previous.items() if figure not in measured]


def verdict(rows: list[Row]) -> str:
    """Which budgets hold and which are missed, by row (the figures not measured left out)."""
    judged = [r for r in rows if r.over is not None]
    held = [r.figure for r in judged if r.over is not None and r.over <= 0.0]
    lines = [f"budgets held: {len(held)} of {len(judged)} rows"]
    lines += [f"  held:   {figure}" for figure in held]
    lines += [f"  missed: {r.figure}: {r.status}" for r in judged if r.over is not None and r.over > 0.0]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test-minutes", type=float, default=None,
                    help="./test.sh's wall time in minutes (else the figure in docs/benchmarks.md is carried over)")
    ap.add_argument("--skip", nargs="+", choices=SECTIONS, default=[], help="leave these rows out")
    ap.add_argument("--edits", type=int, default=200, help="edits per size (bench_gui_edit.measure_edits)")
    ap.add_argument("--launch-runs", type=int, default=5)
    ap.add_argument("--self-test-runs", type=int, default=3)
    ap.add_argument("--responsiveness-runs", type=int, default=5)
    ap.add_argument("--models", action="store_true",
                    help="measure the real-model rows too (15-25 min: model_rows.py); else they are carried over")
    ap.add_argument("--model-lengths", nargs="+", type=int, default=[128], help="with --models: trace lengths")
    ap.add_argument("--model-rounds", type=int, default=3, help="with --models: alternating calls of each")
    ap.add_argument("--model-dir", type=Path, default=None, help="with --models: build (or reuse) the models here")
    ap.add_argument("--slack", type=float, default=SLACK, help="exit 1 when a budget is missed by more than this")
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args(argv)

    previous = parse_table(args.doc.read_text(encoding="utf-8")) if args.doc.is_file() else {}
    rows: list[Row] = []
    if "edits" not in args.skip:
        rows += edit_rows(args.edits)
    if "launch" not in args.skip:
        rows += launch_rows(args.launch_runs)
    if "bundle" not in args.skip:
        rows += bundle_rows()
    if "wheel" not in args.skip:
        rows += wheel_rows()
    if "self-test" not in args.skip:
        rows += self_test_rows(args.self_test_runs)
    if "responsiveness" not in args.skip:
        rows += responsiveness_rows(args.responsiveness_runs)
    if "slopes" not in args.skip:
        rows += slope_rows()
    if "test" not in args.skip:
        rows += test_rows(args.test_minutes, previous)
    if args.models:
        rows += model_rows([s for s in MODEL_SECTIONS if s not in args.skip], args.model_lengths, args.model_rounds,
                           args.model_dir)
    else:
        rows += carried_model_rows(previous)
    if args.skip:
        rows = carried(rows, previous)
    table = render_table(rows)
    print(table)
    print("\n" + verdict(rows))
    if not args.no_write:
        write_table(args.doc, table)
        print(f"\nwritten into {args.doc}")
    bad = missed(rows, args.slack)
    for row in bad:
        print(f"over budget by more than {args.slack:.0%}: {row.figure}: {row.value} (target {row.target})",
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
