"""TrainingSession without any window: runs on the default ThreadRunner, delivered with ``wait_idle()`` /
``runner.pump()``. Numbers are checked against independent references built here from ``attention_core`` (a
``ReversalTrainer`` trained step by step, models rebuilt from parameters with ``TinyTransformer``, greedy output
from ``analysis.greedy_reverse``, accuracy from ``analysis.sequence_accuracy``), never against the session's own
helpers."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest
import torch
from hang_guard import wait_until

from app.common.runner import ThreadRunner
from app.training.model.recorded import TRY_INTERVAL_S
from app.training.model.run import GOAL
from app.training.model.session import RUN_STATES, TrainingEvents, TrainingSession
from app.training.model.status import derive_status, eta_line
from attention_core.tiny.analysis import greedy_reverse, reversal_accuracy, sequence_accuracy
from attention_core.tiny.checkpoint import CheckpointError, history_path, save_model_files
from attention_core.tiny.config import TrainConfig
from attention_core.tiny.model import TinyTransformer
from attention_core.tiny.training import ReversalTrainer
from tests.tolerance import assert_close

STEPS = 12
CFG = TrainConfig(steps=STEPS, train_size=256, test_size=64, train_eval_size=32, batch_size=32, eval_every=3,
                  seed=0)
TRY = "2 3 4 5 6 7"


def params_now(model: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def model_of(params: dict[str, np.ndarray], cfg: TrainConfig = CFG, off: tuple[tuple[int, int], ...] = ()
             ) -> TinyTransformer:
    model = TinyTransformer.from_config(cfg.model_config())
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in params.items()})
    for li, h in off:
        model.set_head_enabled(li, h, False)
    return model.eval()


def assert_same_params(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert_close(a[k], b[k], err_msg=k)


@pytest.fixture(scope="module")
def reference() -> tuple[list[dict[str, np.ndarray]], list[float], torch.Tensor]:
    """The same run trained here, step by step: parameters and loss at every step, and its test set."""
    trainer = ReversalTrainer(CFG)
    params, losses = [params_now(trainer.model)], [float("nan")]
    for _ in range(STEPS):
        report = trainer.step()
        params.append(params_now(trainer.model))
        losses.append(report.loss)
    return params, losses, trainer.test_data.cpu()


def new_session(cfg: TrainConfig | None = CFG) -> TrainingSession:
    s = TrainingSession(cfg)
    s.set_speed(None)
    return s


@pytest.fixture
def sessions():
    """Sessions made by a test; every one is shut down afterwards (no thread outlives a test)."""
    made: list[TrainingSession] = []

    def make(cfg: TrainConfig | None = CFG) -> TrainingSession:
        made.append(new_session(cfg))
        return made[-1]

    yield make
    for s in made:
        s.shutdown()


def run_to_end(s: TrainingSession) -> None:
    assert s.start() is True
    assert s.wait_idle(30)
    assert s.run_state == "finished"


def pump_until(s: TrainingSession, cond, timeout_s: float = 20.0) -> None:
    runner = s.runner
    assert isinstance(runner, ThreadRunner)
    wait_until(cond, "the session's state", hang_guard_s=timeout_s, between=lambda: runner.pump(0.02))


def settle(s: TrainingSession, seconds: float = 0.3) -> None:
    """Deliver whatever arrives within ``seconds`` (a step in flight when training was paused)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        s.runner.pump(0.02)  # type: ignore[attr-defined]


def steps_of(s: TrainingSession) -> list[int]:
    return [snap.step for snap in s.history]


def record(s: TrainingSession) -> list[tuple[str, tuple]]:
    """Every event but ``changed``, which sums up the others (``test_changed_names_each_announcement``)."""
    seen: list[tuple[str, tuple]] = []
    for name in s.events.signals:
        if name != "changed":
            getattr(s.events, name).connect(lambda *args, _n=name: seen.append((_n, args)))
    return seen


def names(seen: list[tuple[str, tuple]]) -> list[str]:
    return [n for n, _ in seen]


def test_module_names_stay_importable():
    assert GOAL == 0.99 and TRY_INTERVAL_S == 0.5 and "finished" in RUN_STATES
    assert set(TrainingEvents().signals) == {"run_state", "config", "history", "snapshot", "shown", "probe",
                                             "ablation", "try_it", "progress", "speed", "status", "finished",
                                             "changed"}  # every evented model's: the names just announced


def test_changed_names_each_announcement():
    """One ``changed`` per announcement with the names of the events just emitted (status on its own when the
    status line changed after them)."""
    s = TrainingSession(runner=ThreadRunner())
    seen = record(s)
    changed: list[frozenset[str]] = []
    s.events.changed.connect(changed.append)
    s.set_speed(None)
    s.set_config(None, "steps must be at least 1")
    assert s.start() is False  # refused: a note, the status line alone changes
    assert names(seen) == ["speed", "config", "status"]
    assert s.status == "Cannot start: steps must be at least 1"
    assert changed == [frozenset({"speed"}), frozenset({"config"}), frozenset({"status"})]


def test_status_and_eta_texts_follow_their_arguments():
    assert eta_line(3, 12, [0.1, 0.3], None, running=True) == "ETA 1.8 s"  # 9 steps at the measured 0.2 s
    assert eta_line(3, 12, [0.1, 0.3], 2.0, running=True) == "ETA 4.5 s"  # throttled: 0.5 s a step
    assert eta_line(3, 12, [0.1, 0.3], None, running=False) == "ETA –"
    assert eta_line(9, 12, [], None, running=True, goal_step=7, time_to_goal=2.5) == \
        "ETA – · ≥ 99 % exact-sequence at step 7 (2.5 s after Start)"
    assert derive_status("paused", None)[0].startswith("This is the untrained model (step 0)")
    assert derive_status("paused", None, started=True) == (
        "Paused at step 0. Step trains one batch; Resume continues.", False)
    assert derive_status("error", None, last_error="Traceback…\nValueError: boom\n") == (
        "Training failed: ValueError: boom", True)
    assert derive_status("running", None, notice=("Saved x", False)) == ("Saved x", False)
    assert derive_status("running", None, speed=5.0)[0].startswith("Training at 5 steps/s…")


def test_run_records_every_step_in_order_and_finishes(sessions, reference):
    ref_params, ref_losses, _ = reference
    s = sessions()
    assert s.run_state == "empty" and s.progress == (0, 1, "not started")
    run_to_end(s)
    assert steps_of(s) == list(range(STEPS + 1))
    for i, snap in enumerate(s.history):  # what was recorded is the run itself, step by step
        assert snap.params is not None
        assert_same_params(snap.params, ref_params[i])
        assert (np.isnan(snap.report.loss) and i == 0) or snap.report.loss == pytest.approx(ref_losses[i], 1e-5)
    acc = s.history.latest.report.sequence_accuracy
    assert s.status.startswith(f"Finished: {STEPS} steps, exact-sequence test accuracy {acc:.1%}")
    assert not s.status_is_error and not s.is_alive
    assert s.progress == (STEPS, STEPS, "step %v / %m")
    assert s.shown_step == STEPS and s.history.complete


def test_events_name_what_changed(sessions):
    s = sessions()
    seen = record(s)
    run_to_end(s)
    states = [a[0] for n, a in seen if n == "run_state"]
    assert states == ["building", "running", "finished"]
    assert [a[0].step for n, a in seen if n == "snapshot"] == list(range(1, STEPS + 1))  # step 0 comes with Ready
    assert [a for n, a in seen if n == "finished"] == [("finished",)]
    assert names(seen).count("history") >= STEPS + 1 and "progress" in names(seen)
    statuses = [a[0] for n, a in seen if n == "status"]
    assert statuses[-1] == s.status and statuses[0] == "Building the model and data…"
    assert all(a != b for a, b in zip(statuses, statuses[1:]))  # emitted only when the text changed

    seen.clear()
    s.seek(3)
    assert ("shown", (3,)) in seen and "history" not in names(seen) and "run_state" not in names(seen)
    ablation = [a[0] for n, a in seen if n == "ablation"]
    assert ablation and ablation[-1].step == 3

    seen.clear()
    s.set_speed(10.0)
    assert seen[0] == ("speed", (10.0,)) and s.speed == 10.0
    seen.clear()
    s.set_config(CFG)  # unchanged: nothing to say
    assert seen == []
    other = replace(CFG, lr=1e-2)
    s.set_config(other)
    assert seen[0] == ("config", (other,)) and s.config == other
    seen.clear()
    assert s.try_sequence(TRY).step == 3
    assert names(seen)[0] == "try_it" and seen[0][1][0] is s.try_it


def test_step_from_reset_trains_exactly_one_batch(sessions, reference):
    ref_params = reference[0]
    s = sessions()
    assert s.reset() is True
    assert s.wait_idle(30)
    assert s.run_state == "paused" and s.is_alive and steps_of(s) == [0]
    assert "untrained model (step 0)" in s.status
    assert s.step() is True
    assert s.wait_idle(30)
    assert steps_of(s) == [0, 1] and s.run_state == "paused"
    assert s.step() and s.step()
    assert s.wait_idle(30)
    settle(s)  # nothing more arrives: each step() is one batch
    assert steps_of(s) == [0, 1, 2, 3] and s.run_state == "paused" and s.is_alive
    assert s.status == "Paused at step 3. Step trains one batch; Resume continues."
    for i in range(4):
        assert_same_params(s.history[i].params, ref_params[i])


def test_pause_mid_run_then_step_trains_one_batch(sessions, reference):
    s = sessions()
    s.set_speed(10.0)
    assert s.start()
    pump_until(s, lambda: len(s.history) >= 3)
    s.pause()
    assert s.run_state == "paused" and s.is_paused
    settle(s)  # the step in flight when Pause was pressed still arrives
    n = len(s.history)
    assert n < STEPS + 1, "the run ended before it could be paused"
    settle(s)
    assert len(s.history) == n  # paused: no new step starts
    assert s.step()
    assert s.wait_idle(30)
    settle(s)
    assert len(s.history) == n + 1 and s.run_state == "paused"
    s.set_speed(None)
    s.start()  # unchanged settings: resumes the same run
    assert s.wait_idle(30) and s.run_state == "finished"
    assert steps_of(s) == list(range(STEPS + 1))
    assert_same_params(s.history.latest.params, reference[0][STEPS])


def test_seek_makes_try_it_and_ablation_act_on_that_step(sessions, reference):
    ref_params, _, test_data = reference
    s = sessions()
    run_to_end(s)
    k = 4
    s.seek(k)
    assert s.shown_index == k and s.shown_step == k
    t = s.try_sequence(TRY)
    assert t.step == k and t.caption == f"model at step {k}" and t.error == ""
    inputs = torch.tensor([[int(x) for x in TRY.split()]])
    expected = greedy_reverse(model_of(ref_params[k]), inputs, CFG.causal)[0].tolist()
    assert list(t.result.generated) == expected

    before = s.ablated
    assert s.toggle_head(CFG.num_layers, 0) is False and s.toggle_head(0, CFG.num_heads) is False
    assert s.ablated == before and "No head" in s.status  # refused with the reason (was an IndexError)
    assert s.toggle_head(0, 1) is True
    a = s.ablation
    assert a.step == k and a.caption == f"model at step {k}" and a.off == ((0, 1),)
    off_model = model_of(ref_params[k], off=((0, 1),))
    assert a.now_seq == pytest.approx(sequence_accuracy(off_model, test_data, CFG.seq_len, CFG.causal))
    assert a.now_tok == pytest.approx(reversal_accuracy(off_model, test_data, CFG.seq_len, CFG.causal))
    assert a.base_seq == pytest.approx(sequence_accuracy(model_of(ref_params[k]), test_data, CFG.seq_len))
    assert f"(model at step {k})" in s.status and "Layer 1 head 2 is switched off" in s.status

    s.seek(STEPS)  # the switched-off heads follow the shown step
    assert s.ablation.step == STEPS and s.ablation.off == ((0, 1),) and s.try_it.step == STEPS
    off_model = model_of(ref_params[STEPS], off=((0, 1),))
    assert s.ablation.now_seq == pytest.approx(sequence_accuracy(off_model, test_data, CFG.seq_len))


def test_try_it_runs_with_the_switched_off_heads(sessions, reference):
    ref_params = reference[0]
    s = sessions()
    run_to_end(s)
    inputs = torch.tensor([[int(x) for x in TRY.split()]])
    off = ((0, 0), (0, 1), (1, 2))
    for head in off:
        s.toggle_head(*head)
    assert s.ablated == off
    t = s.try_sequence(TRY)
    want_off = greedy_reverse(model_of(ref_params[STEPS], off=off), inputs)[0].tolist()
    want_all = greedy_reverse(model_of(ref_params[STEPS]), inputs)[0].tolist()
    assert list(t.result.generated) == want_off and t.off == off and "off" in t.caption
    s.restore_heads()  # Try it is redone with every head on
    assert list(s.try_it.result.generated) == want_all and s.try_it.off == ()
    assert s.try_it.caption == f"model at step {STEPS}"


def test_restore_heads_clears_the_switched_off_status(sessions):
    s = sessions()
    run_to_end(s)
    finished = s.status
    assert s.toggle_head(1, 3)
    assert "switched off" in s.status and "Layer 2 head 4" in s.status
    s.restore_heads()
    assert s.ablated == () and s.ablation.off == ()
    assert "switched off" not in s.status and s.status == finished


def test_toggle_head_is_refused_while_training(sessions):
    s = sessions()
    s.set_speed(5.0)
    assert s.start()
    pump_until(s, lambda: s.run_state == "running")
    assert s.toggle_head(0, 0) is False
    assert s.ablated == () and s.status_is_error and "pause or stop" in s.status


def test_refused_try_text_leaves_no_stale_result(sessions):
    s = sessions()
    assert s.try_sequence(TRY).error.startswith("No model yet") and s.try_it.result is None
    run_to_end(s)
    assert s.try_sequence(TRY).result is not None
    for bad in ("2 3 4", "2 3 4 5 6 99", "a b c d e f", "0 1 2 3 4 5"):
        t = s.try_sequence(bad)
        assert t.result is None and t.error and t.step is None and t.caption == ""
        assert s.try_it is t and t.text == bad
        s.seek(2)  # a refused text stays refused at another step (nothing stale comes back)
        assert s.try_it.result is None and s.try_it.error == t.error
        s.go_live()


def test_start_after_finished_asks_then_continues_or_starts_fresh(sessions, reference):
    ref_params = reference[0]
    s = sessions()
    run_to_end(s)
    trainer, snaps = s.trainer, list(s.history)
    assert s.start_needs_choice() is True
    seen = record(s)
    assert s.start() is False
    assert set(names(seen)) == {"status"} and "continue training this model, or start a new run" in s.status
    assert s.trainer is trainer and list(s.history) == snaps and s.run_state == "finished" and s.config == CFG

    assert s.start(new_run=False) is True  # continue: the same model, one more length of its run
    assert s.wait_idle(30) and s.run_state == "finished"
    assert s.trainer is trainer and trainer.config.steps == 2 * STEPS and s.config == trainer.config
    assert steps_of(s) == list(range(2 * STEPS + 1))
    assert all(a is b for a, b in zip(s.history, snaps))  # the recorded steps are kept as they were
    assert_same_params(s.history[STEPS].params, ref_params[STEPS])

    assert s.start(new_run=True) is True  # a fresh model from the settings (now 24 steps)
    assert s.wait_idle(30) and s.run_state == "finished"
    assert s.trainer is not trainer and steps_of(s) == list(range(2 * STEPS + 1))
    assert s.history[0] is not snaps[0]
    for i in (0, 1, STEPS):  # same seed, same batches: the same path again
        assert_same_params(s.history[i].params, ref_params[i])


@pytest.mark.parametrize("new_run", [None, False, True])
def test_paused_run_with_changed_settings_asks_before_discarding_steps(sessions, new_run):
    s = sessions()
    s.reset()
    s.step()
    assert s.wait_idle(30) and steps_of(s) == [0, 1] and s.is_paused
    assert s.start_needs_choice() is False  # unchanged settings: Start just resumes
    trainer, snaps = s.trainer, list(s.history)
    other = replace(CFG, lr=5e-3)
    s.set_config(other)
    assert s.start_needs_choice() is True
    if new_run is None:
        assert s.start() is False
        assert s.is_paused and s.trainer is trainer and list(s.history) == snaps
        assert "settings changed" in s.status and not s.status_is_error
        settle(s)
        assert list(s.history) == snaps  # nothing was launched
        return
    assert s.start(new_run=new_run) is True
    assert s.wait_idle(30) and s.run_state == "finished"
    assert steps_of(s) == list(range(STEPS + 1))
    if new_run:  # a new model with the new settings: the recorded steps are gone
        assert s.trainer is not trainer and s.trainer.config == other and s.history[1] is not snaps[1]
        assert_same_params(s.history[0].params, snaps[0].params)  # same seed, same start...
        w = "layers.0.attention.W_q.weight"
        assert not np.allclose(s.history[1].params[w], snaps[1].params[w], atol=1e-6)  # ...another learning rate
    else:  # the current model continues with its own settings
        assert s.trainer is trainer and trainer.config == CFG
        assert s.history[0] is snaps[0] and s.history[1] is snaps[1]


def test_paused_run_with_unchanged_settings_resumes(sessions):
    s = sessions()
    s.reset()
    s.step()
    assert s.wait_idle(30) and s.is_paused
    trainer, snaps = s.trainer, list(s.history)
    assert s.start() is True
    assert s.wait_idle(30) and s.run_state == "finished" and s.trainer is trainer
    assert s.history[1] is snaps[1] and steps_of(s) == list(range(STEPS + 1))


def test_save_then_load_restores_every_step(sessions, tmp_path):
    s = sessions()
    run_to_end(s)
    path = s.save(tmp_path / "run.safetensors")
    assert path.is_file() and history_path(path).is_file() and "Saved" in s.status

    t = sessions(None)
    t.load(path)
    assert t.wait_idle(30) and t.run_state == "loaded"
    assert len(t.history) == len(s.history) and steps_of(t) == steps_of(s)
    assert t.history.complete is True
    a, b = s.history.series(), t.history.series()
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    for x, y in zip(s.history, t.history):
        assert x.params.keys() == y.params.keys()
        for k in x.params:
            np.testing.assert_array_equal(x.params[k], y.params[k], err_msg=f"step {x.step} {k}")
        np.testing.assert_array_equal(x.reversal_scores, y.reversal_scores)
    assert t.config == CFG and t.trainer.step_count == STEPS and t.probe == s.probe
    assert t.status == f"Loaded run.safetensors (step {STEPS}). Its recorded history came with it. Start " \
                      "continues training."


@pytest.mark.parametrize("how", ["save_model_files", "history deleted"])
def test_file_without_history_loads_two_snapshots(sessions, reference, tmp_path, how):
    ref_params = reference[0]
    path = tmp_path / "bare.safetensors"
    if how == "save_model_files":
        save_model_files(path, model_of(ref_params[STEPS]), CFG.to_dict(), step=STEPS)
    else:
        s = sessions()
        run_to_end(s)
        s.save(path)
        history_path(path).unlink()
    t = sessions(None)
    t.load(path)
    assert t.wait_idle(30) and t.run_state == "loaded"
    assert steps_of(t) == [0, STEPS] and len(t.history) == 2
    assert t.history.complete is False
    assert "history was not saved" in t.status and "only the two known points" in t.status
    assert_same_params(t.history[0].params, ref_params[0])  # step 0 rebuilt from the seed
    assert_same_params(t.history[1].params, ref_params[STEPS])


def _garbage(path, good):
    path.write_bytes(b"\x00not a safetensors file" * 10)


def _truncated(path, good):
    path.write_bytes(good.read_bytes()[:200])


def _damaged_history(path, good):
    for suffix in (".safetensors", ".json"):
        path.with_suffix(suffix).write_bytes(good.with_suffix(suffix).read_bytes())
    history_path(path).write_bytes(history_path(good).read_bytes()[:300])


def _seq_len_too_long(path, good, reference_params):
    save_model_files(path, model_of(reference_params), {**CFG.to_dict(), "seq_len": 40}, step=STEPS)


def _negative_lr(path, good, reference_params):
    save_model_files(path, model_of(reference_params), {**CFG.to_dict(), "lr": -1.0}, step=STEPS)


@pytest.mark.parametrize("corrupt", [_garbage, _truncated, _damaged_history, _seq_len_too_long, _negative_lr],
                         ids=lambda f: f.__name__.strip("_"))
def test_corrupted_file_raises_and_changes_nothing(sessions, reference, tmp_path, corrupt):
    s = sessions()
    run_to_end(s)
    good = s.save(tmp_path / "good.safetensors")
    bad = tmp_path / "bad.safetensors"
    if corrupt in (_seq_len_too_long, _negative_lr):
        corrupt(bad, good, reference[0][STEPS])
    else:
        corrupt(bad, good)
    before = (s.trainer, list(s.history), s.run_state, s.config, s.status, s.loaded_from, s.history_note,
              s.shown_index, s.history.complete)
    seen = record(s)
    with pytest.raises(CheckpointError):
        s.load(bad)
    settle(s, 0.2)
    assert (s.trainer, list(s.history), s.run_state, s.config, s.status, s.loaded_from, s.history_note,
            s.shown_index, s.history.complete) == before
    assert seen == [] and not s.is_alive


def test_stop_mid_run_keeps_the_history(sessions):
    s = sessions()
    s.set_speed(10.0)
    seen = record(s)
    assert s.start()
    pump_until(s, lambda: len(s.history) >= 3)
    s.stop()
    assert s.run_state == "stopped" and not s.is_alive
    n = len(s.history)
    assert 3 <= n < STEPS + 1 and steps_of(s) == list(range(n))
    assert [a for name, a in seen if name == "finished"] == [("stopped",)]
    assert s.status == (f"Stopped at step {n - 1}. Scrub the timeline, try sequences, click heads to ablate, "
                        "or Start to continue.")
    settle(s)
    assert len(s.history) == n and not s.runner.busy()  # type: ignore[attr-defined]
    assert s.start() is True  # unchanged settings: continues the stopped run where it was
    assert s.wait_idle(30) and steps_of(s) == list(range(STEPS + 1))


def test_shutdown_leaves_no_thread_alive(sessions):
    s = sessions()
    s.set_speed(5.0)
    assert s.start()
    pump_until(s, lambda: s.run_state == "running")
    assert any(t.name == "training-run" and t.is_alive() for t in threading.enumerate())
    s.shutdown()
    assert not s.is_alive and s.run_state == "stopped"
    assert not s.runner.busy()  # type: ignore[attr-defined]
    assert not [t for t in threading.enumerate() if t.name == "training-run" and t.is_alive()]
