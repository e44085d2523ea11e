"""The Experiments tab in the real window (QtRunner): a short causal-vs-bidirectional experiment drawn as curves
whose legend names the differing options, a final table, the two grids and the per-head entropy difference equal
to figures computed here from the sessions' reports, "What to see" from the model's measured lines, a bad cell
refused next to the table, Cancel, the exports (PNG, SVG, CSV), the theme, and the window's close stopping a run."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from qt_settle import settled

STEPS = 20


@pytest.fixture
def tab(window, qtbot):
    t = window.experiments.show()
    qtbot.waitExposed(t)
    yield t
    window.experiments.shutdown()
    window.set_theme("light", save=False)


def _run(tab, qtbot, steps=STEPS):
    m = tab.model
    m.set_preset("causal-vs-bidirectional", steps=steps)
    assert tab.plots.empty_text().startswith("Run trains these runs")  # not bare axes before a run
    tab.run_button.click()
    assert m.is_running and not tab.run_button.isEnabled() and tab.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: not m.is_running, timeout=90_000)
    settled(qtbot, tab)  # the coalesced redraws
    return m


def _last_eval(session):
    return [r for r in session.history.reports() if r.evaluated][-1]


def test_an_experiment_runs_and_every_view_shows_the_measured_figures(window, tab, qtbot, tmp_path):
    assert window.tabs.tabText(window.tabs.indexOf(tab)) == "Experiments"
    assert window.tabs.indexOf(tab) == window.tabs.indexOf(window.training_panel) + 1
    m = _run(tab, qtbot)
    assert m.run_state == "finished" and tab.progress_bar.value() == 1000
    assert tab.progress_text() == f"done: {2 * STEPS} / {2 * STEPS} steps"
    # curves: one per run, legend = the option that differs, data = the session's record
    assert tab.plots.legend_texts() == ["causal=yes", "causal=no"] and tab.plots.empty_text() == ""
    for i, s in enumerate(m.sessions):
        reports = s.history.reports()
        x, y = tab.plots.curve_data("loss", i)
        np.testing.assert_allclose(x, [r.step for r in reports[1:]])
        np.testing.assert_allclose(y, [r.loss for r in reports[1:]])
        x, y = tab.plots.curve_data("accuracy", i)
        np.testing.assert_allclose(y, [r.sequence_accuracy for r in reports if r.evaluated])
    # the final table, from the histories
    texts = tab.summary_table.texts()
    for row, s in zip(texts, m.sessions, strict=True):
        last = _last_eval(s)
        reach = next((r.step for r in s.history.reports() if r.evaluated and r.sequence_accuracy >= 0.99), None)
        assert row == ["causal=yes" if s.config.causal else "causal=no",
                       "–" if reach is None else str(reach), f"{last.sequence_accuracy * 100:.1f} %",
                       f"{last.reversal_accuracy * 100:.1f} %", f"{np.mean(last.head_entropy):.2f}",
                       f"{np.max(last.head_task_scores):.2f}"]
    # what to see: the model's measured lines, under the question
    assert m.findings and all(line.split(":")[0] in tab.findings_text() for line in m.findings)
    assert "Question:" in tab.findings_text()
    # the heads side by side: maps of each run's step, entropy per head from the reports
    tab.views.setCurrentWidget(tab.heads)
    settled(qtbot, tab)
    grids = tab.heads.grids
    a, b = (s.history.latest for s in m.sessions)
    np.testing.assert_allclose(grids.grids["a"].values(1, 2), a.probe_weights[1][2])
    np.testing.assert_allclose(grids.grids["b"].values(0, 3), b.probe_weights[0][3])
    ea, eb = _last_eval(m.sessions[0]).head_entropy, _last_eval(m.sessions[1]).head_entropy
    rows = grids.entropy_texts()
    assert len(rows) == ea.size
    for (li, h), row in zip(np.ndindex(ea.shape), rows, strict=True):
        assert row == [f"{ea[li, h]:.2f}", f"{eb[li, h]:.2f}", f"{eb[li, h] - ea[li, h]:+.2f}".replace("-", "−")]
    change = (np.mean(ea) - np.mean(eb)) / np.mean(eb)
    assert f"{change * 100:+.0f} %".replace("-", "−") in grids.claim_label.text()
    # the step slider moves both grids to an earlier step
    tab.heads.slider.setValue(6)
    settled(qtbot, tab)
    assert tab.heads.step_label.text() == f"6 / {STEPS}"
    np.testing.assert_allclose(grids.grids["a"].values(0, 0), m.sessions[0].history[6].probe_weights[0][0])
    # exports: the curves and the grids as images, the final table as CSV
    assert tab.export_curves(tmp_path / "c.png").startswith("Experiment: loss")
    tab.export_curves(tmp_path / "c.svg")
    assert "step 6" in tab.export_heads(tmp_path / "h.png")
    tab.export_summary(tmp_path / "s.csv")
    for name in ("c.png", "c.svg", "h.png"):
        assert (tmp_path / name).stat().st_size > 1000
    with open(tmp_path / "s.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert [r["run"] for r in rows] == ["causal=yes", "causal=no"]
    assert [float(r["mean_head_entropy"]) for r in rows] == [round(float(np.mean(e)), 4) for e in (ea, eb)]
    # the table now holds other runs: the findings say whose they are
    assert tab.model.set_cell(0, "seed", "5")
    assert "What the last experiment showed (Causal vs bidirectional attention: causal=yes, causal=no)" in \
        tab.findings_text()
    # the theme reaches the views
    window.set_theme("dark", save=False)
    assert tab.plots.colors.dark and tab.heads.grids._dark


def test_a_bad_cell_is_refused_next_to_the_table(tab, qtbot):
    table = tab.runs_table
    tab.model.set_preset("causal-vs-bidirectional", steps=30)
    item = table.table.item(0, 3)  # num_heads
    assert item.text() == "4"
    item.setText("3")
    assert table.cell_text(0, "num_heads") == "4"
    assert table.error_label.isVisibleTo(tab) and "must be divisible by num_heads (3)" in table.error_label.text()
    table.table.item(1, 3).setText("2")
    assert table.cell_text(1, "num_heads") == "2" and not table.error_label.isVisibleTo(tab)
    settled(qtbot, tab)  # the legend redraws a few times a second
    assert tab.plots.legend_texts() == ["causal=yes · num_heads=4", "causal=no · num_heads=2"]


def test_cancel_and_closing_the_window_stop_the_runs(window, tab, qtbot):
    m = tab.model
    m.set_preset("causal-vs-bidirectional", steps=5000)
    tab.run_button.click()
    qtbot.waitUntil(lambda: len(m.sessions[0].history) > 3, timeout=30_000)
    tab.cancel_button.click()
    assert m.run_state == "cancelled" and not tab.cancel_button.isEnabled() and tab.run_button.isEnabled()
    assert m.sessions[1].run_state == "empty"
    assert tab.progress_text().startswith("cancelled:")
    tab.run_button.click()
    qtbot.waitUntil(lambda: len(m.sessions[0].history) > 3, timeout=30_000)
    window.close()
    assert not m.is_running and not any(s.is_alive for s in m.sessions)


def test_each_runs_heads_are_scored_and_circled_for_its_own_task(tab, qtbot):
    """Run B trains copy: its grid names the copy score, shows the report's copy scores and circles copy's ideal
    diagonal on the probe, not reversal's anti-diagonal (run A's); the circles are checked against patterns written
    out by hand here."""
    L = 6  # the presets' sequence length
    m = tab.model
    m.set_runs([{"task": "reversal", "steps": 8}, {"task": "copy", "steps": 8}])
    tab.run_button.click()
    qtbot.waitUntil(lambda: not m.is_running, timeout=90_000)
    tab.views.setCurrentWidget(tab.heads)
    settled(qtbot, tab)
    grids = tab.heads.grids.grids
    for side, session, name in (("a", m.sessions[0], "rev"), ("b", m.sessions[1], "copy")):
        snap = session.history.latest
        assert snap.score_name == name
        scores = np.asarray(_last_eval(session).head_task_scores)
        for li, h in np.ndindex(scores.shape):
            assert f"{name} {scores[li, h]:.2f}" in grids[side].stats_text(li, h)
        assert session.config.seq_len == L
        by_hand = {(L + p, L - 1 - p) for p in range(L)} if name == "rev" else {(L + p, p) for p in range(L)}
        assert set(grids[side].marks(0, 0)) == by_hand  # reversal's anti-diagonal, copy's diagonal
