"""Regression tests: what the Training tab shows after an action describes the state after that action.

One test per stale case seen on the first version of the rewired tab (an Ablate figure of the previous run, a head
still greyed out after "Switch every head back on", a Try it result left next to a refusal, texts that did not
follow the timeline, a loaded model shown with the plots / form / progress / ETA of the run before, Start that
silently threw a finished run away, two "Resume" buttons). Each drives the real window like a user and reads the
widgets, checking numbers against ``attention_core`` run on a model rebuilt from the recorded parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from qt_settle import caught_up
from test_training_panel import (
    TIMEOUT_MS,
    click,
    click_head,
    configure,
    rebuilt,
    settle,
    train,
    wait_ended,
)

from app.training.qt.panel import TrainingPanel
from attention_core.tiny.analysis import greedy_reverse, sequence_accuracy


def answer(monkeypatch, panel: TrainingPanel, choice: str | None) -> list[int]:
    """Answer the continue-or-new question with ``choice``; returns the list the calls are counted in."""
    calls: list[int] = []
    monkeypatch.setattr(panel, "ask_continue_or_new", lambda: calls.append(1) or choice)
    return calls


RUN_BUTTONS = ("start_button", "pause_button", "step_button", "stop_button", "reset_button")


def button_texts(panel: TrainingPanel) -> list[str]:
    return [getattr(panel.run_controls, name).text() for name in RUN_BUTTONS]


# a. ---------------------------------------------------------------------------------------------------------
def test_ablate_text_names_the_new_run_after_retraining_without_the_mask(panel, qtbot, monkeypatch):
    s = panel.session
    train(panel, qtbot, steps=12)
    panel.tabs.setCurrentWidget(panel.ablation)
    old = s.history.latest.report
    old_figure = f"exact-sequence test accuracy {old.sequence_accuracy:.1%}"
    assert f"Model at step 12: {old_figure}" in panel.ablation.result.text()

    calls = answer(monkeypatch, panel, "new")
    panel.form.causal.click()  # uncheck the causal mask
    panel.form.length.setValue(15)
    assert s.config is not None and not s.config.causal and s.config.steps == 15
    click(qtbot, panel.run_controls.start_button)
    wait_ended(qtbot, s)
    settle(qtbot)
    assert calls == [1]
    assert [snap.step for snap in s.history] == list(range(16)) and not s.model_config.causal
    new = s.history.latest.report
    assert sequence_accuracy(rebuilt(s), s.trainer.test_data, 6, causal=False) == pytest.approx(
        new.sequence_accuracy)
    new_figure = f"exact-sequence test accuracy {new.sequence_accuracy:.1%}"
    assert new_figure != old_figure, "the two runs must differ for this test to mean anything"
    text = panel.ablation.result.text()
    assert f"Model at step 15: {new_figure}, per-token {new.reversal_accuracy:.1%}" in text
    assert old_figure not in text and "step 12" not in text


# b. ---------------------------------------------------------------------------------------------------------
def test_switching_every_head_back_on_clears_the_status_and_the_grid(panel, qtbot):
    s = panel.session
    train(panel, qtbot, steps=6)
    grid = panel.head_grid
    click_head(qtbot, panel, 1, 0)
    click_head(qtbot, panel, 0, 3)
    settle(qtbot)
    assert "switched off" in panel.status_label.text()
    assert grid._disabled == {(1, 0), (0, 3)}
    assert "#c00000" in grid.map_item(1, 0).titleLabel.text and "#c00000" in grid.map_item(0, 3).titleLabel.text
    assert panel.ablation.restore_button.isEnabled()

    click(qtbot, panel.ablation.restore_button)
    settle(qtbot)
    assert s.ablated == ()
    assert "switched off" not in panel.status_label.text()
    assert "Finished: 6 steps" in panel.status_label.text()
    assert grid._disabled == set()
    layers, heads = grid.shape
    assert all("#c00000" not in grid.map_item(li, h).titleLabel.text for li in range(layers) for h in range(heads))
    assert "No head is switched off" in panel.ablation.result.text()
    assert not panel.ablation.restore_button.isEnabled()


# c. ---------------------------------------------------------------------------------------------------------
def test_a_refused_try_it_clears_the_previous_result(panel, qtbot):
    s = panel.session
    train(panel, qtbot, steps=6)
    tryit = panel.tryit
    panel.tabs.setCurrentWidget(tryit)
    tryit.input.setText("3 7 2 9 4 5")
    click(qtbot, tryit.run_button)
    assert tryit.result is not None and tryit.heatmap.isVisible()
    assert "(model at step 6)" in tryit.result_label.text() and tryit.explain.text()

    tryit.input.clear()
    qtbot.keyClicks(tryit.input, "hello world")
    click(qtbot, tryit.run_button)
    label = tryit.result_label.text()
    assert "whole numbers" in label, label
    assert "(model at step" not in label and "expected" not in label
    assert not tryit.heatmap.isVisible() and tryit.explain.text() == ""
    assert tryit.result is None and s.try_it is not None and s.try_it.result is None


# d. ---------------------------------------------------------------------------------------------------------
def test_scrubbing_to_step_2_moves_try_it_ablate_and_the_title_to_step_2(panel, qtbot):
    s = panel.session
    cfg = train(panel, qtbot, steps=12)
    at2, at12 = rebuilt(s, 2), rebuilt(s, 12)
    inputs = s.trainer.test_data[:, : cfg.seq_len]
    differ = (greedy_reverse(at2, inputs) != greedy_reverse(at12, inputs)).any(dim=1).nonzero()
    assert len(differ), "the model at step 2 must answer differently from step 12 somewhere"
    tokens = inputs[int(differ[0])].tolist()
    tryit = panel.tryit
    panel.tabs.setCurrentWidget(tryit)
    tryit.input.setText(" ".join(map(str, tokens)))
    click(qtbot, tryit.run_button)
    assert "(model at step 12)" in tryit.result_label.text()

    panel.timeline.slider.setValue(2)  # the user drags the timeline to step 2
    settle(qtbot)
    expected = greedy_reverse(at2, torch.tensor([tokens]))[0].tolist()
    assert list(tryit.result.generated) == expected
    assert "(model at step 2)" in tryit.result_label.text() and "step 12" not in tryit.result_label.text()
    click(qtbot, tryit.run_button)  # asked again while scrubbed: still the model at step 2
    assert list(tryit.result.generated) == expected and "(model at step 2)" in tryit.result_label.text()

    title = panel.heads.title_label.text()
    assert "Heads at step 2</b>" in title and "scrubbed" in title
    assert "step 2 /" in panel.timeline.label.text()

    click_head(qtbot, panel, 1, 0)
    settle(qtbot)
    text = panel.ablation.result.text()
    assert "model at step 2)" in text and "step 12" not in text
    assert "model at step 2" in panel.status_label.text()
    off = rebuilt(s, 2)
    off.set_head_enabled(1, 0, False)
    assert s.ablation.now_seq == pytest.approx(sequence_accuracy(off, s.trainer.test_data, cfg.seq_len))
    assert list(tryit.result.generated) == greedy_reverse(off, torch.tensor([tokens]))[0].tolist()
    assert "Heads at step 2</b>" in panel.heads.title_label.text()


# e. ---------------------------------------------------------------------------------------------------------
def test_a_loaded_model_brings_its_plots_form_and_progress(panel, qtbot, tmp_path, monkeypatch):
    s, rc = panel.session, panel.run_controls
    a_cfg = train(panel, qtbot, batch_size=512)  # 1 epoch = 10 steps
    assert a_cfg.steps is None and a_cfg.epochs == 1 and a_cfg.total_steps == 10
    assert panel.form.length_unit.currentText() == "epochs" and panel.form.length.value() == 1
    a_history = list(s.history)
    a_evaluated = [snap for snap in a_history if snap.report.evaluated]
    path = tmp_path / "run-a.safetensors"
    panel.save_model(path)

    answer(monkeypatch, panel, "new")  # another run, in steps, of another length
    configure(panel, steps=15)
    click(qtbot, rc.start_button)
    wait_ended(qtbot, s)
    settle(qtbot)
    assert panel.form.length_unit.currentText() == "steps" and rc.progress.maximum() == 15
    assert len(panel.plots.data("train_accuracy")[0]) == 16

    b_trainer = s.trainer
    assert panel.load_model(path)
    qtbot.waitUntil(lambda: s.run_state == "loaded" and s.trainer is not b_trainer, timeout=TIMEOUT_MS)
    settle(qtbot)
    x, _ = panel.plots.data("train_accuracy")
    assert x.tolist() == list(range(11)), "every recorded step of the loaded run"
    assert panel.plots.data("sequence_accuracy")[0].tolist() == [snap.step for snap in a_evaluated]
    np.testing.assert_array_equal(panel.plots.data("sequence_accuracy")[1],
                                  [snap.report.sequence_accuracy for snap in a_evaluated])
    assert panel.plots.joined
    assert panel.form.length_unit.currentText() == "epochs" and panel.form.length.value() == 1
    assert rc.progress.value() == 10 and rc.progress.maximum() == 10
    assert "step 10 / 10" in panel.timeline.label.text()
    assert "Loaded run-a.safetensors (step 10)" in panel.status_label.text()

    # the same model without its history: two known points, drawn as points, and the status says so
    (tmp_path / "run-a.history.safetensors").unlink()
    first = s.trainer
    assert panel.load_model(path)
    qtbot.waitUntil(lambda: s.run_state == "loaded" and s.trainer is not first, timeout=TIMEOUT_MS)
    settle(qtbot)
    # a figure a step does not have (the loaded step's training-batch accuracy) gets no point at all
    assert panel.plots.data("train_accuracy")[0].tolist() == [s.history[i].step for i in range(2)
                                                              if np.isfinite(s.history[i].report.train_accuracy)]
    assert panel.plots.data("train_accuracy")[0].tolist() != list(range(11))
    assert panel.plots.data("sequence_accuracy")[0].tolist() == [0, 10]
    assert panel.plots.joined is False
    assert "points only" in panel.plots.acc_plot.titleLabel.text
    assert "history was not saved" in panel.status_label.text()
    # two points cannot say when the run reached 99 %: no goal step is claimed
    assert "99 %" not in rc.eta_label.text(), rc.eta_label.text()
    assert rc.progress.value() == 10 and rc.progress.maximum() == 10
    model = rebuilt(s)
    for name, value in a_history[-1].params.items():
        np.testing.assert_array_equal(model.state_dict()[name].numpy(), value)
    assert sequence_accuracy(model, s.trainer.test_data, 6) == pytest.approx(
        s.history.latest.report.sequence_accuracy)


def test_reset_and_load_do_not_show_the_eta_of_the_run_before(panel, qtbot, tmp_path, monkeypatch):
    s, rc = panel.session, panel.run_controls
    train(panel, qtbot, steps=3)
    path = tmp_path / "short.safetensors"
    panel.save_model(path)
    answer(monkeypatch, panel, "new")
    configure(panel, steps=30)  # reaches the goal
    click(qtbot, rc.start_button)
    wait_ended(qtbot, s)
    settle(qtbot)
    goal = s.goal_step
    assert goal is not None and f"at step {goal}" in rc.eta_label.text()
    b_trainer = s.trainer
    click(qtbot, rc.reset_button)  # a fresh model at step 0: it has reached no goal
    qtbot.waitUntil(lambda: s.run_state == "paused" and s.trainer is not b_trainer, timeout=TIMEOUT_MS)
    settle(qtbot)
    assert f"at step {goal}" not in rc.eta_label.text(), rc.eta_label.text()
    b_trainer = s.trainer
    assert panel.load_model(path)
    qtbot.waitUntil(lambda: s.run_state == "loaded" and s.trainer is not b_trainer, timeout=TIMEOUT_MS)
    settle(qtbot)
    assert rc.progress.value() == 3 and rc.progress.maximum() == 3
    eta = rc.eta_label.text()
    assert f"at step {goal}" not in eta and "after Start" not in eta, eta


# f. ---------------------------------------------------------------------------------------------------------
def test_start_after_a_finished_run_asks_and_does_what_was_answered(panel, qtbot, monkeypatch):
    s, rc = panel.session, panel.run_controls
    cfg = train(panel, qtbot, steps=12)
    first = s.trainer
    kept = [dict(snap.params) for snap in s.history]

    calls = answer(monkeypatch, panel, None)  # cancelled: nothing changes
    click(qtbot, rc.start_button)
    qtbot.waitUntil(lambda: calls == [1], timeout=5_000)
    qtbot.wait(100)  # a wait for nothing to happen (no run may start after the cancelled question)
    assert calls == [1]
    assert s.run_state == "finished" and len(s.history) == 13 and s.trainer is first

    calls = answer(monkeypatch, panel, "continue")
    click(qtbot, rc.start_button)
    wait_ended(qtbot, s)
    settle(qtbot)
    assert calls == [1] and s.trainer is first
    assert [snap.step for snap in s.history] == list(range(25)), "history kept, trained past the old last step"
    for k in (0, 6, 12):
        for name, value in kept[k].items():
            np.testing.assert_array_equal(s.history[k].params[name], value)
    assert rc.progress.value() == 24 and rc.progress.maximum() == 24
    assert panel.form.length.value() == 24 and panel.form.length_unit.currentText() == "steps"

    calls = answer(monkeypatch, panel, "new")
    click(qtbot, rc.start_button)
    qtbot.waitUntil(lambda: s.trainer is not first and len(s.history) >= 1, timeout=TIMEOUT_MS)
    assert s.history[0].step == 0
    wait_ended(qtbot, s)
    assert calls == [1]
    assert [snap.step for snap in s.history] == list(range(25)) and s.trainer.step_count == 24
    # a fresh model from the seed: its step 0 is the untrained model, built here independently
    from attention_core.tiny.model import TinyTransformer

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        untrained = TinyTransformer.from_config(cfg.model_config())
    for name, value in untrained.state_dict().items():
        np.testing.assert_array_equal(s.history[0].params[name], value.numpy())
    assert any(not np.array_equal(value, s.history[24].params[name]) for name, value in s.history[0].params.items())
    assert s.status.startswith("Finished: 24 steps")


# g. ---------------------------------------------------------------------------------------------------------
def test_while_paused_only_one_button_reads_resume(panel, qtbot, monkeypatch):
    s, rc = panel.session, panel.run_controls
    configure(panel, steps=2000)
    click(qtbot, rc.start_button)
    qtbot.waitUntil(lambda: len(s.history) >= 3, timeout=TIMEOUT_MS)
    assert button_texts(panel).count("Resume") == 0 and not rc.start_button.isEnabled()
    click(qtbot, rc.pause_button)
    settle(qtbot)
    assert s.is_paused
    assert button_texts(panel).count("Resume") == 1 and rc.pause_button.text() == "Resume"
    assert rc.start_button.text() != "Resume"
    assert not rc.start_button.isEnabled(), "paused with unchanged settings: Resume, not Start"

    panel.form.seed.setValue(1)  # the settings now describe another run
    assert s.config is not None and s.config.seed == 1
    assert rc.start_button.isEnabled() and rc.start_button.text() != "Resume"
    assert button_texts(panel).count("Resume") == 1
    calls = answer(monkeypatch, panel, None)
    click(qtbot, rc.start_button)
    assert calls == [1] and s.is_paused, "Start with changed settings asks; cancelled, the run stays paused"

    before = s.history.latest.step
    click(qtbot, rc.step_button)
    qtbot.waitUntil(lambda: s.history.latest.step == before + 1, timeout=TIMEOUT_MS)
    settle(qtbot)
    assert button_texts(panel).count("Resume") == 1
    click(qtbot, rc.stop_button)
    assert s.run_state == "stopped" and button_texts(panel).count("Resume") == 0


# h. ---------------------------------------------------------------------------------------------------------
def test_the_window_status_line_follows_the_run_while_the_training_tab_is_shown(window, panel, qtbot):
    """It said "Ready. Start trains…" for the whole of a run started after the tab was opened (it was only set
    when the tab became current)."""
    s = panel.session
    window.tabs.setCurrentWidget(panel)
    assert window.statusBar().currentMessage() == f"Training: {s.status}"
    train(panel, qtbot, steps=6)
    assert s.run_state == "finished" and s.status.startswith("Finished: 6 steps")
    assert window.statusBar().currentMessage() == f"Training: {s.status}"
    click_head(qtbot, panel, 0, 1)  # the status now describes the ablation
    assert "switched off" in s.status and window.statusBar().currentMessage() == f"Training: {s.status}"
    window.tabs.setCurrentIndex(0)  # the playground's tab: its own status, untouched by the run's
    assert window.statusBar().currentMessage() == window.playground.status
    click_head(qtbot, panel, 0, 1)
    assert window.statusBar().currentMessage() == window.playground.status


# i. ---------------------------------------------------------------------------------------------------------
def test_the_timeline_slider_keeps_room_to_scrub_in_a_narrow_window(window, panel, qtbot):
    """At 1024 px the slider was ~45 px wide beside "step 0", the step, "▶ Replay" and "● Live": there the two
    buttons show their symbols alone; in a wide window their words come back."""
    from app.training.qt.timeline import SLIDER_ROOM

    tl = panel.timeline
    train(panel, qtbot, steps=4)
    for width, compact in ((1024, True), (1920, False)):
        window.resize(width, 760)

        def laid_out(compact=compact):  # noqa: ANN202 (asserts, for waitUntil)
            assert tl.compact is compact
            assert (tl.replay_button.text(), tl.live_button.text()) == (
                ("▶", "●") if compact else ("▶ Replay", "● Live"))
            assert tl.slider.width() >= (100 if compact else SLIDER_ROOM)  # 37 px at 1024 with the words

        qtbot.waitUntil(laid_out, timeout=5_000)
        assert "Replay" in tl.replay_button.toolTip() and "Live" in tl.live_button.toolTip()


def test_a_second_run_as_long_as_the_first_redraws_the_heads_sparklines(finish_run, qtbot):
    """Found by the currency oracle: the history's version restarted at 0 with every run, and the Heads view redraws
    its sparklines only when the version moved, so a second run of the same length kept the first run's curves."""
    from attention_core.tiny.config import TrainConfig

    tiny = dict(seq_len=3, vocab_size=6, d_model=8, num_heads=2, num_layers=2, steps=6, train_size=64, test_size=16,
                train_eval_size=4, eval_every=3)
    panel = finish_run(TrainConfig(**tiny, seed=1))
    panel.form.set_config(TrainConfig(**tiny, seed=2))
    assert panel.session.start(new_run=True)  # a new run, as long as the first
    qtbot.waitUntil(lambda: panel.session.run_state == "finished", timeout=60_000)
    caught_up(qtbot, panel.window())
    h = panel.session.history
    steps, rev = h.head_series("task")
    grid = panel.heads.head_grid
    for (layer, head), cell in grid._cells.items():
        x, y = cell.rev_curve.getData()
        np.testing.assert_allclose(y, rev[:, layer, head], err_msg=f"layer {layer} head {head}")
