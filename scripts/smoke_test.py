"""Smoke test of the built Attention Playground executable, headless (QT_QPA_PLATFORM=offscreen).

    .venv/bin/python scripts/smoke_test.py                       # dist/attention-playground (scripts/build.sh)
    .venv/bin/python scripts/smoke_test.py --exe dist/onefile/attention-playground
    .venv/bin/python scripts/smoke_test.py --no-timing           # skip the start-up comparison (3 + 3 launches)

Run it with the project's venv Python: it computes the expected numbers with attention_core from source and
compares them with what the bundle exports. Checks: --version; export CSV (numbers equal the core's to 1e-12),
PNG and SVG; train --epochs 1 (JSON summary, checkpoint files); --self-test (the window opens, every view renders
to a PNG); bad input refused with exit 2 before any work (an unwritable output, a missing folder, an oversized
option, an argument too many); Ctrl+C while a film is written (exit 130, no film, no temporary file, the run kept);
the timeline as GIF and as MP4 through an ffmpeg found at run time, ``--mp4`` refused without one;
``inspect`` on a model folder the bundle trained itself (tokenizers and safetensors inside); resources/ present in
the bundle; start-up time of the bundle versus `python -m app` (median of 3
`--self-test` runs each); a onedir bundle's figures (``scripts/bundle_figures.py``: size, files, ELF files, glibc
floor) written beside it to ``bundle-figures.json``, and the size docs/packaging.md gives checked against them
(off by more than 10 %: a failure; ``--update-docs`` rewrites the docs' figures and sample output instead). Prints a
table; exits 1 if any check fails. The start-up time only fails the run with
--max-start S (it depends on the machine's load); otherwise it is reported against the 5 s target.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))  # bundle_figures, glibc_floor

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
START_TARGET_S = 5.0


@dataclass
class Result:
    name: str
    status: str  # PASS, FAIL, INFO, SLOW
    detail: str
    seconds: float


class Failure(Exception):
    pass


def headless_env() -> dict[str, str]:
    env = dict(os.environ)
    env["QT_QPA_PLATFORM"] = "offscreen"
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def run(cmd: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=headless_env(),
                              cwd=str(cwd) if cwd else None)
    except subprocess.TimeoutExpired as exc:
        raise Failure(f"timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
        raise Failure(f"exit {proc.returncode}: {' '.join(cmd)}\n    " + "\n    ".join(tail))
    return proc


def run_refused(cmd: list[str], timeout: float, words: str, cwd: Path | None = None, usage: bool = False) -> str:
    """``cmd`` must exit 2 with one line on stderr that contains ``words`` (``usage``: and argparse's usage lines,
    before or after it); returns that line."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=headless_env(),
                              cwd=str(cwd) if cwd else None)
    except subprocess.TimeoutExpired as exc:
        raise Failure(f"timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    if usage:  # "usage: …" and its indented continuation lines
        lines = [ln for ln in lines if not ln.startswith(("usage:", " "))]
    if proc.returncode != 2 or len(lines) != 1 or words not in lines[0] or "Traceback" in proc.stderr:
        raise Failure(f"exit {proc.returncode}, expected 2 with {words!r}: {' '.join(cmd)}\n    " +
                      "\n    ".join(lines[-8:]))
    return lines[0]


def check_png(path: Path, min_bytes: int = 2000, min_side: int = 50) -> tuple[int, int]:
    if not path.is_file():
        raise Failure(f"{path} was not written")
    data = path.read_bytes()
    if not data.startswith(PNG_MAGIC):
        raise Failure(f"{path} is not a PNG")
    if len(data) < min_bytes:
        raise Failure(f"{path} is only {len(data)} bytes")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if width < min_side or height < min_side:
        raise Failure(f"{path} is {width}x{height} pixels")
    return width, height


def expected_steps(preset_name: str):  # returns (Preset, AttentionSteps)
    from attention_core import attention_steps
    from attention_core.presets import get_preset

    preset = get_preset(preset_name)
    return preset, attention_steps(preset.q, preset.k, preset.v)


def csv_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """(header, body) of a CSV the app wrote: the labelled table (",cols…" then "row,numbers…"), or the commented
    one: ``#`` lines first, the row and column labels in ``# rows (…): [json]`` and ``# columns (…): [json]``, then
    numbers only; returned as the labelled table."""
    text = path.read_text(encoding="utf-8")
    comments = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("#")]
    table = list(csv.reader(io.StringIO("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))))
    if not comments:
        return table[0], [r for r in table[1:] if r]
    labels = {ln.split(" ", 1)[0]: json.loads(ln.split(":", 1)[1]) for ln in comments
              if ln.startswith(("rows", "columns")) and ":" in ln}
    rows, cols = labels.get("rows", []), labels.get("columns", [])
    body = [r for r in table if r]
    return ["", *cols], [[rows[i] if i < len(rows) else "", *r] for i, r in enumerate(body)]


def compare_csv(path: Path, values, rows: list[str], cols: list[str], tol: float = 1e-12) -> float:
    header, body = csv_table(path)
    if header[1:] != cols:
        raise Failure(f"CSV columns {header[1:]} != {cols}")
    if [r[0] for r in body] != rows:
        raise Failure(f"CSV rows {[r[0] for r in body]} != {rows}")
    if len(body) != values.shape[0] or any(len(r) - 1 != values.shape[1] for r in body):
        raise Failure(f"CSV shape differs from {values.shape}")
    worst = 0.0
    for i, r in enumerate(body):
        for j, cell in enumerate(r[1:]):
            worst = max(worst, abs(float(cell) - float(values[i, j])))
    if not worst <= tol:
        raise Failure(f"CSV differs from attention_core by {worst:.3g} (> {tol:g})")
    return worst


def compare_renders(source_dir: Path, bundle_dir: Path) -> str:
    """The bundle's --self-test images against the source's: the same files, and how many are pixel-identical."""
    src = {p.name: p for p in source_dir.glob("*.png")}
    bun = {p.name: p for p in bundle_dir.glob("*.png")}
    if not src:
        raise Failure(f"no source renders in {source_dir}")
    if set(src) != set(bun):
        raise Failure(f"different files: source only {sorted(set(src) - set(bun))}, "
                      f"bundle only {sorted(set(bun) - set(src))}")
    from PySide6.QtGui import QImage

    differ = []
    for name in sorted(src):
        a, b = QImage(str(src[name])), QImage(str(bun[name]))
        if a.isNull() or b.isNull():
            raise Failure(f"{name} does not load")
        if a != b:
            differ.append(f"{name} ({a.width()}x{a.height()} vs {b.width()}x{b.height()})")
    same = len(src) - len(differ)
    detail = f"{same}/{len(src)} images pixel-identical to the source's"
    if differ:
        detail += "; differ: " + ", ".join(differ)
    return detail


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle", nargs="?", default=str(ROOT / "dist" / "attention-playground"),
                    help="the onedir bundle folder (default dist/attention-playground)")
    ap.add_argument("--exe", help="the executable to test (default BUNDLE/attention-playground); a onefile build")
    ap.add_argument("--no-timing", action="store_true", help="skip the start-up time comparison")
    ap.add_argument("--repeat", type=int, default=3, help="launches per side for the start-up median (default 3)")
    ap.add_argument("--max-start", type=float, default=None,
                    help="fail if the bundle's median --self-test time exceeds this many seconds")
    ap.add_argument("--timeout", type=float, default=180, help="seconds allowed per launch (default 180)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary output folder")
    ap.add_argument("--update-docs", action="store_true",
                    help="rewrite docs/packaging.md's bundle figures and sample output from this run (onedir)")
    args = ap.parse_args()

    bundle = Path(args.bundle).resolve()
    exe = Path(args.exe).resolve() if args.exe else bundle / "attention-playground"
    if sys.platform == "win32" and exe.suffix.lower() != ".exe":
        exe = exe.with_suffix(".exe")
    if not exe.is_file():
        print(f"smoke_test: no executable at {exe}; build it first with scripts/build.sh", file=sys.stderr)
        return 2
    onedir = args.exe is None
    work = Path(tempfile.mkdtemp(prefix="ap-smoke-"))
    timeout = args.timeout
    results: list[Result] = []
    timings: dict[str, list[float]] = {}

    def check(name: str, fn: Callable[[], str]) -> None:
        start = time.perf_counter()
        try:
            detail = fn()
            status = "PASS"
        except Failure as exc:
            detail, status = str(exc), "FAIL"
        except Exception as exc:  # a bug in a check is a failure too, not a crash of the table
            detail, status = f"{type(exc).__name__}: {exc}", "FAIL"
        results.append(Result(name, status, detail, time.perf_counter() - start))
        print(f"[{status}] {name}: {detail.splitlines()[0] if detail else ''}", flush=True)

    def version() -> str:
        from app import __version__

        out = run([str(exe), "--version"], timeout).stdout.strip()
        if __version__ not in out:
            raise Failure(f"--version printed {out!r}, expected {__version__}")
        return out

    def export_csv() -> str:
        preset, steps = expected_steps("cat-sat-mat")
        notes = []
        for view in ("weights", "output"):
            out = work / f"{view}.csv"
            proc = run([str(exe), "export", "--preset", "cat-sat-mat", "--view", view, "--out", str(out)], timeout)
            if str(out) not in proc.stdout:
                raise Failure(f"export did not print the written path (stdout {proc.stdout.strip()!r})")
            values = getattr(steps, view)
            cols = list(preset.key_tokens) if view != "output" else [f"v{j}" for j in range(values.shape[1])]
            worst = compare_csv(out, values, list(preset.query_tokens), cols)
            notes.append(f"{view} {values.shape[0]}x{values.shape[1]} max |diff| {worst:.1e}")
        return "; ".join(notes) + " (tolerance 1e-12)"

    def export_png() -> str:
        out = work / "weights.png"
        run([str(exe), "export", "--preset", "cat-sat-mat", "--view", "weights", "--out", str(out)], timeout)
        w, h = check_png(out)
        return f"{out.name} {w}x{h}, {out.stat().st_size} bytes"

    def export_svg() -> str:
        out = work / "weights.svg"
        run([str(exe), "export", "--preset", "cat-sat-mat", "--view", "weights", "--out", str(out)], timeout)
        if not out.is_file() or out.stat().st_size < 500:
            raise Failure(f"{out} missing or tiny")
        root = ET.parse(out).getroot()
        if not root.tag.endswith("svg"):
            raise Failure(f"root element is {root.tag}, not svg")
        return f"{out.name} parses as SVG, {len(list(root.iter()))} elements, {out.stat().st_size} bytes"

    def train() -> str:
        out = work / "train"
        proc = run([str(exe), "train", "--epochs", "1", "--out", str(out)], max(timeout, 300))
        lines = [ln for ln in proc.stdout.strip().splitlines() if ln.strip()]
        if not lines:
            raise Failure("train printed nothing on stdout")
        try:
            summary = json.loads(lines[-1])
        except json.JSONDecodeError as exc:
            raise Failure(f"last stdout line is not JSON: {lines[-1][:120]!r}") from exc
        if "sequence_accuracy" not in summary:
            raise Failure(f"no sequence_accuracy in {sorted(summary)}")
        for name in ("model.safetensors", "config.json", "history.csv"):
            if not (out / name).is_file() or (out / name).stat().st_size == 0:
                raise Failure(f"{name} missing or empty in {out}")
        from safetensors import safe_open

        with safe_open(str(out / "model.safetensors"), framework="numpy") as fh:
            tensors = len(list(fh.keys()))
        json.loads((out / "config.json").read_text(encoding="utf-8"))
        history_rows = len((out / "history.csv").read_text(encoding="utf-8").strip().splitlines()) - 1
        return (f"sequence_accuracy {summary['sequence_accuracy']:.3f} after {summary.get('steps')} steps; "
                f"{tensors} tensors, {history_rows} history rows")

    def self_test() -> str:
        out = work / "self-test"
        start = time.perf_counter()
        proc = run([str(exe), "--self-test", str(out)], timeout)
        timings.setdefault("bundle-first", []).append(time.perf_counter() - start)
        paths = [Path(p) for p in proc.stdout.strip().splitlines() if p.strip().lower().endswith(".png")]
        if not paths:
            raise Failure(f"--self-test listed no PNGs (stdout {proc.stdout.strip()[:200]!r})")
        sizes = [check_png(p, min_bytes=1, min_side=1) for p in paths]
        tiny = [p.name for p, (w, h) in zip(paths, sizes) if min(w, h) < 50]
        note = f"; tiny (<50 px): {', '.join(tiny)}" if tiny else ""
        listing = ", ".join(f"{p.name} {w}x{h}" for p, (w, h) in zip(paths, sizes))
        return f"{len(paths)} non-empty PNGs: {listing}{note}"

    def refusals() -> str:
        """Bad input refused with exit 2 and the reason, before any work: an output nobody can write,
        an oversized option, an argument too many; all within a second (no torch, no training)."""
        start = time.perf_counter()
        lines = [run_refused([str(exe), "train", "--steps", "5", "--out", "/proc/run"], timeout, "cannot write in"),
                 run_refused([str(exe), "export", "--preset", "cat-sat-mat", "--view", "weights", "--out",
                              str(work / "missing" / "x.png")], timeout, "does not exist"),
                 run_refused([str(exe), "train", "--seq-len", "100000", "--out", str(work / "big")], timeout,
                             "--seq-len 100000 is out of range"),
                 run_refused([str(exe), "--version", "extra"], timeout, "unknown command 'extra'", usage=True)]
        seconds = time.perf_counter() - start
        if (work / "missing").exists() or (work / "big").exists():
            raise Failure("a refused command created its output folder")
        return f"4 refusals in {seconds:.1f}s: " + " | ".join(line[:70] for line in lines)

    def film_interrupted() -> str:
        """Ctrl+C while the film is written: exit 130, one line, no film and no temporary file; the run written
        before it stays."""
        import signal

        folder = work / "interrupted"
        folder.mkdir()
        proc = subprocess.Popen([str(exe), "train", "--steps", "60", "--out", str(folder / "run"), "--gif",
                                 str(folder / "film.gif")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=headless_env(), start_new_session=True)
        deadline = time.monotonic() + timeout
        while not (folder / "run" / "history.csv").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise Failure(f"the run was not written (exit {proc.poll()}): {proc.communicate()[1][-500:]}")
            time.sleep(0.02)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl+C does
        _out, err = proc.communicate(timeout=timeout)
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if proc.returncode != 130 or last != "attention-playground train: stopped" or "Traceback" in err:
            raise Failure(f"exit {proc.returncode}, last line {last!r}")
        left = sorted(p.name for p in folder.iterdir())
        if left != ["run"] or sorted(p.name for p in (folder / "run").iterdir()) != [
                "config.json", "history.csv", "model.safetensors"]:
            raise Failure(f"left {left} and {sorted(p.name for p in (folder / 'run').iterdir())}")
        return "exit 130, 'stopped', no film, no temporary file, the run kept"

    def films() -> str:
        """The timeline as a GIF, and as an MP4 through an ffmpeg found at run time (the bundle ships none): the
        PATH's, else the venv's imageio-ffmpeg binary named by $ATTENTION_PLAYGROUND_FFMPEG; ``--mp4`` refused
        before training (exit 2, the reason) when the ffmpeg named is missing."""
        import shutil

        folder = work / "films"
        folder.mkdir()
        ffmpeg, extra, where = shutil.which("ffmpeg"), {}, "the PATH's ffmpeg"
        if ffmpeg is None:
            try:
                import imageio_ffmpeg

                ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
                extra, where = {"ATTENTION_PLAYGROUND_FFMPEG": ffmpeg}, "imageio-ffmpeg's binary, named"
            except Exception:  # no ffmpeg anywhere: the GIF and the refusal are still checked
                ffmpeg = None
        cmd = [str(exe), "train", "--steps", "3", "--out", str(folder / "run"), "--gif", str(folder / "f.gif")]
        cmd += ["--mp4", str(folder / "f.mp4")] if ffmpeg else []
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout, 300),
                              env={**headless_env(), **extra})
        if proc.returncode != 0:
            raise Failure(f"train with films: exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
        if (folder / "f.gif").read_bytes()[:4] != b"GIF8":
            raise Failure("f.gif is not a GIF")
        notes = [f"GIF {(folder / 'f.gif').stat().st_size} bytes"]
        if ffmpeg:
            if (folder / "f.mp4").read_bytes()[4:8] != b"ftyp":
                raise Failure("f.mp4 is not an MP4")
            notes.append(f"MP4 {(folder / 'f.mp4').stat().st_size} bytes through {where}")
        else:
            notes.append("no ffmpeg on this machine: MP4 not written")
        refused = subprocess.run([str(exe), "train", "--steps", "3", "--out", str(folder / "refused"), "--mp4",
                                  str(folder / "r.mp4")], capture_output=True, text=True, timeout=timeout,
                                 env={**headless_env(), "ATTENTION_PLAYGROUND_FFMPEG": str(folder / "no-ffmpeg")})
        if refused.returncode != 2 or "ffmpeg" not in refused.stderr.lower() or (folder / "refused").exists():
            raise Failure(f"--mp4 without ffmpeg: exit {refused.returncode}, {refused.stderr.strip()[-200:]!r}")
        return "; ".join(notes) + "; --mp4 without ffmpeg refused before training"

    def inspect_model() -> str:
        """A model folder opened by the bundle (tokenizers, safetensors inside): a tiny model trained by the
        bundle itself, then ``inspect`` on it."""
        tiny = work / "tiny-model"
        run([str(exe), "train", "--steps", "5", "--out", str(tiny)], max(timeout, 300))
        out = work / "inspect.json"
        proc = run([str(exe), "inspect", "--model", str(tiny), "--text", "3 5 7 SEP", "--out", str(out)], timeout)
        data = json.loads(out.read_text(encoding="utf-8"))
        att = data.get("attentions")
        if not att or len(att) != 2 or len(att[0]) != 4 or len(att[0][0]) != 4:
            raise Failure(f"attentions of shape other than (2, 4, 4, 4) in {out}")
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        return (f"{summary['model']}: {summary['layers']} layers x {summary['heads']} heads on "
                f"{summary['tokens']} tokens")

    def resources() -> str:
        src = ROOT / "resources"
        files = [p.relative_to(src) for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        bundled = bundle / "_internal" / "resources"
        missing = [str(p) for p in files if not (bundled / p).is_file()]
        if missing:
            raise Failure(f"{len(missing)} of {len(files)} resource files missing from {bundled}: {missing[:5]}")
        return f"{len(files)} files under {bundled.relative_to(bundle)}"

    def startup() -> str:
        def median_of(cmd: list[str], label: str) -> float:
            times = []
            for i in range(args.repeat):
                start = time.perf_counter()
                run(cmd + [str(work / f"{label}-{i}")], timeout, cwd=ROOT)
                times.append(time.perf_counter() - start)
            timings[label] = times
            return statistics.median(times)

        bundle_s = median_of([str(exe), "--self-test"], "bundle")
        source_s = median_of([sys.executable, "-m", "app", "--self-test"], "source")
        detail = (f"--self-test wall time, median of {args.repeat}: bundle {bundle_s:.2f}s, "
                  f"source {source_s:.2f}s (target < {START_TARGET_S:.0f}s)")
        if args.max_start is not None and bundle_s > args.max_start:
            raise Failure(detail + f"; over --max-start {args.max_start}")
        return detail

    check("version", version)
    check("export csv", export_csv)
    check("export png", export_png)
    check("export svg", export_svg)
    check("train --epochs 1", train)
    check("self-test (GUI)", self_test)
    check("refused before work", refusals)
    check("Ctrl+C during a film", film_interrupted)
    check("films: GIF, MP4 via a found ffmpeg", films)
    check("inspect a model folder", inspect_model)
    if onedir:
        check("resources bundled", resources)
    if not args.no_timing:
        check("start-up vs source", startup)
        check("self-test images vs source", lambda: compare_renders(work / "source-0", work / "bundle-0"))
        if timings.get("bundle") and statistics.median(timings["bundle"]) > START_TARGET_S:
            results.append(Result("start-up target", "SLOW",
                                  f"bundle median {statistics.median(timings['bundle']):.2f}s > {START_TARGET_S:.0f}s "
                                  "(reported, not failed; use --max-start to enforce)", 0.0))

    import bundle_figures

    figures: dict[str, object] = {}
    if onedir:
        def documented() -> str:
            """The bundle's figures (bundle_figures.py) written beside it; the size docs/packaging.md gives must be
            within bundle_figures.TOLERANCE of the measured one (--update-docs rewrites the docs instead)."""
            medians = {k: statistics.median(v) for k, v in timings.items() if k in ("bundle", "source") and v}
            figures.update(bundle_figures.measure(bundle, medians))
            where = bundle_figures.figures_path(bundle)
            where.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
            if args.update_docs:
                return f"{figures['size_mib']:.0f} MiB; written to {where.name}, docs updated below"
            problem = bundle_figures.size_problem(bundle_figures.documented_size(), float(figures["size_mib"]))
            if problem:
                raise Failure(problem)
            return (f"{figures['size_mib']:.0f} MiB, docs/packaging.md gives {bundle_figures.documented_size():.0f}"
                    f" (within {bundle_figures.TOLERANCE:.0%}); written to {where.name}")

        check("documented figures", documented)
        size_mb = float(figures.get("size_mib", bundle_figures.size_mib(bundle)))
    else:
        size_mb = exe.stat().st_size / 2**20
    width = max(len(r.name) for r in results)
    lines = [f"Executable: {exe.relative_to(ROOT) if exe.is_relative_to(ROOT) else exe} "
             f"({'onedir' if onedir else 'onefile'}, {size_mb:.0f} MiB)",
             f"{'check':<{width}}  status  time    detail"]
    for r in results:
        first = r.detail.splitlines()[0] if r.detail else ""
        lines.append(f"{r.name:<{width}}  {r.status:<6}  {r.seconds:5.1f}s  {first}")
        lines += [f"{'':<{width}}                  {extra}" for extra in r.detail.splitlines()[1:]]
    failed = [r for r in results if r.status == "FAIL"]
    lines += ["", f"{len(results) - len(failed)}/{len(results)} passed"
              + (f"; FAILED: {', '.join(r.name for r in failed)}" if failed else "")]
    report = "\n".join(lines)
    print()
    print(report)
    if args.update_docs and onedir and figures and not failed:
        bundle_figures.update_docs(figures, report)
        print(f"smoke_test: {bundle_figures.DOCS.relative_to(ROOT)} updated (figures and this output)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "executable": str(exe), "onedir": onedir, "size_mib": round(size_mb, 1),
            "results": [r.__dict__ for r in results], "timings_s": timings,
        }, indent=2), encoding="utf-8")
    if not args.keep and not failed:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"outputs kept in {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
