"""Ctrl+C and SIGTERM at random moments in every command that runs longer than a second.

Each command is first run to its end once (exit 0, outputs valid; its wall time T), then ``--interrupts`` fresh
child processes of it get a signal at a moment drawn uniformly from [``--min-delay``, T] (T: the shortest whole run
seen so far, a child that finished before its signal included): SIGINT to the whole process group, as a terminal's
Ctrl+C sends it (ffmpeg included), or SIGTERM to the process alone, as ``kill`` does, alternately. ``--parallel``
children run at once. Every child must then:

- exit 130 after SIGINT or 143 after SIGTERM with "attention-playground COMMAND: stopped" as the last line of
  stderr, or 0 if it had finished (then its outputs are complete); never a crash (a negative code), never 1;
- print no traceback ("Traceback", "Exception ignored", "Error calling Python override");
- leave no partial or temporary file: no hidden file anywhere in its work folder, every output either absent or
  complete (a run's folder has its three files or none, a PNG/GIF/MP4/CSV/JSON is whole);
- keep what was complete (a film stopped: the run's folder, written before it, is there).

    .venv/bin/python scripts/interrupt_campaign.py --interrupts 30 --parallel 4 --seed 0
    .venv/bin/python scripts/interrupt_campaign.py --only train-gif --exe dist/attention-playground/attention-playground

The signals fall one in each of ``--interrupts`` equal slices of the run (``_fractions``): a small count
(tests/test_interrupts.py's normal run: 6) still reaches the start, the middle and the end of every command.

Prints one JSON line: per command the count, the exit codes seen and the failures (with the delay, to reproduce).
The interpreter's own first ~50 ms (before any of the app's code runs) are Python's, hence ``--min-delay`` 0.15 s.
tests/test_interrupts.py and tests/test_interrupts_experiment_to_gui.py run it, half the commands each (the full 30
per command under ``CAMPAIGNS=full``: scripts/campaigns.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_FILES = ("model.safetensors", "config.json", "history.csv")
BAD_WORDS = ("Traceback", "Exception ignored", "Error calling Python override", "Segmentation fault")


def _complete_png(p: Path) -> bool:
    data = p.read_bytes()
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


def _complete_gif(p: Path) -> bool:
    data = p.read_bytes()
    return data[:6] in (b"GIF87a", b"GIF89a") and data.endswith(b";")


def _complete_mp4(p: Path) -> bool:
    data = p.read_bytes()
    return len(data) > 1000 and b"ftyp" in data[:16] and b"moov" in data and b"mdat" in data


def _complete_csv(p: Path) -> bool:
    text = p.read_text(encoding="utf-8")
    return text.endswith("\n") and len(text.splitlines()) >= 2


def _complete_json(p: Path) -> bool:
    try:
        json.loads(p.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return True


def _run_folder(folder: Path) -> str:
    """"" when ``folder`` is absent or holds a complete run; else what is wrong."""
    if not folder.exists():
        return ""
    present = [n for n in RUN_FILES if (folder / n).is_file()]
    if len(present) != len(RUN_FILES):
        return f"{folder.name}: partial run ({', '.join(present) or 'empty folder'})"
    if not _complete_json(folder / "config.json") or not _complete_csv(folder / "history.csv"):
        return f"{folder.name}: a file of the run is cut short"
    return ""


def _file(path: Path, complete: Callable[[Path], bool]) -> str:
    if not path.exists():
        return ""
    return "" if complete(path) else f"{path.name} is cut short"


class Command:
    """One command of the campaign: its arguments (``{w}``: the child's work folder, ``{f}``: the fixtures),
    what its outputs must look like, and whether it ends by itself (the window does not)."""

    def __init__(self, name: str, args: list[str], check: Callable[[Path], list[str]], ends: bool = True,
                 needs_done: Callable[[Path], list[str]] | None = None) -> None:
        self.name, self.args, self.check, self.ends = name, args, check, ends
        self.needs_done = needs_done or (lambda _w: [])


def _commands() -> dict[str, Command]:
    def run_and_film(suffix: str, complete: Callable[[Path], bool]) -> Callable[[Path], list[str]]:
        def check(w: Path) -> list[str]:
            problems = [_run_folder(w / "run"), _file(w / f"film{suffix}", complete)]
            if (w / f"film{suffix}").exists() and not (w / "run").exists():
                problems.append("a film without its run")
            return problems
        return check

    def done_run(w: Path) -> list[str]:
        return [] if (w / "run" / "model.safetensors").is_file() else ["finished without its run"]

    def experiment(w: Path) -> list[str]:
        out = w / "exp"
        problems = [_run_folder(f) for f in out.iterdir() if f.is_dir()] if out.exists() else []
        if (out / "summary.csv").exists():
            problems.append(_file(out / "summary.csv", _complete_csv))
            if len([f for f in out.iterdir() if f.is_dir()]) != 2:
                problems.append("a summary without both runs")
        return problems

    def self_test(w: Path) -> list[str]:
        folder = w / "st"
        return [_file(p, _complete_png) for p in folder.glob("*.png")] if folder.exists() else []

    return {c.name: c for c in (
        Command("train", ["train", "--steps", "40", "--out", "{w}/run"], lambda w: [_run_folder(w / "run")],
                needs_done=done_run),
        Command("train-gif", ["train", "--steps", "30", "--out", "{w}/run", "--gif", "{w}/film.gif"],
                run_and_film(".gif", _complete_gif), needs_done=done_run),
        Command("train-mp4", ["train", "--steps", "30", "--out", "{w}/run", "--mp4", "{w}/film.mp4"],
                run_and_film(".mp4", _complete_mp4), needs_done=done_run),
        Command("export", ["export", "--preset", "cat-sat-mat", "--view", "pipeline", "--out", "{w}/p.png"],
                lambda w: [_file(w / "p.png", _complete_png)]),
        Command("probe", ["probe", "--checkpoint", "{f}/model/model.safetensors", "--trials", "400"],
                lambda w: []),
        Command("bench", ["bench", "--max-n", "128", "--repeat", "2", "--heads", "1", "--d", "16", "--out",
                          "{w}/b.csv"], lambda w: [_file(w / "b.csv", _complete_csv)]),
        Command("experiment", ["experiment", "--preset", "causal-vs-bidirectional", "--steps", "15", "--out",
                               "{w}/exp"], experiment),
        Command("inspect", ["inspect", "--model", "{f}/model", "--text", "3 5 7 SEP", "--out", "{w}/i.json"],
                lambda w: [_file(w / "i.json", _complete_json)]),
        Command("generate", ["generate", "--model", "{f}/model", "--prompt", "3 5 7", "--max-new-tokens", "8",
                             "--out", "{w}/g.json"], lambda w: [_file(w / "g.json", _complete_json)]),
        Command("lessons", ["lessons", "--run", "dot-product"], lambda w: []),
        Command("lessons-check", ["lessons", "--check", str(ROOT / "resources" / "lessons" / "06-reversal.json")],
                lambda w: []),  # a lesson over the Training tab: --check trains for real, without Qt
        Command("self-test", ["--self-test", "{w}/st"], self_test),
        Command("gui", [], lambda w: [], ends=False),
    )}


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="offscreen", XDG_DATA_HOME=str(work / "data"), XDG_CONFIG_HOME=str(work / "config"),
               OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="")
    return env


def _launch(exe: list[str], cmd: Command, work: Path, fixtures: Path) -> subprocess.Popen[str]:
    work.mkdir(parents=True, exist_ok=True)
    args = [a.replace("{w}", str(work)).replace("{f}", str(fixtures)) for a in cmd.args]
    return subprocess.Popen([*exe, *args], cwd=str(work), env=_env(work), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _hidden_files(work: Path) -> list[str]:
    skip = {work / "data", work / "config"}
    return [str(p.relative_to(work)) for p in work.rglob(".*") if not any(s in p.parents or s == p for s in skip)]


INTERPRETER_START = "Fatal Python error: init_import_site"
"""CPython's own abort when a signal lands while the interpreter itself starts (importing ``site``), before one line of
the app runs: nothing the app can handle (a bundle has no ``site`` step). Such a child must still leave no file."""


def _judge(cmd: Command, code: int, sig: int | None, err: str, work: Path) -> list[str]:
    if sig is not None and code == 1 and err.lstrip().startswith(INTERPRETER_START):
        return [f"left {name}" for name in _hidden_files(work)] + [p for p in cmd.check(work) if p]
    problems = [f"printed {word!r}" for word in BAD_WORDS if word in err]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if code == 0 and cmd.ends:
        problems += cmd.needs_done(work)
    elif sig is not None and code == 128 + sig:
        word = cmd.args[0] if cmd.args and not cmd.args[0].startswith("-") else ""
        expected = f"attention-playground{' ' + word if word else ''}: stopped"
        if not lines or lines[-1].strip() != expected:
            problems.append(f"last stderr line {lines[-1] if lines else ''!r}, expected {expected!r}")
    else:
        problems.append(f"exit code {code} (signal {sig})")
    problems += [f"left {name}" for name in _hidden_files(work)]
    problems += [p for p in cmd.check(work) if p]
    return problems


def _one(exe: list[str], cmd: Command, work: Path, fixtures: Path, delay: float | None, sig: int,
         timeout: float) -> dict[str, object]:
    proc = _launch(exe, cmd, work, fixtures)
    sent = None
    if delay is not None:
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            if sig == signal.SIGINT:
                os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl+C: the whole foreground group
            else:
                os.kill(proc.pid, sig)
            sent = sig
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return {"delay": delay, "signal": sent, "code": None, "problems": [f"still running {timeout:.0f} s later"],
                "stderr": err[-2000:]}
    problems = _judge(cmd, proc.returncode, sent, err, work)
    return {"delay": None if delay is None else round(delay, 3), "signal": sent, "code": proc.returncode,
            "problems": problems, "stderr": err[-1500:] if problems else ""}


class _Moments:
    """Where in a run the signals fall: a fraction of the run's length, drawn by the seed, times the shortest run seen
    so far. The reference run alone is a poor measure under load: one slowed 3x by a neighbour (7.2 s for a ~2.5 s
    command, in CI) sent two thirds of the signals after their child had finished. Every child that finished before
    its signal is also a whole run, so its time shortens the span for the children launched after it."""

    def __init__(self, span: float, min_delay: float, learns: bool) -> None:
        self.span, self.min_delay, self.learns = span, min_delay, learns
        self.lock = threading.Lock()

    def run(self, one: Callable[[float], dict[str, object]], fraction: float) -> dict[str, object]:
        with self.lock:
            delay = self.min_delay + fraction * max(self.span - self.min_delay, 0.1)
        t0 = time.perf_counter()
        res = one(delay)
        if self.learns and res["signal"] is None and res["code"] == 0:
            with self.lock:
                self.span = min(self.span, time.perf_counter() - t0)
        return res


def _fractions(rng: random.Random, n: int) -> list[float]:
    """Where in the run the ``n`` signals fall, as fractions of it: one in each of ``n`` equal slices, in a shuffled
    order, so that a small count still reaches every part of a run (a uniform draw of 6 may leave out its start or
    its end). The first slice holds the start, where a signal while the entry was imported once escaped as a
    traceback and exit 1. Not ``--min-delay`` itself every time: on a busy machine the interpreter's own start
    (before the app's first line, where no handler can be installed yet) outlasts it, and a fixed 0.15 s met it in
    every command (10 of 13 in one run at load 11)."""
    fractions = [(i + rng.random()) / n for i in range(n)]
    rng.shuffle(fractions)
    return fractions


def _fixtures(exe: list[str], folder: Path) -> None:
    """A tiny trained model (probe, inspect), trained by the app itself."""
    folder.mkdir(parents=True, exist_ok=True)
    env = _env(folder)
    r = subprocess.run([*exe, "train", "--steps", "5", "--out", str(folder / "model")], env=env, capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"could not make the fixture model: {r.stderr[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interrupts", type=int, default=30, help="signals per command (default 30)")
    ap.add_argument("--parallel", type=int, default=4, help="children at once (default 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated commands (default: all): " + ", ".join(_commands()))
    ap.add_argument("--exe", default="", help="the executable to test (default: this Python -m app)")
    ap.add_argument("--min-delay", type=float, default=0.15)
    ap.add_argument("--gui-window", type=float, default=5.0, help="the window's signals fall in [min-delay, this]")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds a child may take after its signal")
    args = ap.parse_args()
    exe = [str(Path(args.exe).resolve())] if args.exe else [sys.executable, "-m", "app"]
    if not args.exe:
        os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    commands = _commands()
    chosen = [commands[n] for n in args.only.split(",") if n] if args.only else list(commands.values())
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="interrupt-campaign-"))
    started = time.perf_counter()
    report: dict[str, object] = {}
    failures: list[dict[str, object]] = []
    try:
        _fixtures(exe, base / "fixtures")
        for cmd in chosen:
            t0 = time.perf_counter()
            if cmd.ends:
                ref = _one(exe, cmd, base / cmd.name / "reference", base / "fixtures", None, 0, args.timeout)
                span = time.perf_counter() - t0
                if ref["code"] != 0 or ref["problems"]:
                    failures.append({"command": cmd.name, "reference": True, **ref})
            else:
                ref, span = {"code": None}, args.gui_window
            moments = _Moments(span, args.min_delay, cmd.ends)
            jobs = list(zip(_fractions(rng, args.interrupts),
                            [signal.SIGINT if i % 2 == 0 else signal.SIGTERM for i in range(args.interrupts)]))
            with ThreadPoolExecutor(max_workers=args.parallel) as pool:
                results = list(pool.map(lambda ij: moments.run(
                    lambda delay: _one(exe, cmd, base / cmd.name / f"c{ij[0]}", base / "fixtures", delay, ij[1][1],
                                       args.timeout), ij[1][0]), enumerate(jobs)))
            codes: dict[str, int] = {}
            for i, res in enumerate(results):
                codes[str(res["code"])] = codes.get(str(res["code"]), 0) + 1
                if res["problems"]:
                    failures.append({"command": cmd.name, "child": i, **res})
            report[cmd.name] = {"reference_s": round(span, 2), "span_s": round(moments.span, 2),
                                "interrupts": len(results), "exit_codes": codes,
                                "seconds": round(time.perf_counter() - t0, 1)}
            print(f"{cmd.name}: {report[cmd.name]}", file=sys.stderr, flush=True)
    finally:
        if not failures:
            import shutil

            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps({"commands": report, "failures": failures, "seconds": round(time.perf_counter() - started, 1),
                      "kept": str(base) if failures else ""}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
