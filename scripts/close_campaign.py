"""Close the window, or cancel its work, at random moments: training, stepping, loading a model, the start-up
warm-up, device detection, an export. Each run opens a real main window, starts one kind of work, waits a random
time while the event loop runs, then cancels (Stop / Reset) and/or closes the window, and checks:

- closing took < 1 s (``--hang-limit``),
- no exception reached the event loop (``sys.excepthook`` and Qt warnings are recorded),
- after the close no thread is left: no Python thread but the main one, no active ``QThreadPool`` thread,
- the process exits with code 0 (no segfault at exit): the runs are split over ``--processes`` child processes.

    .venv/bin/python scripts/close_campaign.py --runs 100 --processes 2 --seed 0

Prints one JSON line with the figures (runs per scenario, slowest close, failures with their seed and run number).
Run N does scenario N mod 8 (every kind of work is cut, whatever the count); its moments come from ``S:N``.
Reproduce a failure with ``--seed S --first N --runs 1``. tests/shell/test_close_campaign.py runs it (16 runs + 1
fresh in a normal run, 100 + 4 under ``CAMPAIGNS=full``: scripts/campaigns.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("train", "train-then-stop", "step", "reset-while-running", "load-model", "warm-up", "devices",
             "export")


def _pump(seconds: float) -> None:
    from PySide6.QtWidgets import QApplication

    end = time.perf_counter() + seconds
    while True:
        QApplication.processEvents()
        if time.perf_counter() >= end:
            return
        time.sleep(0.005)


def _leftover_threads() -> list[str]:
    from PySide6.QtCore import QThreadPool

    names = [t.name for t in threading.enumerate()
             if t is not threading.main_thread() and t.is_alive() and not isinstance(t, threading._DummyThread)]
    active = QThreadPool.globalInstance().activeThreadCount()
    return names + [f"QThreadPool active x{active}"] * (active > 0)


def _make_model_file(folder: Path) -> Path:
    """A small trained model saved by the app's own session, to load in the "load-model" scenario."""
    from app.training.model.session import TrainingSession
    from attention_core.tiny.config import TrainConfig

    s = TrainingSession(TrainConfig(steps=4, train_size=64, test_size=16, train_eval_size=8, batch_size=16))
    s.set_speed(None)
    s.start()
    s.wait_idle(60)
    path = folder / "model.safetensors"
    s.save(path)
    s.shutdown()
    return path


def run_one(scenario: str, rng: random.Random, folder: Path, model_file: Path) -> dict[str, Any]:
    """One window: start the scenario's work, wait a random moment, cancel and/or close; the figures."""
    import shiboken6
    from PySide6.QtCore import QSettings

    from app import create_main_window
    from app.widgets.qt_compat import delete_now

    w = create_main_window(settings=QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat),
                           warm_up_torch=scenario == "warm-up", detect_devices=scenario == "devices",
                           confirm_on_close=False)
    w.show()
    _pump(0.02)
    try:
        return _work_then_close(w, scenario, rng, folder, model_file)
    finally:
        if shiboken6.isValid(w):  # a run that raised: its window must not keep working behind the next ones
            delete_now(w, flush=True)


def _work_then_close(w: Any, scenario: str, rng: random.Random, folder: Path, model_file: Path) -> dict[str, Any]:
    s = w.training
    delay = rng.uniform(0.0, 0.6)
    if scenario in ("train", "train-then-stop", "reset-while-running"):
        w.tabs.setCurrentIndex(1)
        w.training_panel  # noqa: B018 (builds the panel)
        s.set_speed(rng.choice([None, 20.0, 5.0]))
        s.start()
    elif scenario == "step":
        w.training_panel  # noqa: B018
        for _ in range(rng.randint(1, 4)):
            s.step()
    elif scenario == "load-model":
        w.training_panel  # noqa: B018
        s.load(model_file)
    elif scenario == "warm-up":
        w.training_panel  # noqa: B018 (its warm-up starts now)
        delay = rng.uniform(0.0, 0.3)
    elif scenario == "devices":
        w.start_device_detection()
    elif scenario == "export":
        w.export_all(folder / f"export-{rng.randint(0, 9)}")
    _pump(delay)
    if scenario == "train-then-stop":
        s.stop()
    elif scenario == "reset-while-running":
        s.reset()
        _pump(rng.uniform(0.0, 0.2))
    return _close_and_measure(w, scenario, s.run_state)


def _close_and_measure(w: Any, scenario: str, state: str) -> dict[str, Any]:
    """Close ``w``: how long until it was hidden (what the user sees) and until ``close()`` returned (the threads
    joined), and which threads are left."""
    from PySide6.QtCore import QEvent, QObject

    from app.widgets.qt_compat import delete_now

    hidden_at: list[float] = []

    class _Hide(QObject):
        def eventFilter(self, _obj: Any, event: Any) -> bool:  # noqa: N802 (Qt API)
            if event.type() == QEvent.Type.Hide and not hidden_at:
                hidden_at.append(time.perf_counter())
            return False

    spy = _Hide()
    w.installEventFilter(spy)
    t0 = time.perf_counter()
    w.close()
    took = time.perf_counter() - t0
    hidden = (hidden_at[0] - t0) if hidden_at else took
    delete_now(w, flush=True)
    return {"scenario": scenario, "close_s": took, "hidden_s": hidden, "threads": _leftover_threads(),
            "state": state}


def _fresh_child(seed: int, n: int, folder: Path, problems: list[str], hang_limit: float) -> int:
    from PySide6.QtCore import QSettings

    from app import create_main_window

    rng = random.Random(f"{seed}:fresh:{n}")
    w = create_main_window(settings=QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat),
                           warm_up_torch=True, confirm_on_close=False)
    w.show()
    _pump(0.02)
    w.training_panel  # noqa: B018 (the warm-up starts)
    _pump(rng.uniform(0.0, 1.0))
    r = _close_and_measure(w, "first-warm-up", w.training.run_state)
    r["run"] = n
    why = list(problems) + ([f"hidden after {r['hidden_s']:.2f} s"] if r["hidden_s"] > hang_limit else []) + \
        ([f"threads left: {r['threads']}"] if r["threads"] else [])
    failures = [{"seed": seed, "run": n, "scenario": "first-warm-up", "why": why}] if why else []
    print(json.dumps({"results": [r], "failures": failures}), flush=True)
    return 1 if failures else 0


def child(seed: int, first: int, runs: int, hang_limit: float, fresh: bool = False) -> int:
    """Runs ``first`` .. ``first + runs - 1`` in this process; prints one JSON line; exits 0 unless a run failed."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler

    from app.widgets.application import make_application

    app = make_application()
    problems: list[str] = []

    def on_exception(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        problems.append("".join(traceback.format_exception(kind, value, tb))[-800:])

    def on_message(mode: QtMsgType, _context: Any, message: str) -> None:
        if mode in (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg) and \
                "propagateSizeHints" not in message:  # the offscreen platform's notice, not ours
            problems.append(f"Qt: {message}")

    sys.excepthook = on_exception
    qInstallMessageHandler(on_message)
    folder = Path(tempfile.mkdtemp(prefix="close-campaign-"))
    if fresh:  # torch not imported yet: close while the app's first warm-up imports it and takes its first step
        return _fresh_child(seed, first, folder, problems, hang_limit)
    model_file = _make_model_file(folder)
    # Every window's close ends in a full garbage collection (qt_compat.delete_now), which walked torch's and Qt's
    # modules each time: 0.13 s a run, a quarter of a child's CPU. Set aside what exists before the first window
    # (no widget yet), so those collections walk only what the runs create, which they still collect as before.
    import gc

    gc.freeze()
    results, failures = [], []
    for n in range(first, first + runs):
        rng = random.Random(f"{seed}:{n}")
        scenario = SCENARIOS[n % len(SCENARIOS)]  # in turn: 16 runs (the test suite's normal count) cut each twice
        before = len(problems)
        try:
            r = run_one(scenario, rng, folder, model_file)
        except Exception:
            r = {"scenario": scenario, "close_s": 0.0, "hidden_s": 0.0, "threads": [], "state": "?"}
            problems.append(traceback.format_exc()[-800:])
        r["run"] = n
        results.append(r)
        why = problems[before:] + ([f"close took {r['close_s']:.2f} s"] if r["close_s"] > hang_limit else []) + \
            ([f"hidden after {r['hidden_s']:.2f} s"] if r["hidden_s"] > hang_limit else []) + \
            ([f"threads left: {r['threads']}"] if r["threads"] else [])
        if why:
            failures.append({"seed": seed, "run": n, "scenario": scenario, "why": why})
    app.processEvents()
    print(json.dumps({"results": results, "failures": failures}), flush=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--processes", type=int, default=2,
                   help="child processes, run side by side (each must exit with code 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--first", type=int, default=0, help="number of the first run (to reproduce one)")
    p.add_argument("--hang-limit", type=float, default=1.0, help="seconds a close may take")
    p.add_argument("--fresh", type=int, default=4,
                   help="extra runs, each in a new process: close during the app's first warm-up (torch not loaded "
                        "yet). Its close waits for the warm-up's first optimiser step behind the hidden window, so "
                        "only the time until hidden is held to --hang-limit")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--child-fresh", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return child(a.seed, a.first, a.runs, a.hang_limit, fresh=a.child_fresh)
    per = -(-a.runs // a.processes)
    results: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    exits = []
    # the children's folders (model file, window settings, which Qt writes again as it exits) in one of ours,
    # removed when they are done: a campaign leaves nothing in the temporary folder
    scratch = tempfile.mkdtemp(prefix="close-campaign-")
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"), "TMPDIR": scratch}
    children = []
    for first in range(a.first, a.first + a.runs, per):  # side by side: the work is CPU-bound, one per core
        n = min(per, a.first + a.runs - first)
        children.append((first, subprocess.Popen(
            [sys.executable, __file__, "--child", "--seed", str(a.seed), "--first", str(first), "--runs", str(n),
             "--hang-limit", str(a.hang_limit)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)))
    for n in range(a.fresh):
        children.append((n, subprocess.Popen(
            [sys.executable, __file__, "--child", "--child-fresh", "--seed", str(a.seed), "--first", str(n),
             "--runs", "1", "--hang-limit", str(a.hang_limit)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)))
    for first, proc in children:
        stdout, stderr = proc.communicate(timeout=900)
        exits.append(proc.returncode)
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        if lines:
            out = json.loads(lines[-1])
            results += out["results"]
            failures += out["failures"]
        if proc.returncode != 0 and not (lines and json.loads(lines[-1])["failures"]):
            failures.append({"seed": a.seed, "run": first, "scenario": "process",
                             "why": [f"exit code {proc.returncode}", stderr[-1500:]]})
    shutil.rmtree(scratch, ignore_errors=True)
    by = {sc: sum(1 for r in results if r["scenario"] == sc) for sc in (*SCENARIOS, "first-warm-up")}
    closes = sorted(r["close_s"] for r in results if r["scenario"] != "first-warm-up")
    first_warm = [r for r in results if r["scenario"] == "first-warm-up"]
    summary = {"runs": len(results), "processes": len(exits), "exit_codes": exits, "per_scenario": by,
               "close_s_median": round(closes[len(closes) // 2], 4) if closes else None,
               "close_s_max": round(closes[-1], 4) if closes else None,
               "hidden_s_max": round(max(r["hidden_s"] for r in results), 4) if results else None,
               "first_warm_up_close_s": [round(r["close_s"], 2) for r in first_warm], "failures": failures}
    print(json.dumps(summary))
    return 1 if failures or any(exits) else 0


if __name__ == "__main__":
    sys.exit(main())
