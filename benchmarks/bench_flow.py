"""The Flow view's canvas at any length: the time of one draw (plan + paint) and of a hover repaint, offscreen.

Before, a draw re-measured every label for every line (heads × T² lines × 2T labels): 86.6 s at 68 tokens with 8
heads in the window. Now labels are measured once per text and thinned, long columns pool neighbouring rows, and at
most ``LINE_BUDGET`` lines are drawn. Target: < 200 ms per draw at any length. The machine is shared: each row
ends with the 1-minute load average when it was measured.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_flow.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from PySide6.QtWidgets import QApplication

from app.common.flow import FlowData
from app.widgets.flow.canvas import LINE_BUDGET, FlowCanvas


def data(heads: int, n: int) -> FlowData:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(heads, n, n)).astype(np.float32) * 3
    logits[:, ~np.tril(np.ones((n, n), bool))] = -np.inf
    w = np.exp(logits - logits.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    tokens = tuple(f"tok{i}" for i in range(n))
    return FlowData(w, tokens, tokens, tuple(f"head {h + 1}" for h in range(heads)), "bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    print(f"load average before: {os.getloadavg()[0]:.2f}; line budget {LINE_BUDGET}")
    print(f"{'heads':>5} {'tokens':>6} {'first draw ms':>13} {'repaint ms':>10} {'hover ms':>8} {'lines':>6} "
          f"{'load':>5}")
    for heads, n in ((8, 16), (8, 68), (8, 300), (8, 1024), (8, 2048), (1, 4096)):
        d = data(heads, n)
        firsts, repaints, hovers = [], [], []
        for _ in range(args.repeat):
            c = FlowCanvas(dark=False)
            c.resize(900, 700)
            t0 = time.perf_counter()
            c.set_data(d, list(range(heads)))
            c.grab()
            firsts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            c.grab()
            repaints.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            c.set_hover("query", n // 2)
            c.grab()
            hovers.append(time.perf_counter() - t0)
            lines = len(c.drawn)
            c.deleteLater()
        print(f"{heads:>5} {n:>6} {statistics.median(firsts) * 1e3:>13.1f} {statistics.median(repaints) * 1e3:>10.1f} "
              f"{statistics.median(hovers) * 1e3:>8.1f} {lines:>6} {os.getloadavg()[0]:>5.2f}")
        app.processEvents()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
