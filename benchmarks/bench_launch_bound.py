"""How close to the bare window could our launch come? The launch with parts of the first frame taken away.

Why: the launch budget was <= 1.3 x a bare PySide6 + pyqtgraph window (one ``PlotWidget`` with one
``ImageItem``), and ours measured ~1.55 x; this measured what a rewrite of the step maps could gain at most, and
the budget became 1.6 x instead (the rewrite is not worth its cost). It still bounds what a cut could gain: the
same launch as ``bench_gui_edit.measure_launch`` (a fresh python each, first-launch settings, our
bytecode written first, alternating with the bare window), in variants

- ``ours``: the window as it is;
- ``no maps``: the Steps view's five ``HeatmapWidget``s replaced by empty widgets (``EmptyMap`` below: they take the
  same place, with a map's size hint, answer the pipeline's calls and draw nothing; their modules are still
  imported). No rewrite of the maps can do better than this. (Without a map's size hint the Playground tab is first
  laid out 1008 px wide, below its narrow layout's 1150, and switches to it and back before the first frame: ~30 ms
  of re-polishing that the real window does not pay);
- ``no style sheet``: the theme's style sheet left out (every widget is polished by it when it joins the window);
- ``no maps, no style sheet``: both;
- ``no global font rule``: the style sheet without its ``QWidget { font-size: 10pt; }`` rule (every widget of the
  window matches it), the application's font at 10 pt instead.

This is an experiment on the launch, not a way to run the app: the variants patch the app in the child process
only. Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_launch_bound.py [--runs 9]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gui_edit as bench  # noqa: E402

EMPTY_MAPS = '''
import numpy as _np
from PySide6.QtCore import QObject as _QObject, QRectF as _QRectF, QSize as _QSize, Signal as _Signal
from PySide6.QtGui import QFont as _QFont
from PySide6.QtWidgets import QWidget as _QWidget
import app.playground.qt.pipeline as _pipeline

class _Box(_QObject):
    sigResized = _Signal(object)
    sigTransformChanged = _Signal(object)

class _Cells:
    text_scale = 1.0
    def sceneBoundingRect(self): return _QRectF(0, 0, 120, 90)
    def number_font(self, cw, ch): return _QFont()

class _Plot:
    def __init__(self): self.box = _Box()
    def getViewBox(self): return self.box

class EmptyMap(_QWidget):
    cellHovered = _Signal(int, int)
    cellClicked = _Signal(int, int)
    doubleClicked = _Signal()
    exported = _Signal(str)
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.plot, self.overlay, self._values = _Plot(), _Cells(), _np.zeros((0, 0))
        self.export_button = self.export_extras = None
        self.export_dir = ""
    def sizeHint(self): return _QSize(600, 480)  # a map's (its graphics view's): the window lays out as with maps
    def values(self): return self._values
    def set_data(self, values, *args, **kwargs): self._values = _np.asarray(values)
    def set_colorbar_shown(self, shown): return False
    def set_range_note(self, note): pass
    def set_highlight(self, *args): pass
    def set_selected(self, *args): pass
    def refresh_labels(self): pass

_pipeline.HeatmapWidget = EmptyMap
'''

NO_STYLE_SHEET = '''
import app.widgets.theme as _theme
_theme.style_sheet = lambda dark: ""
'''

NO_FONT_RULE = '''
import app.widgets.theme as _theme
from PySide6.QtWidgets import QApplication as _QApplication
_sheet = _theme.style_sheet
_theme.style_sheet = lambda dark: _sheet(dark).replace("QWidget { font-size: 10pt; }", "")
_font = _QApplication.font()
_font.setPointSizeF(10.0)
_QApplication.setFont(_font)
'''

VARIANTS = {"ours": "", "no maps": EMPTY_MAPS, "no style sheet": NO_STYLE_SHEET,
            "no maps, no style sheet": EMPTY_MAPS + NO_STYLE_SHEET, "no global font rule": NO_FONT_RULE}
ANCHOR = "app = make_application()\n"


def variant_code(patch: str) -> str:
    """``bench_gui_edit.LAUNCH_CODE`` with ``patch`` run right after the QApplication is made."""
    assert ANCHOR in bench.LAUNCH_CODE
    return bench.LAUNCH_CODE.replace(ANCHOR, ANCHOR + patch, 1)


def measure(runs: int, variants: list[str] | None = None) -> dict[str, float]:
    """Median seconds to the first frame of each variant (default: all) and of the bare window, alternating run by
    run."""
    bench.compile_app_bytecode()
    chosen = {name: VARIANTS[name] for name in (variants or list(VARIANTS))}
    codes = {name: variant_code(patch) for name, patch in chosen.items()} | {"bare window": bench.BARE_CODE}
    times: dict[str, list[float]] = {name: [] for name in codes}
    with tempfile.TemporaryDirectory() as tmp:
        for name, code in codes.items():  # one warm-up each: the disk cache warm for all
            bench._launch_once(code, Path(tmp) / f"warm-{len(times[name])}-{abs(hash(name))}.ini")
        for n in range(runs):
            for name, code in codes.items():
                seconds, _rest = bench._launch_once(code, Path(tmp) / f"{n}-{abs(hash(name))}.ini")
                times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                    help="measure only these (the bare window always)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    medians = measure(args.runs, args.variants)
    bare = medians["bare window"]
    print(f"launch -> first frame, median of {args.runs} alternating runs each (1-min load {load:.2f} at the start)")
    for name, seconds in medians.items():
        print(f"  {name:<26} {seconds:.3f} s   ratio to the bare window {seconds / bare:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
