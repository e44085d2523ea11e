"""The Model tab with a 4,096-token text, in the real window (offscreen 1280 x 800): the event loop's longest stall
while tracing and while drawing each view (target < 100 ms), the head map's window scrolled and zoomed (each step's
redraw), the window's size kept. The model is random with Qwen2-0.5B's grid of heads (24 layers x 14 heads, 2 K/V
heads) but narrow (d_model 224, vocabulary 1,000), so the trace takes seconds: what is measured is the GUI.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_long_gui.py [--dir FOLDER] [--tokens 4096]
"""

from __future__ import annotations

import argparse
import os
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
    stalls: list[float] = []
    tick = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: stalls.append(tick.restart()))

    def watched(until: Callable[[], bool]) -> tuple[float, float]:
        """Process events until ``until()``; (seconds, the longest gap between 10 ms beats in ms)."""
        stalls.clear()
        tick.start()
        timer.start()
        t0 = time.perf_counter()
        while not until():
            app.processEvents()
            time.sleep(0.002)
        app.processEvents()
        timer.stop()
        return time.perf_counter() - t0, max(stalls, default=0.0)

    session.load(folder)
    watched(lambda: session.load_state != "loading" and not session.tracing)
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * (args.tokens // 9 + 2))
    tab.text_edit.setText(text)
    tab.trace_button.click()
    trace_s, trace_stall = watched(lambda: not session.tracing and session.trace is not None
                                   and session.traced_text == text)
    t = session.trace
    print(f"model: {session.model.name}, {session.model.info.layers} x {session.model.info.heads} heads; "
          f"{len(t):,} tokens (long: {t.is_long}), {t.kept_bytes / 2**20:.1f} MB kept")
    print(f"trace in the window {trace_s:.1f} s; longest event-loop stall meanwhile {trace_stall:.0f} ms")
    print(f"status: {session.status}")
    results: dict[str, Any] = {}
    for name, view in (("Heads", tab.grid), ("Head", tab.head_map), ("Flow", tab.flow)):
        t0 = time.perf_counter()
        tab.views.setCurrentWidget(view)
        took, stall = watched(lambda: True)
        results[name] = (time.perf_counter() - t0) * 1000
        print(f"{name} view shown and drawn: {results[name]:.0f} ms (longest stall {stall:.0f} ms)")
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
          f"per step (target < 100 ms)")
    print(f"window size after all this: {window.width()} x {window.height()} (was 1280 x 800)")
    window.close()
    print(f"load average before {load_before}, after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
