"""Experiments in the core: runs built from presets and files (bad ones refused with the run and reason), the
options that differ, and the summary table against the histories it summarises."""

from __future__ import annotations

import csv
import dataclasses
import json

import numpy as np
import pytest

from attention_core.tiny.experiments import (
    EXPERIMENT_PRESETS,
    SUMMARY_COLUMNS,
    Experiment,
    build_runs,
    differing_options,
    entropy_change,
    first_step_reaching,
    load_runs_file,
    summary_row,
    write_summary_csv,
)


def test_presets_have_the_named_ids_and_differ_in_their_option():
    assert set(EXPERIMENT_PRESETS) == {"positions", "causal-vs-bidirectional", "heads-1-vs-4", "dropout", "tasks"}
    expected = {"positions": "positional", "causal-vs-bidirectional": "causal", "heads-1-vs-4": "num_heads",
                "dropout": "attention_dropout", "tasks": "task"}
    for pid, option in expected.items():
        runs = EXPERIMENT_PRESETS[pid].build()
        assert 2 <= len(runs) <= 6
        assert option in differing_options([r.config for r in runs])
        assert len({getattr(r.config, option) for r in runs}) == len(runs)
    heads = EXPERIMENT_PRESETS["heads-1-vs-4"].build()
    assert {r.config.d_model for r in heads} == {32}  # same width: the split is the only change
    assert [r.name for r in EXPERIMENT_PRESETS["tasks"].build()] == ["reversal", "copy", "sort", "induction"]


def test_bad_runs_are_refused_with_the_run_and_reason(tmp_path):
    with pytest.raises(ValueError, match="2-6 runs"):
        build_runs([{"causal": True}])
    with pytest.raises(ValueError, match="run 2: unknown option"):
        build_runs([{}, {"heads": 2}])
    with pytest.raises(ValueError, match="run 1: .*dropout"):
        build_runs([{"attention_dropout": 2.0}, {}])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not JSON"):
        load_runs_file(bad)
    bad.write_text(json.dumps({"runs": "x"}))
    with pytest.raises(ValueError, match="expected"):
        load_runs_file(bad)


def test_file_runs_get_names_from_what_differs(tmp_path):
    f = tmp_path / "runs.json"
    f.write_text(json.dumps({"base": {"steps": 5}, "runs": [{"positional": "rotary"}, {"positional": "none",
                                                                                     "seed": 3}]}))
    runs = load_runs_file(f)
    assert [r.name for r in runs] == ["positional=rotary · seed=0", "positional=none · seed=3"]
    assert all(r.config.steps == 5 for r in runs)


def test_summary_rows_follow_the_histories(tmp_path):
    runs = build_runs([{"causal": True}, {"causal": False}], {"steps": 30, "test_size": 100})
    experiment = Experiment(runs)
    seen = [(i, r.step) for i, r in experiment.reports()]
    assert seen[0] == (0, 0) and seen[-1] == (1, 30) and experiment.finished
    rows = experiment.summary_rows()
    for row, trainer in zip(rows, experiment.trainers, strict=True):
        history = trainer.history
        last = history[-1]
        assert row["sequence_accuracy"] == round(last.sequence_accuracy, 4)
        assert row["steps_to_99"] == next((r.step for r in history if r.evaluated and r.sequence_accuracy >= 0.99),
                                          None)
        assert row["mean_head_entropy"] == round(float(np.mean(last.head_entropy)), 4)
        assert row["best_task_score"] == round(float(np.max(last.head_task_scores)), 4)
    assert first_step_reaching(experiment.trainers[0].history) == rows[0]["steps_to_99"]
    a, b = (t.history[-1] for t in experiment.trainers)
    assert entropy_change(b, a) == pytest.approx(
        (np.mean(a.head_entropy) - np.mean(b.head_entropy)) / np.mean(b.head_entropy))
    write_summary_csv(tmp_path / "s.csv", rows)
    with open(tmp_path / "s.csv") as fh:
        table = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert tuple(table[0]) == SUMMARY_COLUMNS and [t["run"] for t in table] == ["causal=yes", "causal=no"]


def test_a_figure_is_rounded_once_for_the_table_and_to_four_decimals_in_the_csv(tmp_path):
    """A mean head entropy of 0.565003 showed as 0.56 in the final table: the row had been rounded to 0.565 first
    (binary 0.56499...). Exact rows (``exact=True``) keep the value; the CSV still gets 4 decimals."""
    runs = build_runs([{"seed": 0}, {"seed": 1}], {"steps": 2, "test_size": 50})
    experiment = Experiment(runs)
    for _ in experiment.reports():
        pass
    history = list(experiment.trainers[0].history)
    last = history[-1]
    history[-1] = dataclasses.replace(last, head_entropy=np.full_like(np.asarray(last.head_entropy), 0.565003))
    exact, rounded = summary_row(runs[0], history, exact=True), summary_row(runs[0], history)
    assert exact["mean_head_entropy"] == pytest.approx(0.565003) and f"{exact['mean_head_entropy']:.2f}" == "0.57"
    assert rounded["mean_head_entropy"] == 0.565
    write_summary_csv(tmp_path / "s.csv", [exact])
    with open(tmp_path / "s.csv") as fh:
        row = next(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert row["mean_head_entropy"] == "0.565" and row["sequence_accuracy"] == str(round(last.sequence_accuracy, 4))
