"""Edit → all views repainted, on the real window (offscreen), and launch → window shown.

Why: the playground promises that every keystroke repaints every step "live". This drives the real
``MainWindow`` through the same path as a typed cell (state → undo command → attention_core → views) and waits
until the five step heatmaps and the edited table have actually painted. Targets (issue 11, "on a quiet
machine"): median < 8 ms and p95 < 16 ms; launch → window shown with the first preset computed < 2 s (torch
imported lazily). The load average is printed beside the figures: on this shared 2-core machine a neighbour's
load doubles them, so compare runs only at a similar load.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_gui_edit.py [--edits 200]``
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

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = ((3, 4), (8, 16), (16, 64))  # (tokens, dims): Lq = Lk = tokens, d_k = d_v = dims

LAUNCH_CODE = """
import time, sys, os
t0 = float(sys.argv[1])
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from app.shell.gui import make_application
from app import create_main_window
from PySide6.QtCore import QSettings
app = make_application()
w = create_main_window(settings=QSettings(sys.argv[2], QSettings.Format.IniFormat))
w.show()
app.processEvents()
assert w.playground.computation is not None and w.pipeline.heatmaps["weights"].values().size
elapsed = time.time() - t0
print(f"{elapsed:.4f} torch={'torch' in sys.modules}", flush=True)
os._exit(0)  # the measurement is done; skip Qt teardown
"""


class PaintCounter:
    """Counts paint events on a widget (the edited table's viewport)."""

    def __init__(self, widget) -> None:
        from PySide6.QtCore import QEvent, QObject

        counter = self

        class _Filter(QObject):
            def eventFilter(self, obj, event):  # noqa: N802
                if event.type() == QEvent.Type.Paint:
                    counter.count += 1
                return False

        self.count = 0
        self._filter = _Filter()
        widget.installEventFilter(self._filter)


def bench_edits(window, tokens: int, dims: int, edits: int) -> list[float]:
    from PySide6.QtWidgets import QApplication

    from attention_core.presets import random_preset

    preset = random_preset(1, n_tokens=tokens, d_model=dims)
    window.edits.apply("bench preset", lambda s: s.load_preset(preset))
    window.edits.apply("bench mode", lambda s: s.set_mode("qkv"))
    QApplication.processEvents()
    heatmaps = list(window.pipeline.heatmaps.values())
    table = window.editors["Q"].table
    painted = PaintCounter(table.viewport())
    times = []
    for n in range(edits + 10):
        i, j = n % tokens, (n * 3) % dims
        value = float(window.playground.state.matrices["Q"][i, j]) + (0.01 if n % 2 == 0 else -0.02)
        before = [hm.paint_count for hm in heatmaps]
        table_before = painted.count
        # the table repaints only when the edited cell is scrolled into view
        cell_visible = table.viewport().rect().intersects(table.visualRect(table.model().index(i, j)))
        t0 = time.perf_counter()
        window.edits.set_cell("Q", i, j, value)
        while True:
            QApplication.processEvents()
            table_done = painted.count > table_before or not cell_visible
            if table_done and all(hm.paint_count > b for hm, b in zip(heatmaps, before)):
                break
            if time.perf_counter() - t0 > 2.0:
                raise RuntimeError("views did not repaint within 2 s")
        dt = time.perf_counter() - t0
        if n >= 10:  # warm-up edits excluded
            times.append(dt)
    # the views must show the edited numbers
    from attention_core import attention_steps

    q, k, v = window.playground.state.projected()
    ref = attention_steps(q, k, v)
    assert abs(window.pipeline.heatmaps["weights"].values() - ref.weights).max() < 1e-12
    return times


def bench_launch(runs: int = 3) -> list[tuple[float, str]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            t0 = time.time()
            proc = subprocess.run([sys.executable, "-c", LAUNCH_CODE, repr(t0), str(Path(tmp) / "s.ini")],
                                  cwd=ROOT, capture_output=True, text=True, timeout=120)
            line = [ln for ln in proc.stdout.splitlines() if "torch=" in ln]
            if not line:
                raise RuntimeError(f"launch run failed: {proc.stderr[-2000:]}")
            seconds, torch_flag = line[0].split()
            out.append((float(seconds), torch_flag))
    return out


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--launch-runs", type=int, default=3)
    args = ap.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.shell.gui import make_application

    app = make_application()
    from app import create_main_window

    with tempfile.TemporaryDirectory() as tmp:
        window = create_main_window(settings=QSettings(str(Path(tmp) / "s.ini"), QSettings.Format.IniFormat))
        window.confirm_on_close = False
        window.resize(1280, 800)
        window.show()
        app.processEvents()
        # let the background GPU listing (imports torch once) finish so it does not share the 2 cores with us
        deadline = time.time() + 30
        while getattr(window, "device_worker", None) is None and time.time() < deadline:
            QApplication.processEvents()
            time.sleep(0.01)
        worker = getattr(window, "device_worker", None)
        while worker is not None and worker.is_running and time.time() < deadline:
            QApplication.processEvents()
            time.sleep(0.01)
        QApplication.processEvents()

        rows = []
        load_before = os.getloadavg()[0]
        for tokens, dims in SIZES:
            times = bench_edits(window, tokens, dims, args.edits)
            rows.append((tokens, dims, statistics.median(times) * 1e3, percentile(times, 0.95) * 1e3,
                         max(times) * 1e3, len(times)))
        window.close()
        del window

    launch = bench_launch(args.launch_runs)
    med_launch = statistics.median(s for s, _ in launch)

    print(f"edit -> all views repainted (real MainWindow, offscreen, 1280x800, {os.cpu_count()} cores, "
          f"1-min load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after)")
    print(f"{'tokens x dims':>14} | {'median ms':>9} | {'p95 ms':>7} | {'max ms':>7} | {'edits':>5} | target")
    print("-" * 72)
    ok = True
    for tokens, dims, med, p95, mx, n in rows:
        good = med < 8 and p95 < 16
        ok &= good
        print(f"{f'{tokens}x{dims}':>14} | {med:9.2f} | {p95:7.2f} | {mx:7.2f} | {n:5d} | "
              f"median<8, p95<16: {'OK' if good else 'MISSED'}")
    print()
    print("launch -> main window shown with the first preset computed (fresh python, from the venv)")
    for n, (s, flag) in enumerate(launch, 1):
        print(f"  run {n}: {s:.3f} s  ({flag} at that moment)")
    good = med_launch < 2.0
    ok &= good
    print(f"  median: {med_launch:.3f} s  target < 2 s: {'OK' if good else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
