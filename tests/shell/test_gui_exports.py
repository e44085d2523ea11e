"""Exports from the real window (offscreen): an Export button on every panel, titles with context, the pipeline
figure, and the training timeline as a GIF with progress, Cancel and a window that keeps answering."""

from __future__ import annotations

import time

import pytest
from PIL import Image
from PySide6.QtCore import QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QFileDialog

from app.playground.qt.pipeline import STEPS


def answer_dialog(monkeypatch, path) -> None:
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(path), "")))


def png_title(path) -> str:
    return QImage(str(path)).text("Title")


def trigger(button, fmt_or_text: str) -> None:
    menu = button.refill()
    act = next(a for a in menu.actions() if a.data() == fmt_or_text or fmt_or_text in a.text())
    assert act.isEnabled()
    act.trigger()


def test_every_step_map_has_an_export_button_with_context(window, qtbot, monkeypatch, tmp_path):
    window.edits.apply("mask", lambda m: m.set_mask("causal"))
    window.edits.apply("scale", lambda m: m.set_scale(1.0))
    for name in STEPS:
        hm = window.pipeline.heatmaps[name]
        assert hm.export_button is not None and hm.export_button.isVisible()
        assert hm.export_button.geometry().right() <= hm.width()  # in the map's corner, not outside it
        out = tmp_path / f"{name}.png"
        answer_dialog(monkeypatch, out)
        trigger(hm.export_button, "png")
        title = png_title(out)
        assert "preset cat-sat-mat" in title and "causal mask" in title and "scale 1 (unscaled)" in title, title
    assert "softmax(scaled)" not in png_title(tmp_path / "weights.png")
    assert png_title(tmp_path / "scaled.png").startswith("Scores Q·Kᵀ × 1 (unscaled)")
    # an edited matrix: "edited", not the preset's name
    name = window.playground.state.matrix_names()[0]
    window.edits.apply("cell", lambda m: m.set_cell(name, 0, 0, 3.0))
    out = tmp_path / "scores.pdf"
    answer_dialog(monkeypatch, out)
    trigger(window.pipeline.heatmaps["scores"].export_button, "pdf")
    assert out.read_bytes().startswith(b"%PDF")


def test_multihead_maps_export_with_context(window, qtbot, monkeypatch, tmp_path):
    window.playground.set_heads(2)
    window.view_tabs.setCurrentWidget(window.multihead)
    qtbot.waitUntil(lambda: len(window.multihead.head_maps) == 2)
    out = tmp_path / "head.png"
    answer_dialog(monkeypatch, out)
    trigger(window.multihead.head_maps[1].export_button, "png")
    assert png_title(out).startswith("head 2: weights — preset cat-sat-mat")


def test_file_menu_exports_the_pipeline_figure(window, monkeypatch, tmp_path):
    out = tmp_path / "pipeline.svg"
    answer_dialog(monkeypatch, out)
    window.export_pipeline_action.trigger()
    text = out.read_text(encoding="utf-8")
    assert "<title>Attention, step by step" in text and "preset cat-sat-mat" in text


# ---------------------------------------------------------------------------------------------------- training
@pytest.fixture
def trained(finish_run):
    from attention_core.tiny.config import TrainConfig

    return finish_run(TrainConfig(steps=8))


def test_training_grid_plots_and_head_export_with_step_task_and_accuracy(trained, monkeypatch, tmp_path):
    p = trained
    s = p.session
    step = s.shown_snapshot.step
    out = tmp_path / "grid.png"
    answer_dialog(monkeypatch, out)
    trigger(p.exports.grid_button, "png")  # the button on the grid itself
    title = png_title(out)
    assert f"step {step} / {s.total_steps}" in title and "reversal task" in title and "accuracy" in title, title
    assert QImage(str(out)).width() >= 1000  # a real figure (2x), not an empty grab
    out = tmp_path / "curves.png"
    answer_dialog(monkeypatch, out)
    trigger(p.exports.plots_button, "png")
    assert png_title(out).startswith("Training curves") and f"step {step}" in png_title(out)
    out = tmp_path / "head.csv"
    p.export_head(0, 1, out)
    rows = [ln for ln in out.read_text().splitlines() if not ln.startswith("#")]  # '#' lines: setting, labels
    assert len(rows) == len(s.shown_snapshot.labels)
    out = tmp_path / "tryit.png"
    p.export_head(0, 0, tmp_path / "head.png")
    assert "layer 1 · head 1" in png_title(tmp_path / "head.png").lower() and f"step {step}" in png_title(
        tmp_path / "head.png")


def test_timeline_gif_from_the_gui_has_one_frame_per_step_and_the_window_answers(trained, qtbot, tmp_path):
    p = trained
    n = len(p.session.history)
    handled: list[int] = []
    progress: list[int] = []

    def on_progress(done: int, _total: int) -> None:
        progress.append(done)
        if done == 1:  # an event posted during the export is handled before it ends
            QTimer.singleShot(0, lambda: handled.append(len(progress)))

    original_run = __import__("app.training.qt.film_export", fromlist=["TimelineExport"]).TimelineExport.run

    def run_and_watch(self):
        self.progressed.connect(on_progress)
        return original_run(self)

    import app.training.qt.film_export as te

    te.TimelineExport.run = run_and_watch
    try:
        out = tmp_path / "film.gif"
        t0 = time.perf_counter()
        assert p.export_timeline(out) == out
        elapsed = time.perf_counter() - t0
    finally:
        te.TimelineExport.run = original_run
    with Image.open(out) as im:
        assert im.n_frames == n
    assert progress == list(range(1, n + 1))
    assert handled and handled[0] < n, (handled, n)  # handled while frames were still being rendered
    print(f"GIF of {n} frames from the GUI in {elapsed:.2f} s")


def test_cancelling_the_timeline_leaves_no_file_and_keeps_the_old_one(trained, qtbot, tmp_path):
    import app.training.qt.film_export as te

    p = trained
    out = tmp_path / "film.gif"
    out.write_bytes(b"previous film")
    original_run = te.TimelineExport.run

    def run_and_cancel(self):
        self.progressed.connect(lambda done, _t: self.cancel() if done == 3 else None)
        return original_run(self)

    te.TimelineExport.run = run_and_cancel
    try:
        assert p.export_timeline(out) is None
        assert p.export_timeline(tmp_path / "new.mp4") is None
    finally:
        te.TimelineExport.run = original_run
    assert out.read_bytes() == b"previous film"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["film.gif"]  # no temporary or partial file
