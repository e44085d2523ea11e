"""The Training tab's legend said "Hatched cells are the future, blocked by the causal mask" under a run
trained without the causal mask (nothing hatched): it follows the shown run's mask."""

from __future__ import annotations

import dataclasses

from qt_settle import caught_up

from attention_core.tiny.experiments import task_recipe

HATCHED = "blocked by the causal mask"


def test_the_legend_follows_the_runs_mask(finish_run, qtbot):
    cfg = task_recipe("reversal", steps=3, causal=False)
    panel = finish_run(cfg)
    legend = panel.heads.legend_label.text()
    assert panel.session.shown_snapshot.causal is False
    assert HATCHED not in legend and "no causal mask" in legend.lower()
    panel.form.set_config(dataclasses.replace(cfg, causal=True))
    assert panel.session.start(new_run=True)  # a new run with the mask: the hatching and its words are back
    qtbot.waitUntil(lambda: panel.session.run_state == "finished", timeout=60_000)
    caught_up(qtbot, panel.window())
    assert panel.session.shown_snapshot.causal is True
    assert HATCHED in panel.heads.legend_label.text()
