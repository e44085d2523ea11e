"""The Model tab with a 4,096-token text, in the real window (offscreen 1280 x 800): the event loop's longest stall
while tracing and while drawing each view (target < 100 ms), the head map's window scrolled and zoomed (each step's
redraw), the window's size kept. The model is random with Qwen2-0.5B's grid of heads (24 layers x 14 heads, 2 K/V
heads) but narrow (d_model 224, vocabulary 1,000), so the trace takes seconds: what is measured is the GUI.

The stall is split in two: while the trace runs (the GUI thread has little to do then: a long beat is the trace's
thread holding the GIL or the machine's other load) and from the trace's arrival until its views are drawn (the
GUI thread's own work). ``--profile`` prints what runs on the GUI thread in the second (cProfile, that thread only).
Every figure is printed with the 1-minute load average beside it (the machine is shared).

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_long_gui.py [--dir FOLDER] [--tokens 4096] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPE = {"hidden_size": 224, "intermediate_size": 608, "vocab_size": 1000, "max_position_embeddings": 4096}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", type=Path, default=None, help="keep the model here (default: a temp folder)")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--profile", action="store_true", help="print what the GUI thread runs when the trace arrives")
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from pretrained_shapes import build_qwen2_05b
    from PySide6.QtCore import QElapsedTimer, QSettings, QTimer

    from app import create_main_window
    from app.widgets.application import make_application

    load_before = os.getloadavg()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-long-gui-")) / "qwen2-grid-narrow"
    if not (folder / "model.safetensors").is_file():
        build_qwen2_05b(folder, **SHAPE)
    app = make_application()
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "bench.ini"), QSettings.Format.IniFormat)
    window = create_main_window(settings=settings, detect_devices=False, confirm_on_close=False)
    window.resize(1280, 800)
    window.show()
    host = window.inspect
    session = host.model
    tab = host.show()
    stalls: list[tuple[float, float]] = []  # (when the beat came, the gap before it in ms)
    tick = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: stalls.append((time.perf_counter(), tick.restart())))

    def watched(until: Callable[[], bool], action: Callable[[], object] | None = None,
                settle_s: float = 0.0) -> tuple[float, float]:
        """Run ``action`` and process events until ``until()``, then ``settle_s`` more (the first draws); (seconds,
        the longest gap between 10 ms beats in ms, the action's own time included)."""
        stalls.clear()
        tick.start()
        timer.start()
        t0 = time.perf_counter()
        if action is not None:
            action()
        while not until():
            app.processEvents()
            time.sleep(0.002)
        end = time.perf_counter() + settle_s
        while True:
            app.processEvents()
            if time.perf_counter() >= end:
                break
            time.sleep(0.002)
        timer.stop()
        return time.perf_counter() - t0, max((gap for _, gap in stalls), default=0.0)

    def load() -> str:
        return f"load {os.getloadavg()[0]:.2f}"

    arrived: list[float] = []
    profile = cProfile.Profile() if args.profile else None

    def arrival(_text: str) -> None:  # the trace's result reaching the GUI thread: its status comes first
        trace = session.trace
        if trace is not None and trace.is_long and (not arrived or arrived[-1] < started[-1]):
            arrived.append(time.perf_counter())
            if profile is not None:
                profile.enable()
                QTimer.singleShot(1000, profile.disable)

    started: list[float] = [0.0]  # when the last Trace was pressed: one arrival per trace
    session.events.status.connect(arrival, priority=100)  # before every view's own handler

    # the window's own launch work first: the Playground, behind this tab and never painted, builds its derived
    # maps 3 s after launch (``after_first_paint``'s fallback), 100-170 ms on the GUI thread at load 3, which would
    # otherwise land inside the trace measured below
    launch_s = time.perf_counter() + 3.5
    _, launch_stall = watched(lambda: time.perf_counter() > launch_s)
    print(f"the window's launch work (before the model): longest stall {launch_stall:.0f} ms ({load()})")
    session.load(folder)
    watched(lambda: session.load_state != "loading" and not session.tracing)
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * (args.tokens // 9 + 2))
    tab.text_edit.setText(text)
    trace_s, trace_stall = watched(lambda: not session.tracing and session.trace is not None
                                   and session.traced_text == text,
                                   action=lambda: (started.append(time.perf_counter()), tab.trace_button.click()),
                                   settle_s=1.0)
    came = arrived[-1] if arrived else float("inf")
    before = [gap for at, gap in stalls if at < came]  # a beat late across the arrival counts as the arrival's
    after = [gap for at, gap in stalls if at >= came]
    t = session.trace
    print(f"model: {session.model.name}, {session.model.info.layers} x {session.model.info.heads} heads; "
          f"{len(t):,} tokens (long: {t.is_long}), {t.kept_bytes / 2**20:.1f} MB kept")
    print(f"trace in the window {trace_s:.1f} s; longest event-loop stall meanwhile {trace_stall:.0f} ms ({load()})")
    print(f"  of which: while tracing {max(before, default=0):.0f} ms; from the arrival until drawn "
          f"{max(after, default=0):.0f} ms ({load()})")
    print(f"status: {session.status}")
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(r"app/|pyqtgraph|PySide6", 30)
        print("what the GUI thread ran in the second after the arrival (cProfile, cumulative):")
        print("\n".join(line for line in out.getvalue().splitlines() if "sleep" not in line))
    results: dict[str, Any] = {}
    for name, view in (("Heads", tab.grid), ("Head", tab.head_map), ("Flow", tab.flow)):
        took, stall = watched(lambda: True, action=lambda v=view: tab.views.setCurrentWidget(v), settle_s=0.1)
        results[name] = stall
        print(f"{name} view shown and drawn: longest stall {stall:.0f} ms ({load()})")
    tab.views.setCurrentWidget(tab.head_map)
    steps = []
    for i in range(12):
        start, size = session.map_window
        t0 = time.perf_counter()
        if i % 4 == 3:
            session.set_map_window(start, size * 2 if size < 512 else size // 4)  # zoom
        else:
            session.set_map_window(start - size // 2 - (i * 331) % 900)  # scroll, jumps included
        app.processEvents()
        steps.append((time.perf_counter() - t0) * 1000)
    print(f"head map scrolled / zoomed 12 times: median {statistics.median(steps):.0f} ms, max {max(steps):.0f} ms "
          f"per step (target < 100 ms) ({load()})")
    print(f"window size after all this: {window.width()} x {window.height()} (was 1280 x 800)")
    window.close()
    print(f"load average before {load_before}, after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
