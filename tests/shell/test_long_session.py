"""The long-session benchmark cut down for CI (issue "Reliability campaign", item 5): thousands of mixed edits
through the undo stack and full training runs in one window, then nothing may have piled up. The full figures
(20,000 edits, 20 runs) come from ``benchmarks/bench_long_session.py``, and so does the edit → repaint time after
the session against a fresh window's (a time: judged there, with the load average, never in a test)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from app.playground.qt.commands import UNDO_LIMIT

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load_bench():  # noqa: ANN201
    sys.path.insert(0, str(BENCH))  # bench_long_session imports bench_gui_edit from its folder
    spec = importlib.util.spec_from_file_location("bench_long_session", BENCH / "bench_long_session.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_a_long_session_piles_nothing_up(qapp, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    bench = load_bench()
    from attention_core.tiny.config import TrainConfig

    w = bench.open_window(tmp_path)
    try:
        fig = bench.long_session(w, edits=2000, runs=2, config=TrainConfig(**bench.SMALL_RUN), warm_edits=1200,
                                 repaint_edits=0)
    finally:
        w.close()
    assert fig["edits"] == 2000 and fig["recorded_steps"] == 2 * 31  # each run really trained to its end
    assert fig["undo_limit"] == UNDO_LIMIT and fig["undo_steps_held"] <= UNDO_LIMIT  # history is bounded
    assert fig["qt_objects_end"] <= fig["qt_objects_start"], fig
    assert fig["rss_growth_mb"] < bench.TARGET_RSS_MB, fig


def test_the_undo_stack_keeps_at_most_its_limit(window) -> None:
    stack = window.undo_stack
    assert stack.undoLimit() == UNDO_LIMIT
    for n in range(UNDO_LIMIT + 25):
        assert window.edits.set_cell("Q", n % 3, n % 4, 0.001 * (n + 1))  # a new value each time: one step each
    assert stack.count() == UNDO_LIMIT
    while stack.canUndo():
        stack.undo()
    assert stack.index() == 0  # the oldest steps were dropped, the newest UNDO_LIMIT can all be undone
