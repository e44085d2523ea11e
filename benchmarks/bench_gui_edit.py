"""Edit → all views repainted, on the real window (offscreen), and launch → window shown.

Why: the playground promises that every keystroke repaints every step "live". This drives the real
``MainWindow`` through the same path as a typed cell (state → undo command → attention_core → views) and waits
until the five step heatmaps and the edited table have actually painted. Targets ("on a quiet
machine"): median < 8 ms and p95 < 16 ms. Launch → window shown with the first preset, first frame processed:
< 0.6 s and <= 1.6x a bare PySide6 + pyqtgraph window measured in the same run, alternating
(``measure_launch``, ``--launch`` alone). The load average is printed beside the figures: on this shared 2-core
machine a neighbour's load doubles them, so compare runs only at a similar load.

Why 1.6 and 1.7 (the ratios' budgets, settled 2026-11-28): measured on two machines of this kind, the ratios moved
with the machine, 1.53-1.58x launch and 1.49-1.70x edits at 3 x 4 where the bare window launched in 0.31 s, and
1.70-1.89x / 1.83-1.87x where it took 0.85-0.94 s. Reaching ~1.3 at launch would take a rewrite of the step maps
(one item painting cells, numbers, axes and colour bar; ``bench_launch_bound.py`` bounds what it could gain), not
worth its cost. The absolute budgets stay as they were.

The floor, measured in the same run at each size, its edits alternating with ours one by one: a bare
pyqtgraph window of the same size repainting five ``ImageItem``s of the five step maps' shapes (no numbers, no other
widgets) with the same "wait until all five painted" loop. Our median is printed as a ratio to it (target <= 1.7x):
the ratio holds where a neighbour's load moves the absolute figures. ``measure_edits()`` returns the figures for
``benchmarks/run_all.py``; ``--json PATH`` writes them.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_gui_edit.py [--edits 200] [--json PATH]
[--launch] [--launch-runs 5]``
"""

from __future__ import annotations

import argparse
import json
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
MODERN_ROWS = ((8, 16, "steps"), (8, 16, "tiles"))  # (tokens, dims, view in front) with rotary on: --modern
WINDOW = (1280, 800)
TARGET_MEDIAN_MS, TARGET_P95_MS, TARGET_RATIO = 8.0, 16.0, 1.7
"""One ratio budget for every size: the 3 x 4 edit has the highest ratio (what an edit costs besides the five
repaints weighs most where the maps are smallest), so it is the one the 1.7 binds."""

LAUNCH_CODE = """
import time, sys, os
t0 = float(sys.argv[1])
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from app.widgets.application import make_application
from app import create_main_window
from PySide6.QtCore import QSettings
app = make_application()
w = create_main_window(settings=QSettings(sys.argv[2], QSettings.Format.IniFormat))
w.resize(1280, 800)
w.show()
app.processEvents()
assert w.playground.computation is not None and w.pipeline.heatmaps["weights"].values().size
elapsed = time.time() - t0
heavy = [m for m in ("torch", "PIL", "imageio", "imageio_ffmpeg", "av", "pyqtgraph.opengl", "app.learn.model.engine",
                     "app.training.qt.host", "app.experiments.qt.host", "app.lab.qt.host", "app.model_tab.qt.host",
                     "app.playground.views.multihead.view", "app.playground.views.three_d.view") if m in sys.modules]
print(f"{elapsed:.4f} torch={'torch' in sys.modules} cpu={time.process_time():.4f} loaded={','.join(heavy) or '-'}",
      flush=True)
os._exit(0)  # the measurement is done; skip Qt teardown
"""

BARE_CODE = """
import time, sys, os
t0 = float(sys.argv[1])
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication.instance() or QApplication([])
w = QMainWindow()
plot = pg.PlotWidget()
plot.addItem(pg.ImageItem(np.arange(16.0).reshape(4, 4)))
w.setCentralWidget(plot)
w.resize(1280, 800)
w.show()
app.processEvents()
elapsed = time.time() - t0
print(f"{elapsed:.4f} torch={'torch' in sys.modules} cpu={time.process_time():.4f} loaded=-", flush=True)
os._exit(0)
"""
"""The baseline: a bare PySide6 + pyqtgraph window (a QMainWindow with a PlotWidget showing one ImageItem), shown
and its first frame processed, from a fresh python like ours. Our launch is reported as a ratio to it."""

TARGET_LAUNCH_S, TARGET_LAUNCH_RATIO = 0.6, 1.6  # the product's budget: < 0.6 s and <= 1.6 x the bare window


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


WARM_UP = 10  # edits before the timed ones (caches, first paints)
BLOCK = 1  # measure_edits alternates the floor's edits and ours in blocks of this many


class EditTimer:
    """One timed edit at a time on the real window: a Q cell changed through the undo command, as a typed cell
    is, timed until the five step maps and the edited table (when the cell is in view) have painted."""

    def __init__(self, window, tokens: int, dims: int) -> None:
        from PySide6.QtWidgets import QApplication

        from attention_core.presets import random_preset

        self.window, self.tokens, self.dims = window, tokens, dims
        preset = random_preset(1, n_tokens=tokens, d_model=dims)
        window.edits.apply("bench preset", lambda s: s.load_preset(preset))
        window.edits.apply("bench mode", lambda s: s.set_mode("qkv"))
        QApplication.processEvents()
        self.heatmaps = list(window.pipeline.heatmaps.values())
        self.table = window.editors["Q"].table
        self.painted = PaintCounter(self.table.viewport())

    def __call__(self, n: int) -> float:
        from PySide6.QtWidgets import QApplication

        window, table = self.window, self.table
        i, j = n % self.tokens, (n * 3) % self.dims
        value = float(window.playground.state.matrices["Q"][i, j]) + (0.01 if n % 2 == 0 else -0.02)
        before = [hm.paint_count for hm in self.heatmaps]
        table_before = self.painted.count
        # the table repaints only when the edited cell is scrolled into view
        cell_visible = table.viewport().rect().intersects(table.visualRect(table.model().index(i, j)))
        t0 = time.perf_counter()
        window.edits.set_cell("Q", i, j, value)
        while True:
            QApplication.processEvents()
            table_done = self.painted.count > table_before or not cell_visible
            if table_done and all(hm.paint_count > b for hm, b in zip(self.heatmaps, before)):
                break
            if time.perf_counter() - t0 > 2.0:
                raise RuntimeError("views did not repaint within 2 s")
        return time.perf_counter() - t0

    def check(self) -> None:
        """The views must show the edited numbers."""
        from attention_core import attention_steps

        q, k, v = self.window.playground.state.projected()
        ref = attention_steps(q, k, v)
        assert abs(self.window.pipeline.heatmaps["weights"].values() - ref.weights).max() < 1e-12


class ModernEditTimer(EditTimer):
    """The same timed edit with rotary positions on (base 10000): ``view="steps"`` times it until the five maps and
    the rotate row's maps have painted; ``view="tiles"`` with the Tiles view in front (the Steps view hidden behind
    it) until the tiles' grid and their table have painted (the FlashAttention record rebuilt)."""

    def __init__(self, window, tokens: int, dims: int, view: str = "steps") -> None:
        from PySide6.QtWidgets import QApplication

        super().__init__(window, tokens, dims)
        window.edits.apply("bench rotary", lambda m: m.set_rotary(10000.0))
        tab = window.tab
        if view == "tiles":
            tiles = tab.tiles
            tab.view_tabs.setCurrentWidget(tiles)
            QApplication.processEvents()
            self.heatmaps = []  # its output maps sit below the fold at this size: the grid and the table are in sight
            self.extra = [PaintCounter(tiles.grid), PaintCounter(tiles.table.viewport())]
        else:
            tab.view_tabs.setCurrentIndex(0)
            QApplication.processEvents()
            rotary = window.pipeline.rotary
            self.heatmaps = list(window.pipeline.heatmaps.values()) + [hm for hm in rotary.maps.values()
                                                                       if hm.isVisible()]
            self.extra = []
        QApplication.processEvents()

    def __call__(self, n: int) -> float:
        from PySide6.QtWidgets import QApplication

        if not self.extra:
            return super().__call__(n)
        window = self.window
        i, j = n % self.tokens, (n * 3) % self.dims
        value = float(window.playground.state.matrices["Q"][i, j]) + (0.01 if n % 2 == 0 else -0.02)
        before = [hm.paint_count for hm in self.heatmaps] + [c.count for c in self.extra]
        t0 = time.perf_counter()
        window.edits.set_cell("Q", i, j, value)
        while True:
            QApplication.processEvents()
            now = [hm.paint_count for hm in self.heatmaps] + [c.count for c in self.extra]
            if all(a > b for a, b in zip(now, before)):
                break
            if time.perf_counter() - t0 > 2.0:
                raise RuntimeError("the Tiles view did not repaint within 2 s")
        return time.perf_counter() - t0

    def check(self) -> None:
        """The Steps view (or the Tiles view) shows the edited numbers, rotated as attention_core rotates them."""
        from attention_core import attention_steps, flash_steps

        q, k, v = self.window.playground.state.projected()
        ref = attention_steps(q, k, v, rotary_base=10000.0)
        if self.extra:
            m = self.window.playground
            flash = flash_steps(ref.q_rotated, ref.k_rotated, v, block_q=m.block_q, block_k=m.block_k)
            assert abs(m.flash.output - flash.output).max() < 1e-12  # the record the Tiles view draws
        else:
            assert abs(self.window.pipeline.heatmaps["weights"].values() - ref.weights).max() < 1e-12


class FloorTimer:
    """The floor: a bare pyqtgraph window of the same size, five ``ImageItem``s of the five step maps' shapes
    (tokens x tokens four times, tokens x dims), laid out 3 + 2 like the Steps view, no numbers and no other
    widgets; one edit changes a value in each and sets the five images again (fixed levels), timed until all five
    have painted, as ``EditTimer`` waits."""

    def __init__(self, tokens: int, dims: int) -> None:
        import numpy as np
        import pyqtgraph as pg
        from PySide6.QtWidgets import QApplication, QGridLayout, QWidget

        class CountingImage(pg.ImageItem):
            paint_count = 0

            def paint(self, *args):  # noqa: ANN002
                self.paint_count += 1
                super().paint(*args)

        self.tokens, self.dims = tokens, dims
        self.window = QWidget()
        grid = QGridLayout(self.window)
        rng = np.random.default_rng(0)
        shapes = [(tokens, tokens)] * 4 + [(tokens, dims)]
        self.data = [rng.standard_normal(shape) for shape in shapes]
        self.images = []
        for n, shape in enumerate(shapes):
            view = pg.GraphicsLayoutWidget()
            box = view.addViewBox(lockAspect=False, enableMouse=False, invertY=True)
            image = CountingImage(axisOrder="row-major")
            image.setImage(self.data[n], autoLevels=False, levels=(-3.0, 3.0))
            box.addItem(image)
            box.setRange(xRange=(0, shape[1]), yRange=(0, shape[0]), padding=0)
            box.enableAutoRange(enable=False)
            row, col = divmod(n, 3)
            grid.addWidget(view, row, col * 2 if row == 0 else col * 3, 1, 2 if row == 0 else 3)
            self.images.append(image)
        self.window.resize(*WINDOW)
        self.window.show()
        for _ in range(20):
            QApplication.processEvents()

    def __call__(self, n: int) -> float:
        from PySide6.QtWidgets import QApplication

        i, j = n % self.tokens, (n * 3) % self.dims
        step = 0.01 if n % 2 == 0 else -0.02
        before = [im.paint_count for im in self.images]
        t0 = time.perf_counter()
        for k, (image, data) in enumerate(zip(self.images, self.data)):
            data[i, j if k == 4 else j % self.tokens] += step
            image.setImage(data, autoLevels=False, levels=(-3.0, 3.0))
        while True:
            QApplication.processEvents()
            if all(im.paint_count > b for im, b in zip(self.images, before)):
                break
            if time.perf_counter() - t0 > 2.0:
                raise RuntimeError("the floor's images did not repaint within 2 s")
        return time.perf_counter() - t0

    def close(self) -> None:
        from PySide6.QtWidgets import QApplication

        self.window.close()
        self.window.deleteLater()
        QApplication.processEvents()


def bench_edits(window, tokens: int, dims: int, edits: int) -> list[float]:
    """``edits`` timed edits (after ``WARM_UP``) on the real window at ``tokens`` x ``dims``, in seconds."""
    timer = EditTimer(window, tokens, dims)
    times = [timer(n) for n in range(edits + WARM_UP)][WARM_UP:]
    timer.check()
    return times


def bench_floor(tokens: int, dims: int, edits: int) -> list[float]:
    """``edits`` timed edits (after ``WARM_UP``) of the floor (``FloorTimer``) at ``tokens`` x ``dims``."""
    timer = FloorTimer(tokens, dims)
    try:
        return [timer(n) for n in range(edits + WARM_UP)][WARM_UP:]
    finally:
        timer.close()


def _launch_once(code: str, settings: Path) -> tuple[float, str]:
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", code, repr(t0), str(settings)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    line = [ln for ln in proc.stdout.splitlines() if "torch=" in ln]
    if not line:
        raise RuntimeError(f"launch run failed: {proc.stderr[-2000:]}")
    seconds, rest = line[0].split(maxsplit=1)
    return float(seconds), rest


def bench_launch(runs: int = 3, code: str = LAUNCH_CODE) -> list[tuple[float, str]]:
    """``runs`` launches of ``code`` (a fresh python each, fresh settings: the first-launch window): seconds from
    before the process starts to the window shown and its first frame processed, and what it had loaded."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(runs):
            out.append(_launch_once(code, Path(tmp) / f"s{n}.ini"))
    return out


def compile_app_bytecode() -> None:
    """Write the bytecode of ``app`` and ``attention_core`` (``__pycache__``, ignored by git), as a user's first
    launch and the bundle's build do.

    Why: the bare window's modules come from site-packages with their bytecode written at install time, while ours
    were compiled from source on every launch wherever ``PYTHONDONTWRITEBYTECODE`` is set (it is, on this machine
    kind): ~48 modules, ~25-35 ms of each launch that no user pays after the first (Python writes the bytecode then,
    and the bundle ships it). Stale files are rewritten; the sources are read, never changed."""
    import compileall

    for package in ("app", "attention_core"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


def measure_launch(runs: int = 5) -> dict[str, float | str]:
    """Our launch and the bare window's, alternating in the same run (one warm-up of each first, not counted), our
    modules' bytecode written first (``compile_app_bytecode``).

    Returns ``{"median": s, "bare_median": s, "ratio": median / bare_median, "cpu_median": s, "bare_cpu_median": s,
    "cpu_ratio": the same for the CPU seconds each process used up to its first frame (what a neighbour's load
    moves least), "load": 1-min load average at the start, "runs": n, "loaded": what our first frame had imported
    of the heavy modules ("-": none)}``."""
    load = os.getloadavg()[0]
    ours: list[float] = []
    bare: list[float] = []
    cpu: dict[str, list[float]] = {"ours": [], "bare": []}
    loaded = "-"
    compile_app_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        _launch_once(LAUNCH_CODE, Path(tmp) / "warm.ini")  # the disk cache warm for both
        _launch_once(BARE_CODE, Path(tmp) / "warm-bare.ini")
        for n in range(runs):
            seconds, rest = _launch_once(LAUNCH_CODE, Path(tmp) / f"s{n}.ini")
            ours.append(seconds)
            loaded = rest.split("loaded=", 1)[-1]
            cpu["ours"].append(float(rest.split("cpu=", 1)[1].split()[0]))
            seconds, rest = _launch_once(BARE_CODE, Path(tmp) / f"b{n}.ini")
            bare.append(seconds)
            cpu["bare"].append(float(rest.split("cpu=", 1)[1].split()[0]))
    median, bare_median = statistics.median(ours), statistics.median(bare)
    cpu_median, bare_cpu = statistics.median(cpu["ours"]), statistics.median(cpu["bare"])
    return {"median": median, "bare_median": bare_median, "ratio": median / bare_median, "cpu_median": cpu_median,
            "bare_cpu_median": bare_cpu, "cpu_ratio": cpu_median / bare_cpu, "load": load, "runs": runs,
            "loaded": loaded}


def launch_rows_ok(figures: dict[str, float | str]) -> bool:
    """Print the launch rows; True when the median is under ``TARGET_LAUNCH_S`` and the ratio to the bare
    window at most ``TARGET_LAUNCH_RATIO``."""
    median, bare, ratio = float(figures["median"]), float(figures["bare_median"]), float(figures["ratio"])
    print(f"launch -> main window shown, first frame processed (fresh python, first-launch settings, "
          f"{int(figures['runs'])} runs alternating with the bare window; 1-min load {float(figures['load']):.2f})")
    print(f"  ours:        median {median:.3f} s  (heavy modules loaded by then: {figures['loaded']})")
    print(f"  bare window: median {bare:.3f} s  (PySide6 + pyqtgraph, a PlotWidget showing one ImageItem)")
    if "cpu_ratio" in figures:
        print(f"  CPU seconds to the first frame: ours {float(figures['cpu_median']):.3f}, bare "
              f"{float(figures['bare_cpu_median']):.3f}, ratio {float(figures['cpu_ratio']):.2f} (load moves it least)")
    good = median < TARGET_LAUNCH_S and ratio <= TARGET_LAUNCH_RATIO
    print(f"  ratio {ratio:.2f}  target < {TARGET_LAUNCH_S:g} s and ratio <= {TARGET_LAUNCH_RATIO:g}: "
          f"{'OK' if good else 'MISSED'}")
    return good


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def measure_edits(edits: int = 200, modern: bool = False) -> dict[str, dict[str, float]]:
    """Edit -> all views repainted on the real window, and the floor beside it, at each of ``SIZES``.

    Returns ``{"3x4": {"median": ms, "p95": ms, "max": ms, "floor_median": ms, "floor_p95": ms, "ratio": median /
    floor_median, "load": 1-min load average when the size was measured, "edits": n, "cpu_median": ms of this
    thread's CPU time, "floor_cpu_median": ms, "cpu_ratio": cpu_median / floor_cpu_median}, ...}``. Makes the
    QApplication if there is none (``benchmarks/run_all.py`` imports this). ``modern``: the rows of ``MODERN_ROWS``
    instead (rotary on; the Steps view, then the Tiles view in front), against the same floor."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.widgets.application import make_application

    app = QApplication.instance() or make_application()
    from app import create_main_window

    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        window = create_main_window(settings=QSettings(str(Path(tmp) / "s.ini"), QSettings.Format.IniFormat))
        window.confirm_on_close = False
        window.resize(*WINDOW)
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

        rows = MODERN_ROWS if modern else tuple((t, d, "") for t, d in SIZES)
        for tokens, dims, view in rows:
            load = os.getloadavg()[0]
            ours = ModernEditTimer(window, tokens, dims, view) if view else EditTimer(window, tokens, dims)
            bare = FloorTimer(tokens, dims)
            times: list[float] = []
            floor: list[float] = []
            cpu: list[float] = []  # this thread's CPU time per edit: what a neighbour's load does not add to
            floor_cpu: list[float] = []

            def timed(timer: EditTimer | FloorTimer, n: int, walls: list[float], cpus: list[float]) -> None:
                start = time.thread_time()
                walls.append(timer(n))
                cpus.append(time.thread_time() - start)

            try:
                for n in range(WARM_UP):
                    ours(n), bare(n)
                # alternating: a neighbour's load falls on both alike, and the ratio holds
                for first in range(WARM_UP, WARM_UP + edits, BLOCK):
                    last = min(first + BLOCK, WARM_UP + edits)
                    for n in range(first, last):
                        timed(bare, n, floor, floor_cpu)
                    for n in range(first, last):
                        timed(ours, n, times, cpu)
            finally:
                bare.close()
            ours.check()
            median, floor_median = statistics.median(times) * 1e3, statistics.median(floor) * 1e3
            out[f"{tokens}x{dims}" + (f" rotary+{view}" if view else "")] = {
                "median": median, "p95": percentile(times, 0.95) * 1e3, "max": max(times) * 1e3,
                "floor_median": floor_median, "floor_p95": percentile(floor, 0.95) * 1e3,
                "ratio": median / floor_median, "load": load, "edits": len(times),
                "cpu_median": statistics.median(cpu) * 1e3, "floor_cpu_median": statistics.median(floor_cpu) * 1e3,
                "cpu_ratio": statistics.median(cpu) / statistics.median(floor_cpu)}
        window.close()
        del window
    return out


def edit_rows_ok(figures: dict[str, dict[str, float]]) -> bool:
    """Print the edit rows; True when every size meets the targets (median, p95 and the ratio to the floor)."""
    print(f"edit -> all views repainted (real MainWindow, offscreen, {WINDOW[0]}x{WINDOW[1]}, {os.cpu_count()} "
          f"cores); floor: a bare pyqtgraph window repainting five ImageItems of the same shapes")
    print(f"{'tokens x dims':>14} | {'median ms':>9} | {'p95 ms':>7} | {'max ms':>7} | {'floor ms':>8} | "
          f"{'ratio':>5} | {'CPU ms':>6} | {'CPU ratio':>9} | {'load':>4} | {'edits':>5} | target")
    print("-" * 130)
    ok = True
    for size, f in figures.items():
        good = f["median"] < TARGET_MEDIAN_MS and f["p95"] < TARGET_P95_MS and f["ratio"] <= TARGET_RATIO
        ok &= good
        print(f"{size:>14} | {f['median']:9.2f} | {f['p95']:7.2f} | {f['max']:7.2f} | {f['floor_median']:8.2f} | "
              f"{f['ratio']:5.2f} | {f['cpu_median']:6.2f} | {f['cpu_ratio']:9.2f} | {f['load']:4.2f} | "
              f"{int(f['edits']):5d} | median<{TARGET_MEDIAN_MS:g}, "
              f"p95<{TARGET_P95_MS:g}, ratio<={TARGET_RATIO:g}: {'OK' if good else 'MISSED'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--launch-runs", type=int, default=5)
    ap.add_argument("--launch", action="store_true",
                    help="measure the launch alone: ours and the bare window's, alternating (measure_launch)")
    ap.add_argument("--json", metavar="PATH", help="also write the edit figures (measure_edits) as JSON")
    ap.add_argument("--modern", action="store_true",
                    help="the edit rows with rotary positions on, the Steps view and then the Tiles view in front "
                         "(8 x 16), and no launch rows")
    args = ap.parse_args()
    if args.modern:
        return 0 if edit_rows_ok(measure_edits(args.edits, modern=True)) else 1
    if args.launch:
        return 0 if launch_rows_ok(measure_launch(args.launch_runs)) else 1

    figures = measure_edits(args.edits)
    if args.json:
        Path(args.json).write_text(json.dumps({"edits": figures}, indent=2) + "\n")

    launch = measure_launch(args.launch_runs)

    ok = edit_rows_ok(figures)
    print()
    ok &= launch_rows_ok(launch)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
