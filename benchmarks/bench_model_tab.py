"""The Model tab in the real window (offscreen) on a GPT-2-small-sized random model (124 M parameters, built here
by ``bench_pretrained.build_gpt2_small``: no download): load and trace through the tab's session, the event loop's
longest stall meanwhile (the GUI must never freeze), the head grid drawn after the trace (target < 200 ms), hover →
next-token list, and "Open this head in the Playground".

The grid's figure is printed beside a floor measured in the same process: a bare pyqtgraph window drawing the same
144 maps as ImageItems (no titles, ticks, hatching or colour bar), and the ratio of the two, with the load average.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_model_tab.py [--dir FOLDER] [--tokens 128]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TEXT = ("When Mary and John went to the store, John gave a drink to Mary. The quick brown fox jumps over the lazy "
        "dog. Attention is all you need. A transformer reads every token and decides where to look. ")


def load_text(tokens: int, encode) -> str:  # type: ignore[no-untyped-def]
    text = TEXT
    while len(encode(text)) < tokens:
        text += TEXT
    ids = encode(text)[:tokens]
    return text if len(encode(text)) == tokens else _cut(text, tokens, encode, ids)


def _cut(text: str, tokens: int, encode, _ids) -> str:  # type: ignore[no-untyped-def]
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix with at most ``tokens`` tokens
        mid = (lo + hi + 1) // 2
        if len(encode(text[:mid])) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def floor_ms(app, weights, repeats: int = 5) -> float:  # type: ignore[no-untyped-def]
    """Median ms to set and paint 144 bare ImageItems of the same shapes in one GraphicsLayoutWidget."""
    import pyqtgraph as pg

    w = pg.GraphicsLayoutWidget()
    w.resize(1100, 700)
    items = []
    for li in range(weights.shape[0]):
        for h in range(weights.shape[1]):
            img = pg.ImageItem()
            w.addPlot(row=li, col=h).addItem(img)
            items.append((img, li, h))
    w.show()
    app.processEvents()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for img, li, h in items:
            img.setImage(weights[li, h], autoLevels=False, levels=(0.0, 1.0))
        w.repaint()
        app.processEvents()
        times.append((time.perf_counter() - t0) * 1000)
    w.close()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=None, help="keep the model here (default: a temp folder)")
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from bench_pretrained import build_gpt2_small
    from PySide6.QtCore import QElapsedTimer, QSettings, QTimer

    from app import create_main_window
    from app.widgets.application import make_application

    load_before = os.getloadavg()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-model-tab-")) / "gpt2-small-random"
    if not (folder / "model.safetensors").is_file():
        print(f"building a GPT-2-small-sized random model in {folder} …", file=sys.stderr)
        build_gpt2_small(folder)
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
    tick.start()
    timer = QTimer()
    timer.setInterval(10)

    def beat() -> None:
        stalls.append(tick.restart())

    timer.timeout.connect(beat)
    timer.start()
    t0 = time.perf_counter()
    session.load(folder)
    while session.load_state == "loading" or session.tracing:
        app.processEvents()
        time.sleep(0.002)
    if session.load_state != "ready":
        raise SystemExit(f"load failed: {session.error}")
    loaded = time.perf_counter() - t0
    from attention_core.pretrained import load_pretrained

    text = load_text(args.tokens, load_pretrained(folder).encode)
    tab.text_edit.setText(text)
    t1 = time.perf_counter()
    tab.trace_button.click()
    while session.tracing or session.trace is None or session.traced_text != text:
        if session.error:
            raise SystemExit(f"trace failed: {session.error}")
        app.processEvents()
        time.sleep(0.002)
    traced = time.perf_counter() - t1
    timer.stop()
    tab.views.setCurrentWidget(tab.grid)
    app.processEvents()
    grid_ms = []
    for _ in range(5):
        t2 = time.perf_counter()
        tab.grid.redraw()
        tab.grid.repaint()
        app.processEvents()
        grid_ms.append((time.perf_counter() - t2) * 1000)
    import numpy as np

    floor = floor_ms(app, np.asarray(session.trace.attentions))
    hover_ms = []
    for pos in range(0, args.tokens, max(1, args.tokens // 16)):
        t3 = time.perf_counter()
        session.hover(pos)
        app.processEvents()
        hover_ms.append((time.perf_counter() - t3) * 1000)
    session.select_head(5, 1)
    t4 = time.perf_counter()
    host.open_selected_head()
    app.processEvents()
    opened_ms = (time.perf_counter() - t4) * 1000
    window.close()
    load_after = os.getloadavg()
    g = statistics.median(grid_ms)
    print(f"model: {session.model.name}, {session.model.info.parameters:,} parameters, {len(session.trace)} tokens")
    print(f"load in the window: {loaded:.2f} s; trace in the window: {traced:.2f} s (Enter -> trace shown)")
    print(f"event loop while loading and tracing: longest stall {max(stalls):.0f} ms, "
          f"p95 {np.percentile(stalls, 95):.0f} ms over {len(stalls)} beats of 10 ms (target: no freeze, < 100 ms)")
    print(f"head grid (12 x 12 maps of {args.tokens} x {args.tokens}) drawn after the trace: median {g:.0f} ms "
          f"(runs {', '.join(f'{x:.0f}' for x in grid_ms)}); target < 200 ms")
    print(f"floor, 144 bare ImageItems in the same process: {floor:.0f} ms; ratio {g / floor:.2f}")
    print(f"hover -> next-token list: median {statistics.median(hover_ms):.1f} ms, max {max(hover_ms):.1f} ms")
    print(f"open layer 5 head 1 in the Playground (32 tokens x 64): {opened_ms:.0f} ms")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
