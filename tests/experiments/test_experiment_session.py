"""The Experiments tab's model (ThreadRunner): runs trained one after another in their own TrainingSessions, the
final table and the entropy comparison against figures computed here from the sessions' histories, Cancel, the runs
table refusing bad cells, and the "What to see" lines following measured figures (synthetic histories)."""

from __future__ import annotations

import numpy as np
import pytest

from app.experiments.model.findings import causal_claim, fastest_loss_drop, findings
from app.experiments.model.session import ExperimentSession
from attention_core.tiny.experiments import build_runs
from attention_core.tiny.report import TrainingReport

STEPS = 20


@pytest.fixture(scope="module")
def finished():
    e = ExperimentSession()
    e.set_preset("causal-vs-bidirectional", steps=STEPS)
    states = []
    e.events.run_state.connect(states.append)
    assert e.start() and not e.start()
    assert e.wait_idle(120)
    assert states == ["running", "finished"]
    return e


def _last_eval(history):
    return [r for r in history if r.evaluated][-1]


def test_two_runs_train_in_turn_and_the_summary_is_their_histories(finished):
    e = finished
    assert [s.run_state for s in e.sessions] == ["finished", "finished"]
    assert [s.config.causal for s in e.sessions] == [True, False]
    assert e.steps_done == e.total_steps == 2 * STEPS and e.fraction == 1.0
    assert len(e.summary) == 2
    for row, run, session in zip(e.summary, e.trained_runs, e.sessions, strict=True):
        history = session.history.reports()
        assert [r.step for r in history] == list(range(STEPS + 1))
        last = _last_eval(history)
        reach = next((r.step for r in history if r.evaluated and r.sequence_accuracy >= 0.99), None)
        assert row["run"] == run.name and row["causal"] == run.config.causal
        assert row["steps"] == last.step == STEPS
        assert row["steps_to_99"] == reach
        # exact, not rounded to the CSV's 4 decimals: the final table rounds once (0.565003 -> 0.57, never 0.56)
        assert row["sequence_accuracy"] == last.sequence_accuracy
        assert row["token_accuracy"] == last.reversal_accuracy
        assert row["mean_head_entropy"] == float(np.mean(last.head_entropy))
        assert row["best_task_score"] == float(np.max(last.head_task_scores))
    assert e.progress_text == f"done: {2 * STEPS} / {2 * STEPS} steps"


def test_compare_entropy_is_the_reports_and_follows_the_step(finished):
    e, c = finished, finished.compare
    ha, hb = (s.history.reports() for s in e.sessions)
    assert c.step == c.max_step == STEPS
    ea, eb = _last_eval(ha).head_entropy, _last_eval(hb).head_entropy
    np.testing.assert_allclose(c.entropy_difference(), eb - ea)
    ma, mb, rel = c.mean_change()
    assert (ma, mb) == pytest.approx((float(np.mean(ea)), float(np.mean(eb))))
    assert rel == pytest.approx((mb - ma) / ma)
    c.set_step(10)
    a = c.side("a")
    expected = [r for r in ha if r.evaluated and r.step <= 10][-1]
    assert a.snapshot.step == 10 and a.evaluation.step == expected.step
    np.testing.assert_allclose(a.entropy, expected.head_entropy)
    assert f"{a.name} at step {expected.step}" in c.caption()
    c.set_step(None)
    # the causal claim, measured: causal (run 1) against bidirectional (run 2)
    change = (float(np.mean(ea)) - float(np.mean(eb))) / float(np.mean(eb))
    assert e.causal_line.startswith(f"causal: mean head entropy {np.mean(ea):.2f} nats vs {np.mean(eb):.2f}")
    assert f"{change * 100:+.0f} %".replace("-", "−") in e.causal_line
    holds = abs(change + 0.379) <= 0.05
    assert ("holds here" in e.causal_line) == holds and ("does not hold" in e.causal_line) == (not holds)


def test_cancel_stops_the_run_and_starts_none_of_the_rest():
    e = ExperimentSession()
    e.set_preset("causal-vs-bidirectional", steps=5000)
    assert e.start()
    first = e.sessions[0]
    while len(first.history) < 4:
        e.runner.pump(0.05)
    e.cancel()
    assert e.run_state == "cancelled" and not e.is_running
    assert first.run_state == "stopped" and not first.is_alive
    done = len(first.history)
    e.runner.pump(0.3)
    assert len(first.history) == done < 5000
    assert e.sessions[1].run_state == "empty" and len(e.sessions[1].history) == 0
    assert e.summary == [] and e.progress_text.startswith(f"cancelled: {first.history.latest.step} / 10000")


def test_a_bad_cell_is_refused_with_the_reason_and_the_old_value_kept():
    e = ExperimentSession()
    e.set_preset("causal-vs-bidirectional", steps=30)
    rows = [dict(r) for r in e.rows]
    errors = []
    e.events.table_error.connect(errors.append)
    for column, value, reason in (("num_heads", "3", "run 1: d_model (32) must be divisible by num_heads (3)"),
                                  ("lr", "fast", "run 1: lr must be a number (got 'fast')"),
                                  ("positional", "bogus", "run 1: positional must be one of"),
                                  ("causal", "maybe", "run 1: causal must be yes or no")):
        assert not e.set_cell(0, column, value)
        assert e.table_error.startswith(reason) and errors[-1] == e.table_error
        assert e.rows == rows
    assert e.set_cell(1, "num_heads", "2") and e.table_error == "" and errors[-1] == ""
    assert e.rows[1]["num_heads"] == 2
    # the names follow the options that differ now
    assert [r.name for r in e.runs] == ["causal=yes · num_heads=4", "causal=no · num_heads=2"]
    assert [r.name for r in e.runs] == [r.name for r in build_runs(e.rows)]
    assert e.add_run() and len(e.rows) == 3 and e.rows[2]["seed"] == 1
    assert e.remove_run(2) and e.remove_run(1) is False and "at least 2" in e.table_error


# ------------------------------------------------------------------ what to see, from synthetic histories
def _report(step, acc, loss=1.0, entropy=0.5, scores=0.5, evaluated=True, shape=(1, 2)):
    return TrainingReport(step, 100, 0.0, loss, 0.0, evaluated, 0.0, acc, acc, acc, np.zeros(shape), [], 0.0, 0.0,
                          head_task_scores=np.full(shape, scores), head_entropy=np.full(shape, entropy))


def _history(reach_at, steps=30, final=0.5, **kw):
    return [_report(s, 0.995 if reach_at is not None and s >= reach_at else final * s / steps, **kw)
            for s in range(steps + 1)]


def test_what_to_see_follows_the_measured_figures():
    runs = build_runs([{"positional": "learned"}, {"positional": "none"}])
    lines = findings(runs, [_history(12), _history(None, final=0.02)])
    assert lines[0] == ("Held-out greedy exact-sequence accuracy: positional=learned: 99 % at step 12; "
                        "positional=none: not 99 % in 30 steps (2.0 % greedy at the end).")
    assert lines[1].startswith("Without positions, reversal stays at 2.0 % greedy after 30 steps")
    # change a run: it changes
    lines = findings(runs, [_history(6), _history(18)])
    assert "positional=learned: 99 % at step 6; positional=none: 99 % at step 18" in lines[0]
    assert lines[1].startswith("Without positions, reversal still reached 99 % (step 18)")
    assert findings(runs, [[], []]) == []  # nothing trained: nothing said


def test_the_induction_line_finds_the_loss_cliff_and_the_causal_claim_is_measured():
    loss = [2.0] * 41 + [0.1] * 40  # the loss drops in one step, between steps 40 and 41
    history = [_report(s, 0.0, loss=loss[s]) for s in range(81)]
    step, before, after = fastest_loss_drop(history)
    assert 38 <= step <= 46 and before > after
    runs = build_runs([{"task": "reversal"}, {"task": "induction"}])
    text = " ".join(findings(runs, [_history(10), history]))
    assert f"the induction head appears suddenly around step {step}" in text
    gradual = [_report(s, 0.0, loss=2.0 - s / 50) for s in range(81)]  # the same fall every step: nothing sudden
    text = " ".join(findings(runs, [_history(10), gradual]))
    assert "suddenly" not in text and "the loss falls gradually, with no sudden drop" in text
    short = [_report(s, 0.0, loss=loss[s]) for s in range(44)]  # ends during the fall
    assert "train longer" in " ".join(findings(runs, [_history(10), short]))
    runs = build_runs([{"causal": True}, {"causal": False}])
    cut = causal_claim(runs, [_history(5, entropy=0.5), _history(5, entropy=1.0)])
    assert cut == ("causal: mean head entropy 0.50 nats vs 1.00 bidirectional: −50 %; the report's −37.9 % does not "
                   "hold here (the change is larger)")
    near = causal_claim(runs, [_history(5, entropy=0.63), _history(5, entropy=1.0)])
    assert near is not None and "−37 %" in near and "holds here" in near
    assert causal_claim(build_runs([{"seed": 0}, {"seed": 1}]), [_history(5), _history(5)]) is None


def test_experiment_runs_do_not_keep_each_steps_parameters(finished):
    """Experiments never rebuild a past step's model: their sessions record no parameters (a training tab does)."""
    assert all(len(s.history) == STEPS + 1 for s in finished.sessions)
    assert all(snap.params is None for s in finished.sessions for snap in list(s.history)[1:])  # after step 0


def test_the_status_line_follows_the_progress(monkeypatch):
    """The status bar stayed "0 / 900 steps · ETA –" while the progress bar said 82/900."""
    import app.experiments.model.session as session_module

    monkeypatch.setattr(session_module, "STATUS_EVERY_S", 0.0, raising=False)
    e = ExperimentSession()
    e.set_preset("causal-vs-bidirectional", steps=STEPS)
    seen = []
    e.events.progress.connect(lambda: seen.append((e.is_running, e.steps_done, e.status)))
    assert e.start() and e.wait_idle(120)
    during = [(done, status) for running, done, status in seen if running and done > 0]
    assert len(during) > STEPS
    assert all(f"· {done} / {2 * STEPS} steps ·" in status for done, status in during), during[:3]


def test_a_refused_cell_message_goes_once_the_runs_are_valid_again():
    """The red reason stayed under the table after a valid change (another preset) and a run."""
    e = ExperimentSession()
    e.set_preset("causal-vs-bidirectional", steps=STEPS)
    assert not e.set_cell(0, "num_heads", 3) and e.table_error
    cleared = []
    e.events.table_error.connect(cleared.append)
    e.set_preset("heads-1-vs-4", steps=STEPS)
    assert e.table_error == "" and cleared == [""]
    assert not e.set_cell(0, "lr", "fast") and e.table_error
    e.set_runs([dict(r) for r in e.rows])
    assert e.table_error == ""
    assert not e.set_cell(0, "lr", "fast") and e.table_error
    assert e.start() and e.table_error == ""  # the runs trained are valid: the old refusal no longer applies
    assert e.wait_idle(120)
