"""Start-up cost of the PyInstaller bundles versus running from source: wall seconds per launch, median of N.

    .venv/bin/python benchmarks/bench_bundle.py [--repeat 3] [--onefile dist/onefile/attention-playground]

Launches (headless, QT_QPA_PLATFORM=offscreen): `--version` (interpreter start, plus the onefile's unpacking),
`export --view weights --out X.png` (numpy + Qt, no torch), `--self-test DIR` (the window opens, every view
renders, exit), `train --steps 5` (imports torch and builds the optimiser). Build the bundles first
(scripts/build.sh, scripts/build.sh --onefile); a missing one is skipped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wall(cmd: list[str], timeout: float = 300) -> float:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--onedir", default=str(ROOT / "dist" / "attention-playground" / "attention-playground"))
    p.add_argument("--onefile", default=str(ROOT / "dist" / "onefile" / "attention-playground"))
    p.add_argument("--only", nargs="+", choices=("version", "export", "self-test", "train"),
                   default=["version", "export", "self-test", "train"])
    args = p.parse_args()
    runners = {"source": [sys.executable, "-m", "app"]}
    for label, path in (("onedir", args.onedir), ("onefile", args.onefile)):
        if Path(path).is_file():
            runners[label] = [path]
        else:
            print(f"({label}: {path} not built, skipped)")
    work = Path(tempfile.mkdtemp(prefix="bench-bundle-"))
    tasks = {
        "version": lambda i: ["--version"],  # i: "runner-N", a name for this launch's outputs
        "export": lambda i: ["export", "--preset", "cat-sat-mat", "--view", "weights",
                             "--out", str(work / f"w{i}.png")],
        "self-test": lambda i: ["--self-test", str(work / f"st{i}")],
        "train": lambda i: ["train", "--steps", "5", "--out", str(work / f"tr{i}")],
    }
    print(f"median wall seconds of {args.repeat} launches (first launch in brackets); {os.cpu_count()} CPUs")
    print(f"{'launch':<10}" + "".join(f"{name:>18}" for name in runners))
    for task in args.only:
        cells = []
        for label, base in runners.items():  # each its own outputs: a run folder is not replaced without --force
            times = [wall(base + tasks[task](f"{label}-{i}")) for i in range(args.repeat)]
            cells.append(f"{statistics.median(times):7.2f} [{times[0]:5.2f}]")
        print(f"{task:<10}" + "".join(f"{c:>18}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
