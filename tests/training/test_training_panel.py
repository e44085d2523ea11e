"""The Training tab of the real window, driven like a user would (offscreen): real short trainings on the
window's ``QtRunner``. Every number on screen is checked against ``attention_core`` run on a model rebuilt from
the recorded parameters (``model_from_params``), never against the value the view was given."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPoint, Qt, QThreadPool
from qt_settle import caught_up, settled

from app.training.model.tools import model_from_params
from app.training.qt.panel import TrainingPanel
from attention_core.masks import causal_mask
from attention_core.metrics import attention_entropy, focus_score
from attention_core.tiny.analysis import greedy_reverse, probe_attention, reversal_accuracy, sequence_accuracy
from attention_core.tiny.config import TrainConfig
from tests.tolerance import assert_close

TIMEOUT_MS = 60_000
ENDED = ("finished", "stopped", "error")


# ---------------------------------------------------------------------------------------------------- helpers
def configure(panel: TrainingPanel, **kw) -> TrainConfig:
    """Type the settings into the form, as a user would; the session takes them."""
    cfg = TrainConfig(**kw)
    panel.form.set_config(cfg)
    assert panel.form.config() == cfg and panel.session.config == cfg
    return cfg


def click(qtbot, button) -> None:
    assert button.isEnabled(), f"{button.text()!r} is disabled"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def wait_ended(qtbot, session, expect: str = "finished") -> None:
    qtbot.waitUntil(lambda: session.run_state in ENDED, timeout=TIMEOUT_MS)
    assert session.run_state == expect, session.last_error


def settle(qtbot) -> None:
    """Let the throttled views (grid ~33 ms, plots ~150 ms) draw what the session holds."""
    caught_up(qtbot)


def train(panel: TrainingPanel, qtbot, **kw) -> TrainConfig:
    """Set up, press Start, wait for the end of the run, let the views draw."""
    cfg = configure(panel, **kw)
    click(qtbot, panel.run_controls.start_button)
    wait_ended(qtbot, panel.session)
    settle(qtbot)
    return cfg


def rebuilt(session, index: int = -1):
    """An independent copy of the model recorded at snapshot ``index``."""
    snap = session.history[index]
    assert snap.params is not None
    return model_from_params(session.model_config, snap.params)


def token_labels(tokens) -> list[str]:
    return ["SEP" if int(t) == 1 else str(int(t)) for t in tokens]


def assert_grid_shows(panel: TrainingPanel, weights, exact: bool = True) -> None:
    layers, heads = panel.head_grid.shape
    assert (layers, heads) == (len(weights), weights[0].shape[0])
    for li in range(layers):
        for h in range(heads):
            if exact:
                np.testing.assert_array_equal(panel.head_grid.values(li, h), weights[li][h])
            else:
                assert_close(panel.head_grid.values(li, h), weights[li][h])


def click_head(qtbot, panel: TrainingPanel, layer: int, head: int) -> None:
    """A real mouse click in the middle of one head's map."""
    grid = panel.head_grid
    vb = grid.map_item(layer, head).getViewBox()
    view_pt = grid.graphics.mapFromScene(vb.sceneBoundingRect().center())
    qtbot.mouseClick(grid.graphics.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(view_pt.x(), view_pt.y()))


def causal(n: int) -> torch.Tensor:
    return torch.as_tensor(causal_mask(n))


# ---------------------------------------------------------------------------------------------------- tests
def test_short_training_accuracy_rises_and_grid_equals_model(panel, qtbot):
    s = panel.session
    cfg = train(panel, qtbot, steps=30)
    trainer, hist = s.trainer, s.history
    assert [snap.step for snap in hist] == list(range(31)), "a snapshot for every step, step 0 = untrained"
    first, last = hist[0].report, hist[-1].report
    assert last.sequence_accuracy > first.sequence_accuracy + 0.5
    assert last.reversal_accuracy > first.reversal_accuracy + 0.5
    assert last.sequence_accuracy >= 0.9
    # the reported accuracies are the model's (measured again on the rebuilt model)
    model = rebuilt(s)
    assert sequence_accuracy(model, trainer.test_data, cfg.seq_len) == pytest.approx(last.sequence_accuracy)
    assert reversal_accuracy(model, trainer.test_data, cfg.seq_len) == pytest.approx(last.reversal_accuracy)
    # the grid shows exactly the model's attention for the probe at the latest step
    assert s.cursor.follow_live and s.shown_step == 30
    assert_grid_shows(panel, probe_attention(trainer.model, trainer.probe, causal=True))
    assert_grid_shows(panel, probe_attention(model, trainer.probe, causal=True))
    assert panel.head_grid.labels() == token_labels(trainer.probe[:-1].tolist())
    assert "Heads at step 30" in panel.heads.title_label.text()
    # the plots hold every step and every evaluation
    x, y = panel.plots.data("sequence_accuracy")
    assert x[0] == 0 and x[-1] == 30 and y[-1] == pytest.approx(last.sequence_accuracy)
    assert panel.plots.data("train_accuracy")[0].tolist() == list(range(31))
    rc = panel.run_controls
    assert rc.progress.value() == 30 and rc.progress.maximum() == 30
    assert "Finished: 30 steps" in panel.status_label.text() and f"{last.sequence_accuracy:.1%}" in s.status
    assert not s.is_alive, "the run's thread is gone once training finished"
    qtbot.waitUntil(lambda: QThreadPool.globalInstance().activeThreadCount() == 0, timeout=10_000)
    reached = [snap.step for snap in hist if snap.report.evaluated and snap.report.sequence_accuracy >= 0.99]
    assert s.goal_step == (reached[0] if reached else None)


def test_pause_really_pauses_step_advances_one_and_stop_ends_thread(panel, qtbot):
    s, rc = panel.session, panel.run_controls
    cfg = configure(panel, steps=2000)
    click(qtbot, rc.start_button)
    qtbot.waitUntil(lambda: len(s.history) >= 4, timeout=TIMEOUT_MS)
    assert rc.pause_button.text() == "Pause"
    click(qtbot, rc.pause_button)
    assert s.is_paused and s.run_state == "paused"
    qtbot.wait(300)  # a step already in flight arrives (nothing says a paused trainer's last step has landed)
    steps, recorded = s.trainer.step_count, len(s.history)
    assert s.history.latest.step == steps
    qtbot.wait(500)  # a wait for nothing to happen (no step while paused): no condition can end it sooner
    assert s.trainer.step_count == steps, "no step while paused"
    assert len(s.history) == recorded

    click(qtbot, rc.step_button)
    qtbot.waitUntil(lambda: s.history.latest.step == steps + 1, timeout=TIMEOUT_MS)
    qtbot.wait(400)  # a wait for nothing to happen (no second step): no condition can end it sooner
    assert s.trainer.step_count == steps + 1 and len(s.history) == recorded + 1, "Step trains exactly one batch"
    assert s.is_paused and rc.pause_button.text() == "Resume"
    # same seed = same initialisation and batches: steps + 1 batches on a fresh trainer give the same model
    from attention_core.tiny.training import ReversalTrainer

    ref = ReversalTrainer(cfg)
    for _ in range(steps + 1):
        ref.train_step()
    for name, value in ref.model.state_dict().items():
        assert_close(s.history.latest.params[name], value.numpy(), err_msg=name)

    click(qtbot, rc.pause_button)  # Resume
    qtbot.waitUntil(lambda: s.history.latest.step >= steps + 4, timeout=TIMEOUT_MS)
    panel.head_grid.headClicked.emit(0, 0)  # ablation is refused while the run trains
    assert "pause" in panel.status_label.text().lower()
    assert s.ablated == () and not panel.head_grid._disabled

    click(qtbot, rc.stop_button)  # returns once the thread has ended
    assert s.run_state == "stopped" and not s.is_alive
    stopped_at = s.trainer.step_count
    assert stopped_at < 2000 and s.history.latest.step == stopped_at
    qtbot.wait(300)  # a wait for nothing to happen (no step after Stop): no condition can end it sooner
    assert s.trainer.step_count == stopped_at
    qtbot.waitUntil(lambda: QThreadPool.globalInstance().activeThreadCount() == 0, timeout=10_000)
    assert not rc.stop_button.isEnabled() and rc.pause_button.text() == "Pause"


def test_scrubbing_shows_recorded_snapshots_and_compares_with_the_baseline(panel, qtbot):
    s = panel.session
    cfg = train(panel, qtbot, steps=12)
    probe = s.trainer.probe
    tl = panel.timeline
    for k in (0, 3, 7, 12):
        tl.slider.setValue(k)  # as the user drags the slider
        settle(qtbot)
        assert s.shown_index == k and not s.cursor.follow_live
        assert_grid_shows(panel, probe_attention(rebuilt(s, k), probe, cfg.causal), exact=False)
        assert f"step {k} /" in tl.label.text()
        assert f"Heads at step {k}</b>" in panel.heads.title_label.text()
        assert panel.plots.cursor_lines[0].value() == k
    # the comparison table: baseline (step 0, the untrained model) vs. the shown step
    panel.tabs.setCurrentWidget(panel.compare)
    tl.slider.setValue(12)
    settle(qtbot)
    L = cfg.seq_len

    def head_stats(index: int) -> tuple[np.ndarray, np.ndarray]:
        w = probe_attention(rebuilt(s, index), probe, cfg.causal)[1][1]  # layer 2, head 2
        dec = w[L:2 * L, :]
        return float(attention_entropy(dec).mean()), float(np.mean(focus_score(dec[None])))

    ent0, foc0 = head_stats(0)
    ent12, foc12 = head_stats(12)
    rows = panel.compare.rows
    assert len(rows) == 2 * 4
    r = rows[5]
    assert (r.layer, r.head) == (1, 1)
    assert r.entropy_before == pytest.approx(ent0, rel=1e-5)
    assert r.entropy_after == pytest.approx(ent12, rel=1e-5)
    assert r.focus_change == pytest.approx(foc12 - foc0, abs=1e-5)
    table = panel.compare.table
    assert table.item(5, 0).text() == "L2 H2"
    assert table.item(5, 2).text() == f"{ent0:.2f} → {ent12:.2f}"
    assert "step 0 → step 12" in panel.compare.caption.text()
    # another baseline: step 3 against step 12
    panel.compare.baseline.setValue(3)
    ent3, foc3 = head_stats(3)
    r = panel.compare.rows[5]
    assert r.entropy_before == pytest.approx(ent3, rel=1e-5) and r.focus_before == pytest.approx(foc3, rel=1e-5)
    assert table.item(5, 2).text() == f"{ent3:.2f} → {ent12:.2f}"
    assert "step 3 → step 12" in panel.compare.caption.text()
    # back to live, and a replay moves through the recorded steps
    click(qtbot, tl.start_step_button)
    assert s.shown_index == 0
    click(qtbot, tl.live_button)
    assert s.shown_index == 12 and s.cursor.follow_live
    rc = panel.run_controls
    rc.speed_combo.setCurrentIndex(rc.speed_combo.findText("20 steps/s"))
    assert s.speed == 20.0
    click(qtbot, tl.start_step_button)
    click(qtbot, tl.replay_button)
    qtbot.waitUntil(lambda: s.shown_index >= 3, timeout=5000)
    assert s.cursor.playing or s.shown_index == 12
    qtbot.waitUntil(lambda: s.shown_index == 12 and not s.cursor.playing, timeout=5000)
    settle(qtbot)
    assert tl.replay_button.text() == "▶ Replay"


def test_ablating_a_head_changes_output_and_restores_bit_for_bit(panel, qtbot):
    s = panel.session
    cfg = train(panel, qtbot, steps=30)
    trainer = s.trainer
    L = cfg.seq_len
    x = trainer.test_data[:64, :-1]
    inputs = trainer.test_data[:, :L]
    model = rebuilt(s)
    with torch.no_grad():
        before = model(x, causal(x.shape[1]))[0].clone()
        assert torch.equal(trainer.model(x, causal(x.shape[1]))[0], before), "the recorded step is the model"
    gen_before = greedy_reverse(model, inputs)

    click_head(qtbot, panel, 1, 0)
    assert s.ablated == ((1, 0),)
    assert panel.tabs.currentWidget() is panel.ablation
    settle(qtbot)
    assert panel.head_grid._disabled == {(1, 0)}
    one_off = rebuilt(s)
    one_off.set_head_enabled(1, 0, False)
    with torch.no_grad():
        ablated = one_off(x, causal(x.shape[1]))[0]
    assert not torch.equal(before, ablated), "switching a head off changes the output"
    a = s.ablation
    assert a.now_seq == pytest.approx(sequence_accuracy(one_off, trainer.test_data, L))
    assert a.now_tok == pytest.approx(reversal_accuracy(one_off, trainer.test_data, L))
    text = panel.ablation.result.text()
    assert "layer 2 head 1" in text and f"{a.now_seq:.1%}" in text and "model at step 30" in text
    assert "switched off" in panel.status_label.text()
    assert trainer.model.disabled_heads() == [], "the training model is never touched"

    # a copying head matters: switching off every layer-2 head breaks the reversal
    for h in (1, 2, 3):
        click_head(qtbot, panel, 1, h)
    assert s.ablated == ((1, 0), (1, 1), (1, 2), (1, 3))
    all_off = rebuilt(s)
    for h in range(4):
        all_off.set_head_enabled(1, h, False)
    assert not torch.equal(greedy_reverse(all_off, inputs), gen_before)
    a = s.ablation
    probe_in = torch.tensor([a.probe_in])
    assert list(a.probe_now) == greedy_reverse(all_off, probe_in)[0].tolist()
    assert list(a.probe_base) == greedy_reverse(model, probe_in)[0].tolist()
    assert a.probe_now != a.probe_base and "(changed)" in panel.ablation.result.text()
    assert a.now_seq == pytest.approx(sequence_accuracy(all_off, trainer.test_data, L))

    click(qtbot, panel.ablation.restore_button)
    assert s.ablated == ()
    assert "No head is switched off" in panel.ablation.result.text()
    assert not panel.ablation.restore_button.isEnabled()
    restored = rebuilt(s)
    with torch.no_grad():
        assert torch.equal(before, restored(x, causal(x.shape[1]))[0]), "switching back restores bit for bit"
        assert torch.equal(before, trainer.model(x, causal(x.shape[1]))[0])
    assert torch.equal(greedy_reverse(restored, inputs), gen_before)

    # clicking the same head twice is a round trip too
    click_head(qtbot, panel, 0, 2)
    assert s.ablated == ((0, 2),)
    click_head(qtbot, panel, 0, 2)
    assert s.ablated == () and s.ablation.now_seq == s.history.latest.report.sequence_accuracy
    with torch.no_grad():
        assert torch.equal(before, rebuilt(s)(x, causal(x.shape[1]))[0])


def test_save_load_gives_identical_predictions_and_bad_files_are_refused(panel, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox
    from safetensors.torch import save_file

    s = panel.session
    cfg = train(panel, qtbot, steps=20)
    trainer = s.trainer
    old_history = list(s.history)
    inputs = trainer.test_data[:, :cfg.seq_len]
    preds = greedy_reverse(trainer.model, inputs)
    path = tmp_path / "model.safetensors"
    panel.save_model(path)
    assert path.stat().st_size > 0
    sidecar = json.loads((tmp_path / "model.json").read_text())
    assert sidecar["train_config"] == trainer.config.to_dict() and sidecar["step"] == 20
    assert sidecar["model_config"]["num_heads"] == 4
    assert (tmp_path / "model.history.safetensors").stat().st_size > 0
    lines = (tmp_path / "model.history.csv").read_text().splitlines()
    assert len([ln for ln in lines if not ln.startswith("#")]) == 1 + 21  # '#' lines: the last step and accuracy

    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a, **k: warnings.append(text))
    status = panel.status_label.text()
    bad = tmp_path / "broken.safetensors"
    bad.write_bytes(b"\x00garbage, not a model" * 10)
    assert panel.load_model(bad) is False
    assert len(warnings) == 1 and "not a safetensors file" in warnings[0]
    foreign = tmp_path / "foreign.safetensors"
    save_file({"weight": torch.zeros(3)}, str(foreign))
    assert panel.load_model(foreign) is False
    assert len(warnings) == 2 and "not an Attention Playground model" in warnings[1]
    assert s.trainer is trainer and list(s.history) == old_history, "a refused file leaves the model alone"
    assert s.run_state == "finished" and panel.status_label.text() == status

    assert panel.load_model(path) is True
    qtbot.waitUntil(lambda: s.run_state == "loaded" and s.trainer is not trainer, timeout=TIMEOUT_MS)
    settle(qtbot)
    loaded = s.trainer
    assert torch.equal(greedy_reverse(loaded.model, inputs), preds), "save -> load gives identical predictions"
    assert torch.equal(greedy_reverse(rebuilt(s), inputs), preds)
    assert loaded.step_count == 20
    assert panel.form.config() == cfg and s.config == cfg
    assert [snap.step for snap in s.history] == list(range(21)), "the recorded history came with it"
    for k in (0, 7, 20):
        np.testing.assert_array_equal(s.history[k].probe_weights[0], old_history[k].probe_weights[0])
        for name, value in old_history[k].params.items():
            np.testing.assert_array_equal(s.history[k].params[name], value)
    assert s.history[-1].report.sequence_accuracy == pytest.approx(trainer.history[-1].sequence_accuracy)
    assert "Loaded model.safetensors (step 20)" in panel.status_label.text()
    assert warnings[2:] == []


def test_invalid_settings_are_refused_in_the_form(panel, qtbot):
    s, rc = panel.session, panel.run_controls
    configure(panel, steps=5)
    assert rc.start_button.isEnabled()
    panel.form.d_model.setValue(30)  # 30 is not divisible by 4 heads
    assert panel.form.config() is None and s.config is None
    assert "divisible" in panel.form.error()
    assert panel.form.error_label.isVisibleTo(panel) and "Cannot train" in panel.form.error_label.text()
    assert not rc.start_button.isEnabled() and not rc.step_button.isEnabled() and not rc.reset_button.isEnabled()
    assert panel.start() is False
    assert not s.is_alive and s.trainer is None and len(s.history) == 0
    panel.form.num_heads.setValue(5)
    assert panel.form.config() is not None and rc.start_button.isEnabled()
    assert not panel.form.error_label.isVisibleTo(panel)
    panel.form.vocab_size.setValue(3)
    panel.form.seq_len.setValue(16)
    assert panel.form.config() is not None  # 3 tokens: PAD, SEP and one real token is still trainable


def test_without_the_causal_mask_the_answer_leaks(panel, qtbot):
    s = panel.session
    configure(panel, steps=30, causal=False)
    assert panel.form.causal_note.isVisibleTo(panel)
    click(qtbot, panel.run_controls.start_button)
    wait_ended(qtbot, s)
    settle(qtbot)
    last = s.history.latest.report
    assert last.reversal_accuracy >= 0.95, "teacher-forced accuracy climbs: the answer is visible"
    assert last.sequence_accuracy <= last.reversal_accuracy - 0.15, "greedy generation falls short"
    model, data = rebuilt(s), s.trainer.test_data
    assert reversal_accuracy(model, data, 6, causal=False) == pytest.approx(last.reversal_accuracy)
    assert sequence_accuracy(model, data, 6, causal=False) == pytest.approx(last.sequence_accuracy)
    weights = [panel.head_grid.values(li, h) for li in range(2) for h in range(4)]
    above = max(float(np.triu(w, 1).sum(axis=1).mean()) for w in weights)
    assert above > 0.2, "the maps show weight above the diagonal: looking at future tokens"
    assert "no causal mask" in panel.heads.title_label.text()


def test_try_it_reverses_greedily_and_shows_attention_per_step(panel, qtbot):
    s = panel.session
    cfg = train(panel, qtbot, steps=12)
    tryit = panel.tryit
    tokens = [3, 7, 2, 9, 4, 5]
    tryit.input.setText(" ".join(map(str, tokens)))
    click(qtbot, tryit.run_button)
    r = tryit.result
    model = rebuilt(s)
    expected = greedy_reverse(model, torch.tensor([tokens]))[0].tolist()
    assert list(r.generated) == expected
    assert expected == greedy_reverse(s.trainer.model, torch.tensor([tokens]))[0].tolist()
    assert "(model at step 12" in tryit.result_label.text() and tryit.heatmap.isVisibleTo(panel)
    li, h = tryit.selected_head()
    vals, blocked = r.matrix(li, h)
    np.testing.assert_array_equal(tryit.heatmap.values(), vals)
    # row p = the attention of the query that produced output token p, on the model itself
    seq = tokens + [1] + expected
    L = cfg.seq_len
    with torch.no_grad():
        for p in range(L):
            x = torch.tensor([seq[: L + 1 + p]])
            _, w = model(x, causal(x.shape[1]))
            assert_close(vals[p, : L + 1 + p], w[li][0, h, -1].double().numpy(), dtype=np.float32)
    # output step p saw positions 0..L+p only
    assert blocked[0].tolist() == [False] * 7 + [True] * 5
    assert blocked[-1].tolist() == [False] * 12
    assert_close(vals.sum(axis=1), 1.0, dtype=np.float32)  # float32 weights summed in float64
    tryit.input.setText("3 7 2")
    click(qtbot, tryit.run_button)
    assert "exactly 6 tokens" in tryit.result_label.text() and tryit.result is None


def test_probe_can_be_typed_and_exports_write_files(panel, qtbot, tmp_path):
    s, box = panel.session, panel.probe_box
    train(panel, qtbot, steps=6)
    box.combo.setEditText("2 3 4 5 6 7")
    qtbot.keyClick(box.combo.lineEdit(), Qt.Key.Key_Return)
    settle(qtbot)
    trainer = s.trainer
    assert s.probe == (2, 3, 4, 5, 6, 7) and not box.error_label.isVisibleTo(panel)
    assert trainer.probe.tolist() == [2, 3, 4, 5, 6, 7, 1, 7, 6, 5, 4, 3, 2]
    assert panel.head_grid.labels() == ["2", "3", "4", "5", "6", "7", "SEP", "7", "6", "5", "4", "3"]
    expected = probe_attention(trainer.model, trainer.probe)
    assert_grid_shows(panel, expected, exact=False)
    box.combo.setEditText("1 2 3 4 5 6")  # SEP is not an input token
    qtbot.keyClick(box.combo.lineEdit(), Qt.Key.Key_Return)
    settle(qtbot)
    assert box.error_label.isVisibleTo(panel) and "tokens must be in 2..15" in box.error_label.text()
    assert s.probe == (2, 3, 4, 5, 6, 7) and trainer.probe.tolist()[:6] == [2, 3, 4, 5, 6, 7], "old probe kept"
    assert panel.head_grid.labels()[:6] == ["2", "3", "4", "5", "6", "7"]

    grid_png, grid_svg = tmp_path / "grid.png", tmp_path / "grid.svg"
    panel.export_grid(grid_png)
    panel.export_grid(grid_svg)
    assert grid_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and grid_png.stat().st_size > 5000
    assert b"<svg" in grid_svg.read_bytes()[:2000]
    head_csv = tmp_path / "head.csv"
    panel.export_head(1, 2, head_csv)
    lines = head_csv.read_text().splitlines()
    rows = [ln for ln in lines if not ln.startswith("#")]  # '#' lines: the setting and the labels (JSON lists)
    assert len(rows) == 12 and f"# columns (key position): {json.dumps(panel.head_grid.labels())}" in lines
    assert json.loads(next(ln for ln in lines if ln.startswith("# rows"))[len("# rows (query position): "):])[0] == "2"
    numbers = np.genfromtxt(head_csv, comments="#", delimiter=",")
    assert_close(numbers, expected[1][2])
    head_png = tmp_path / "head.png"
    panel.export_head(1, 2, head_png)
    assert head_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and head_png.stat().st_size > 1000
    hist_csv = tmp_path / "history.csv"
    panel.export_history_csv(hist_csv)
    lines = [ln for ln in hist_csv.read_text().splitlines() if not ln.startswith("#")]
    assert lines[0].startswith("step,epoch,loss") and len(lines) == 1 + 7
    assert [int(line.split(",")[0]) for line in lines[1:]] == list(range(7))

    written = panel.self_test(tmp_path / "self-test")
    assert [p.name for p in written] == ["training-grid.png", "training-plots.png", "training-panel.png",
                                         "training-flow.png", "training-causality.png"]
    assert all(p.stat().st_size > 1000 for p in written)


def test_playback_speed_throttles_training(panel, qtbot):
    s, rc = panel.session, panel.run_controls
    configure(panel, steps=2000)
    rc.speed_combo.setCurrentIndex(rc.speed_combo.findText("5 steps/s"))
    assert s.speed == 5.0
    click(qtbot, rc.start_button)
    qtbot.waitUntil(lambda: len(s.history) >= 2, timeout=TIMEOUT_MS)
    first = s.history.latest.step
    qtbot.wait(1000)  # the span over which the throttled rate is counted, not a wait for an event
    advanced = s.history.latest.step - first
    assert advanced <= 7, f"5 steps/s for 1 s advanced {advanced} steps"  # throttled (a busy CI may do fewer)
    rc.speed_combo.setCurrentIndex(rc.speed_combo.findText("as fast as possible"))
    assert s.speed is None
    qtbot.waitUntil(lambda: s.history.latest.step - first >= advanced + 10, timeout=TIMEOUT_MS)
    click(qtbot, rc.stop_button)
    assert s.run_state == "stopped"


def test_the_untrained_model_is_shown_before_anything_is_pressed(window, qtbot):
    assert window.training_host.preview_untrained and window.training_host.warm_up_torch  # the defaults
    panel = window.training_panel
    window.tabs.setCurrentWidget(panel)
    s, rc = window.training, panel.run_controls
    qtbot.waitUntil(lambda: s.run_state == "paused" and len(s.history) == 1, timeout=TIMEOUT_MS)
    settle(qtbot)
    assert s.trainer.step_count == 0 and s.history[0].step == 0
    # the seed's untrained model, built here independently
    from attention_core.tiny.model import TinyTransformer

    cfg = s.config
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        untrained = TinyTransformer.from_config(cfg.model_config()).eval()
    assert_grid_shows(panel, probe_attention(untrained, s.trainer.probe, cfg.causal), exact=False)
    assert "untrained" in panel.status_label.text()
    assert "Heads at step 0" in panel.heads.title_label.text()
    assert not rc.pause_button.isEnabled() and rc.pause_button.text() == "Pause", "nothing to resume at step 0"
    # the causality probe has that model to probe (it said "No model yet" beside it)
    panel.tabs.setCurrentWidget(panel.causality)
    settle(qtbot)
    assert panel.causality.numbers_label.text() == "No probe yet: Run probes the model at step 0."
    assert panel.causality.run_button.isEnabled()
    s.set_speed(None)
    previewed = s.trainer
    click(qtbot, rc.start_button)  # Start trains the previewed model
    qtbot.waitUntil(lambda: len(s.history) >= 3, timeout=TIMEOUT_MS)
    assert s.trainer is previewed and s.history[0].step == 0 and s.trainer.step_count >= 2
    click(qtbot, rc.stop_button)


def test_the_preview_invites_a_start_that_can_be_pressed(window, qtbot):
    panel = window.training_panel
    window.tabs.setCurrentWidget(panel)
    s, rc = window.training, panel.run_controls
    qtbot.waitUntil(lambda: s.run_state == "paused" and len(s.history) == 1, timeout=TIMEOUT_MS)
    assert "Press Start" in panel.status_label.text()
    assert rc.start_button.isEnabled() and rc.start_button.text() == "▶ Start"


def test_a_run_keeps_its_progress_in_view_on_a_short_screen_until_the_user_scrolls(window, panel, qtbot):
    """At 1024 x 640 the left column scrolls, and a run's progress, ETA and status (the Run box's foot, which grows
    as the run starts) were cut by its bottom edge. They are followed into view while the run goes; a scroll of
    the learner's own ends that."""
    from PySide6.QtWidgets import QAbstractSlider

    window.resize(1024, 640)
    settled(qtbot)
    from app.widgets.side_panel import SideScroll

    box = panel.run_controls.parentWidget()  # the Run box
    scroll = box.parentWidget()
    while not isinstance(scroll, SideScroll):
        scroll = scroll.parentWidget()
    bar = scroll.verticalScrollBar()
    assert bar.maximum() > 0, "the column must scroll at this size for the check to mean anything"

    def foot_in_view() -> bool:
        bottom = box.mapTo(scroll.widget(), box.rect().bottomLeft()).y()
        return bar.value() <= box.mapTo(scroll.widget(), box.rect().topLeft()).y() and \
            bottom - bar.value() < scroll.viewport().height()

    assert not foot_in_view()
    configure(panel, steps=2000)
    click(qtbot, panel.run_controls.start_button)
    qtbot.waitUntil(lambda: len(panel.session.history) >= 3 and panel.run_controls.eta_label.text() != "",
                    timeout=TIMEOUT_MS)
    qtbot.waitUntil(foot_in_view, timeout=5_000)
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)  # the learner scrolls back up
    qtbot.wait(300)  # a wait for nothing to happen (no scroll back while the run goes on)
    assert bar.value() == 0, "the column stays where the learner put it"
    click(qtbot, panel.run_controls.stop_button)
