"""The training panel, driven like a user would (offscreen): real short trainings on the worker thread."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from app.training_panel import TrainingPanel
from attention_core.analysis import greedy_reverse, probe_attention
from attention_core.training import TrainConfig

TIMEOUT_MS = 60_000


@pytest.fixture
def panel(qtbot):
    TrainingPanel.preview_untrained = False  # each test controls its runs
    p = TrainingPanel()
    qtbot.addWidget(p)
    p.resize(1280, 760)
    p.show()
    p.set_speed(None)  # as fast as possible
    yield p
    p.shutdown()
    TrainingPanel.preview_untrained = True


def configure(panel: TrainingPanel, **kw) -> TrainConfig:
    cfg = TrainConfig(**kw)
    panel.form.set_config(cfg)
    assert panel.form.config() == cfg
    return cfg


def train(panel: TrainingPanel, qtbot, **kw) -> None:
    configure(panel, **kw)
    with qtbot.waitSignal(panel.runFinished, timeout=TIMEOUT_MS) as blocker:
        panel.start()
    assert blocker.args == ["finished"], panel.last_error
    panel._redraw(force=True)


def assert_grid_shows(panel: TrainingPanel, weights: list[np.ndarray]) -> None:
    layers, heads = panel.head_grid.shape
    assert (layers, heads) == (len(weights), weights[0].shape[0])
    for li in range(layers):
        for h in range(heads):
            np.testing.assert_array_equal(panel.head_grid.values(li, h), weights[li][h])


def test_short_training_accuracy_rises_and_grid_equals_model(panel, qtbot):
    train(panel, qtbot, steps=30)
    trainer = panel.trainer
    hist = panel.history
    assert [s.step for s in hist] == list(range(31)), "a snapshot for every step, step 0 = untrained"
    first, last = hist[0].report, hist[-1].report
    assert last.sequence_accuracy > first.sequence_accuracy + 0.5
    assert last.reversal_accuracy > first.reversal_accuracy + 0.5
    assert last.sequence_accuracy >= 0.9
    # the grid shows exactly the model's attention for the probe at the latest step
    assert panel.cursor.follow_live and panel.shown_snapshot().step == 30
    expected = probe_attention(trainer.model, trainer.probe, causal=True)
    assert_grid_shows(panel, expected)
    assert panel.head_grid.labels() == ["SEP" if t == 1 else str(t) for t in trainer.probe[:-1].tolist()]
    # the plots hold every step and every evaluation
    x, y = panel.plots.data("sequence_accuracy")
    assert x[0] == 0 and x[-1] == 30 and y[-1] == pytest.approx(last.sequence_accuracy)
    assert len(panel.plots.data("train_accuracy")[0]) == 31
    assert panel.progress.value() == 30 and panel.progress.maximum() == 30
    assert panel.run is None, "the worker thread is gone once training finished"
    assert panel.goal_step is None or panel.goal_step <= 30


def test_pause_really_pauses_step_advances_one_and_stop_ends_thread(panel, qtbot):
    configure(panel, steps=2000)
    panel.start()
    qtbot.waitUntil(lambda: len(panel.history) >= 4, timeout=TIMEOUT_MS)
    panel.pause()
    assert panel.is_paused()
    steps = panel.trainer.step_count
    qtbot.wait(150)  # let already-queued snapshots arrive
    recorded = len(panel.history)
    qtbot.wait(500)
    assert panel.trainer.step_count == steps, "no step while paused"
    assert len(panel.history) == recorded
    assert panel.history.latest.step == steps

    # ablation is refused while a run could step, allowed while paused
    panel.step()
    qtbot.waitUntil(lambda: panel.history.latest.step == steps + 1, timeout=TIMEOUT_MS)
    qtbot.wait(400)
    assert panel.trainer.step_count == steps + 1, "Step trains exactly one batch"
    assert panel.is_paused()

    panel.resume()
    qtbot.waitUntil(lambda: panel.history.latest.step >= steps + 4, timeout=TIMEOUT_MS)
    panel.toggle_head(0, 0)
    assert "pause" in panel.status_label.text().lower()
    assert panel.trainer.model.disabled_heads() == []

    run = panel.run
    assert run is not None and run.thread.isRunning()
    with qtbot.waitSignal(panel.runFinished, timeout=TIMEOUT_MS) as blocker:
        panel.stop()
    assert blocker.args == ["stopped"]
    assert run.thread.isFinished(), "stop ends the worker thread"
    assert panel.run is None
    stopped_at = panel.trainer.step_count
    assert stopped_at < 2000
    qtbot.wait(300)
    assert panel.trainer.step_count == stopped_at


def test_scrubbing_shows_recorded_snapshots_and_compares_with_start(panel, qtbot):
    train(panel, qtbot, steps=12)
    trainer = panel.trainer
    for k in (0, 3, 7, 12):
        panel.timeline.setValue(k)  # as the user drags the slider
        assert panel.shown_index() == k
        assert not panel.cursor.follow_live
        assert_grid_shows(panel, trainer.history[k].probe_weights)
        assert f"step {k}" in panel.timeline_label.text()
        assert panel.plots.cursor_lines[0].value() == k
    # comparison table: step 0 (untrained) vs. the shown step
    panel.tabs.setCurrentWidget(panel.compare)
    panel.seek(12)
    rows = panel.compare.rows
    assert len(rows) == 2 * 4
    snap0, snap12 = panel.history[0], panel.history[12]
    r = rows[5]  # layer 2, head 2
    assert (r.layer, r.head) == (1, 1)
    assert r.entropy_before == pytest.approx(snap0.entropy[1, 1])
    assert r.entropy_after == pytest.approx(snap12.entropy[1, 1])
    assert r.focus_change == pytest.approx(snap12.focus[1, 1] - snap0.focus[1, 1])
    assert panel.compare.table.item(5, 0).text() == "L2 H2"
    # back to live, and a replay moves through the recorded steps
    panel.go_live()
    assert panel.shown_index() == 12
    panel.set_speed(20.0)
    panel.seek(0)
    panel.replay()
    qtbot.waitUntil(lambda: panel.shown_index() >= 3, timeout=5000)
    assert panel.cursor.playing or panel.shown_index() == 12


def test_ablating_a_head_changes_output_and_restores_bit_for_bit(panel, qtbot):
    from PySide6.QtCore import QPoint, Qt

    train(panel, qtbot, steps=30)
    trainer = panel.trainer
    model = trainer.model
    x = trainer.test_data[:64, :-1]
    mask = torch.tril(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool))
    with torch.no_grad():
        before = model(x, mask)[0].clone()
    gen_before = greedy_reverse(model, trainer.test_data[:, :6])

    # click on the map of layer 2, head 1 in the grid
    grid = panel.head_grid
    vb = grid.map_item(1, 0).getViewBox()
    scene_pt = vb.sceneBoundingRect().center()
    view_pt = grid.graphics.mapFromScene(scene_pt)
    qtbot.mouseClick(grid.graphics.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(view_pt.x(), view_pt.y()))
    assert model.disabled_heads() == [(1, 0)]
    with torch.no_grad():
        ablated = model(x, mask)[0].clone()
    assert not torch.equal(before, ablated), "switching a head off changes the output"
    assert "layer 2 head 1" in panel.ablation.result.text()
    assert panel.tabs.currentWidget() is panel.ablation

    # a copying head matters: switching off every layer-2 head breaks the reversal
    for h in (1, 2, 3):
        panel.toggle_head(1, h)
    assert not torch.equal(greedy_reverse(model, trainer.test_data[:, :6]), gen_before)

    panel.restore_heads()
    assert model.disabled_heads() == []
    with torch.no_grad():
        restored = model(x, mask)[0]
    assert torch.equal(before, restored), "switching back restores the model bit for bit"
    assert torch.equal(greedy_reverse(model, trainer.test_data[:, :6]), gen_before)

    # clicking the same head twice is a round trip too
    panel.toggle_head(0, 2)
    panel.toggle_head(0, 2)
    with torch.no_grad():
        assert torch.equal(before, model(x, mask)[0])


def test_save_load_gives_identical_predictions_and_bad_files_are_refused(panel, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox
    from safetensors.torch import save_file

    train(panel, qtbot, steps=20)
    trainer = panel.trainer
    inputs = trainer.test_data[:, :6]
    preds = greedy_reverse(trainer.model, inputs)
    path = tmp_path / "model.safetensors"
    panel.save_model(path)
    assert path.stat().st_size > 0
    import json

    sidecar = json.loads((tmp_path / "model.json").read_text())
    assert sidecar["train_config"] == trainer.config.to_dict() and sidecar["step"] == 20
    assert sidecar["model_config"]["num_heads"] == 4

    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a, **k: warnings.append(text))

    bad = tmp_path / "broken.safetensors"
    bad.write_bytes(b"\x00garbage, not a model" * 10)
    assert panel.load_model(bad) is False
    assert len(warnings) == 1 and "not a safetensors file" in warnings[0]
    foreign = tmp_path / "foreign.safetensors"
    save_file({"weight": torch.zeros(3)}, str(foreign))
    assert panel.load_model(foreign) is False
    assert "not an Attention Playground model" in warnings[1]
    assert panel.trainer is trainer, "a refused file leaves the current model alone"

    assert panel.load_model(path) is True
    qtbot.waitUntil(lambda: panel.trainer is not None and panel.trainer is not trainer, timeout=TIMEOUT_MS)
    loaded = panel.trainer
    assert torch.equal(greedy_reverse(loaded.model, inputs), preds), "save -> load gives identical predictions"
    assert loaded.step_count == 20
    assert panel.form.config().to_dict() == {**trainer.config.to_dict(), "steps": loaded.config.steps}
    assert [s.step for s in panel.history] == [0, 20]
    np.testing.assert_array_equal(panel.history[0].probe_weights[0], trainer.history[0].probe_weights[0])
    assert panel.history[1].report.sequence_accuracy == pytest.approx(trainer.history[-1].sequence_accuracy)
    assert warnings[2:] == []


def test_invalid_settings_are_refused_in_the_form(panel):
    configure(panel, steps=5)
    panel.form.d_model.setValue(30)  # 30 is not divisible by 4 heads
    assert panel.form.config() is None
    assert "divisible" in panel.form.error()
    assert panel.form.error_label.isVisibleTo(panel) and "Cannot train" in panel.form.error_label.text()
    assert not panel.start_button.isEnabled()
    panel.start()
    assert panel.run is None and panel.trainer is None
    panel.form.num_heads.setValue(5)
    assert panel.form.config() is not None and panel.start_button.isEnabled()
    panel.form.vocab_size.setValue(3)
    panel.form.seq_len.setValue(16)
    assert panel.form.config() is not None  # 3 tokens: PAD, SEP and one real token is still trainable


def test_without_the_causal_mask_the_answer_leaks(panel, qtbot):
    configure(panel, steps=30, causal=False)
    assert panel.form.causal_note.isVisibleTo(panel)
    with qtbot.waitSignal(panel.runFinished, timeout=TIMEOUT_MS):
        panel.start()
    last = panel.history.latest.report
    assert last.reversal_accuracy >= 0.95, "teacher-forced accuracy climbs: the answer is visible"
    assert last.sequence_accuracy <= last.reversal_accuracy - 0.15, "greedy generation falls short"
    panel._redraw(force=True)
    weights = [panel.head_grid.values(li, h) for li in range(2) for h in range(4)]
    above = max(float(np.triu(w, 1).sum(axis=1).mean()) for w in weights)
    assert above > 0.2, "the maps show weight above the diagonal: looking at future tokens"
    assert "no causal mask" in panel.title_label.text()


def test_try_it_reverses_greedily_and_shows_attention_per_step(panel, qtbot):
    train(panel, qtbot, steps=30)
    panel.tryit.input.setText("3 7 2 9 4 5")
    panel.tryit.run_button.click()
    r = panel.tryit.result
    expected = greedy_reverse(panel.trainer.model, torch.tensor([[3, 7, 2, 9, 4, 5]]))[0].tolist()
    assert list(r.generated) == expected
    li, h = panel.tryit.selected_head()
    vals, blocked = r.matrix(li, h)
    np.testing.assert_array_equal(panel.tryit.heatmap.values(), vals)
    # output step p saw positions 0..L+p only
    assert blocked[0].tolist() == [False] * 7 + [True] * 5
    np.testing.assert_allclose(vals.sum(axis=1), 1.0, atol=1e-6)
    panel.tryit.input.setText("3 7 2")
    panel.tryit.run_button.click()
    assert "exactly 6 tokens" in panel.tryit.result_label.text()


def test_probe_can_be_typed_and_exports_write_files(panel, qtbot, tmp_path):
    train(panel, qtbot, steps=6)
    assert panel.set_probe_text("2 3 4 5 6 7")
    trainer = panel.trainer
    assert trainer.probe.tolist() == [2, 3, 4, 5, 6, 7, 1, 7, 6, 5, 4, 3, 2]
    assert panel.head_grid.labels() == ["2", "3", "4", "5", "6", "7", "SEP", "7", "6", "5", "4", "3"]
    assert_grid_shows(panel, probe_attention(trainer.model, trainer.probe))
    assert not panel.set_probe_text("1 2 3 4 5 6")  # SEP is not an input token
    assert panel.probe_error.isVisibleTo(panel)

    grid_png, grid_svg = tmp_path / "grid.png", tmp_path / "grid.svg"
    panel.export_grid(grid_png)
    panel.export_grid(grid_svg)
    assert grid_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and grid_png.stat().st_size > 5000
    assert b"<svg" in grid_svg.read_bytes()[:2000]
    head_csv = tmp_path / "head.csv"
    panel.export_head(1, 2, head_csv)
    rows = head_csv.read_text().splitlines()
    assert len(rows) == 13 and rows[1].startswith("2,")
    head_png = tmp_path / "head.png"
    panel.export_head(1, 2, head_png)
    assert head_png.stat().st_size > 1000
    hist_csv = tmp_path / "history.csv"
    panel.export_history_csv(hist_csv)
    lines = hist_csv.read_text().splitlines()
    assert lines[0].startswith("step,epoch,loss") and len(lines) == 1 + 7

    written = panel.self_test(tmp_path / "self-test")
    assert [p.name for p in written] == ["training-grid.png", "training-plots.png", "training-panel.png"]
    assert all(p.stat().st_size > 1000 for p in written)


def test_playback_speed_throttles_training(panel, qtbot):
    configure(panel, steps=2000)
    panel.set_speed(5.0)
    panel.start()
    qtbot.waitUntil(lambda: len(panel.history) >= 2, timeout=TIMEOUT_MS)
    first = panel.history.latest.step
    qtbot.wait(1000)
    advanced = panel.history.latest.step - first
    assert advanced <= 7, f"5 steps/s for 1 s advanced {advanced} steps"  # throttled (a busy CI may do fewer)
    panel.set_speed(None)
    qtbot.waitUntil(lambda: panel.history.latest.step - first >= advanced + 10, timeout=TIMEOUT_MS)
    panel.stop()


def test_the_untrained_model_is_shown_before_anything_is_pressed(qtbot):
    p = TrainingPanel()
    qtbot.addWidget(p)
    p.show()
    try:
        qtbot.waitUntil(lambda: len(p.history) == 1, timeout=TIMEOUT_MS)
        assert p.is_paused() and p.trainer.step_count == 0
        p._redraw(force=True)
        assert_grid_shows(p, p.trainer.history[0].probe_weights)
        assert "untrained" in p.status_label.text()
        assert p.start_button.isEnabled() and p.start_button.text() == "▶ Start"
        assert not p.pause_button.isEnabled()
        p.set_speed(None)
        p.start()
        qtbot.waitUntil(lambda: len(p.history) >= 3, timeout=TIMEOUT_MS)
        assert p.history[0] is not None and p.trainer.step_count >= 2, "Start trains the previewed model"
    finally:
        p.shutdown()
