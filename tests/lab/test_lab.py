"""The Lab: its Qt-free model (ThreadRunner) and its tab in the real window (QtRunner): choices refused with a
reason, a run drawn live with slopes that match an independent fit, hover, Cancel honoured at the next call, exports,
theme, and the window's close stopping a running measurement."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hang_guard import HANG_GUARD_S, wait_until
from qt_settle import settled

from app.lab.model import ScalingLab
from attention_core.scaling import measure as scaling
from attention_core.scaling.results import ScalingConfig

HANG_GUARD_MS = int(HANG_GUARD_S * 1000)
TINY = ScalingConfig(max_n=64, min_n=16, repeat=2, heads=1, d=8, impls=("naive-numpy", "naive-torch"), threads=1)


def _slope(ns, vs):
    ns, vs = np.asarray(ns, float), np.asarray(vs, float)
    k = max(0, min(len(ns) // 2, len(ns) - 2))
    return float(np.polyfit(np.log(ns[k:]), np.log(vs[k:]), 1)[0])


def _slow_calls(monkeypatch, seconds=0.05) -> list[str]:
    """Each measured call sleeps ``seconds`` and notes "call" in the list returned; a test notes its own actions in
    it too, so the calls started after a cancel can be counted."""
    log: list[str] = []

    def call() -> None:
        log.append("call")
        time.sleep(seconds)

    monkeypatch.setattr(scaling, "_callable", lambda impl, dev, cfg, n: call)
    return log


def _calls_after(log: list[str], mark: str) -> int:
    return log[log.index(mark):].count("call")


def test_model_runs_and_derives_what_the_views_show():
    lab = ScalingLab(config=TINY)
    seen: list[str] = []
    lab.events.run_state.connect(seen.append)
    points = []
    lab.events.point.connect(points.append)
    assert lab.start() and not lab.start()  # a second Run while running is refused
    assert lab.wait_idle(60)
    assert seen == ["running", "finished"] and lab.run_state == "finished"
    assert lab.done == lab.total == TINY.total_items == len(points)
    for key in lab.series_keys():
        ns, secs = lab.series_points(key)
        assert ns == [16, 32, 64]
        assert secs == [p.seconds for p in lab.run.series()[key]]
        assert lab.legend(key) == f"{key[1]} · {key[0]}: slope {_slope(ns, secs):.2f}"
    mem = lab.legend(("cpu", "naive-numpy"), "peak_mib")
    assert mem.endswith("(tracemalloc)")
    assert lab.readouts == lab.run.readouts() and lab.readouts[0].startswith("at n = 64 the weights matrix alone")
    rx, ry = lab.reference_line()
    top = max((lab.series_points(k)[1][-1], k) for k in lab.series_keys())[0]
    assert rx == [16, 32, 64] and ry[-1] == pytest.approx(top) and ry[0] == pytest.approx(top / 16)
    assert lab.status.startswith("Done: 6 points measured")


def test_model_refuses_bad_choices_and_says_why():
    lab = ScalingLab(devices=["cpu"])
    before = lab.config
    for changes, word in (({"impls": []}, "at least one implementation"), ({"devices": ["cuda:0"]}, "not available"),
                          ({"heads": 0}, "heads"), ({"max_n": 4}, "max_n")):
        with pytest.raises(ValueError, match=word):
            lab.set_choice(**changes)
        assert lab.config == before
    lab.set_choice(dtype="float16")
    assert any("CUDA only" in r for r in lab.refusals())
    lab.set_available_devices(["cpu", "cuda:0"])
    lab.set_choice(devices=["cpu", "cuda:0"])
    lab.set_available_devices(["cpu"])  # the GPU went away: dropped from the choice
    assert lab.config.devices == ("cpu",)


def test_model_cancel_is_honoured_at_the_next_call(monkeypatch):
    """Cancel says "cancelling" at once and the run stops at the next check: at most the call in flight runs after
    it, not the rest of the ~6 s of calls. (How soon on this machine: benchmarks/bench_responsiveness.py.)"""
    log = _slow_calls(monkeypatch)
    lab = ScalingLab(config=ScalingConfig(max_n=32, min_n=16, repeat=60, impls=("naive-torch",),
                                          matmul_limit=False))  # ~6 s of calls
    lab.start()
    wait_until(lambda: "call" in log, "the first measured call")
    log.append("cancel")
    lab.cancel()
    assert lab.run_state == "cancelling"
    assert lab.wait_idle(HANG_GUARD_S)
    assert lab.run_state == "cancelled" and _calls_after(log, "cancel") <= 1, log[-5:]
    assert "Cancelled" in lab.status and lab.run.cancelled


def test_lab_tab_runs_plots_hovers_exports(window, qtbot, tmp_path):
    from PySide6.QtCore import QPointF

    host = window.lab
    tab = host.show()
    assert window.tabs.tabText(window.tabs.currentIndex()) == "Lab"
    c = tab.controls
    # refusing the last implementation: the box is checked again and the reason shows next to the choices
    host.model.set_choice(impls=["naive-numpy"])
    c.impl_checks["naive-numpy"].setChecked(False)
    assert c.impl_checks["naive-numpy"].isChecked()
    assert c.error_label.isVisible() and "at least one implementation" in c.error_label.text()
    c.dtype_combo.setCurrentText("float16")
    assert c.note_label.isVisible() and "naive-numpy on cpu" in c.note_label.text()
    c.dtype_combo.setCurrentText("float32")
    host.model.set_choice(**{k: getattr(TINY, k) for k in ("max_n", "repeat", "heads", "d", "impls", "threads")})
    assert c.impl_checks["naive-torch"].isChecked() and c.max_n_combo.currentData() == 64
    c.run_button.click()
    assert not c.run_button.isEnabled() and c.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: host.model.run_state == "finished", timeout=60000)
    settled(qtbot, c.window())  # the plots redraw on a timer (250 ms)
    lab = host.model
    for key in lab.series_keys():
        ns, secs = lab.series_points(key)
        x, y = tab.plots.curve_data("seconds", *key)
        assert list(x) == ns and list(y) == secs
        assert f"{key[1]} · {key[0]}: slope {_slope(ns, secs):.2f}" in tab.plots.legend_texts("seconds")
    assert c.progress.value() == c.progress.maximum() == TINY.total_items
    assert tab.readouts_label.text().count("•") == len(lab.readouts)
    ns, secs = lab.series_points(("cpu", "naive-torch"))
    text = tab.plots.show_nearest("seconds", QPointF(math.log10(ns[-1]), math.log10(secs[-1])))
    assert text == f"naive-torch · cpu\nn = 64: {secs[-1] * 1e3:.4g} ms"
    assert tab.plots.show_nearest("seconds", QPointF(9.0, 9.0)) == ""  # far from every point
    for suffix in ("png", "svg"):
        title = tab.export_plots(tmp_path / f"lab.{suffix}")
        assert (tmp_path / f"lab.{suffix}").stat().st_size > 1000 and "batch 1 · 1 heads · d = 8" in title
    svg = (tmp_path / "lab.svg").read_text()
    assert "Attention cost against sequence length n" in svg
    bg = tab.plots.graphics.backgroundBrush().color().name()
    window.set_theme("dark", save=False)
    assert tab.plots.graphics.backgroundBrush().color().name() != bg
    assert "Lab: Done" in window.statusBar().currentMessage()


def test_lab_cancel_button_and_close_stop_the_worker(window, qtbot, monkeypatch):
    """Cancel, and closing the window, stop a run at its next check: at most the call in flight runs after either,
    and the worker has ended when ``close`` returns."""
    log = _slow_calls(monkeypatch)
    host = window.lab
    tab = host.show()
    host.model.set_choice(max_n=32, repeat=60, impls=["naive-torch"])
    tab.controls.run_button.click()
    qtbot.waitUntil(lambda: host.model.done >= 1, timeout=HANG_GUARD_MS)  # the matmul limit arrived
    log.append("cancel")
    tab.controls.cancel_button.click()
    qtbot.waitUntil(lambda: host.model.run_state == "cancelled", timeout=HANG_GUARD_MS)
    assert _calls_after(log, "cancel") <= 1, log[-5:]
    assert tab.controls.run_button.isEnabled() and not tab.controls.cancel_button.isEnabled()
    # closing the window while a run is in flight stops it and waits for its worker
    log.append("run again")
    tab.controls.run_button.click()
    qtbot.waitUntil(lambda: "call" in log[log.index("run again"):], timeout=HANG_GUARD_MS)  # a point is in flight
    log.append("close")
    window.close()
    assert host.model.run.cancelled
    handle_done = host.model._handle is None or not host.model._handle.is_alive()
    assert handle_done and _calls_after(log, "close") <= 1, log[-5:]
