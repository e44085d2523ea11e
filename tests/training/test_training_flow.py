"""The Training tab's Flow view and causality probe, in the real window (offscreen): every line the canvas drew is
read back (``FlowCanvas.drawn``) and compared with ``probe_attention`` on a model rebuilt from the recorded
parameters; the probe's bars with a hand check of the causal mask's exact zeros."""

from __future__ import annotations

import numpy as np
import pytest
from flow_drawing import drawn_weights
from qt_settle import settled

from tests.tolerance import assert_close

TINY = dict(seq_len=3, vocab_size=6, d_model=8, num_heads=2, num_layers=2, steps=6, train_size=64, test_size=16,
            train_eval_size=4, eval_every=3)


@pytest.fixture
def trained_panel(finish_run):
    from attention_core.tiny.config import TrainConfig

    return finish_run(TrainConfig(**TINY))


def reference_maps(session, index):
    from app.training.model.tools import model_from_params
    from attention_core.tiny.analysis import probe_attention

    snap = session.history[index]
    model = model_from_params(session.model_config, snap.params)
    import torch

    return probe_attention(model, torch.tensor(snap.probe), True)


def test_training_flow_follows_scrubbing_and_the_layer_then_the_probe(trained_panel, qtbot, tmp_path):
    p, s = trained_panel, trained_panel.session
    p.tabs.setCurrentWidget(p.flow)
    qtbot.waitExposed(p.flow)
    n = 2 * TINY["seq_len"]
    for index in (len(s.history) - 1, 0, 3):
        s.seek(index)
        settled(qtbot)  # the view redraws at most once a frame
        for layer in (0, 1):
            p.flow.layer_combo.setCurrentIndex(layer)
            ref = reference_maps(s, index)[layer]
            got = drawn_weights(p.flow.canvas, 2, n, n)
            assert_close(got, ref)
            assert f"layer {layer + 1} at step {s.history[index].step}" in p.flow.title_label.text()
        # causal: no line ever goes to a later position
        assert all(d.key <= d.query for d in p.flow.canvas.drawn)
    title = p.flow.export(tmp_path / "training-flow.png")
    assert f"layer 2 at step {s.history[3].step}" in title and "reversal task" in title
    # with a model's heads and layers, neither new tab widens the column (Try it sets its minimum width)
    for view in (p.flow, p.causality):
        assert view.minimumSizeHint().width() <= p.tryit.minimumSizeHint().width()
    s.go_live()
    settled(qtbot)
    check_causality_view(p, qtbot, tmp_path)


def check_causality_view(p, qtbot, tmp_path):
    """The Training tab's causality probe (on the same run: training one costs seconds)."""
    s, view = p.session, p.causality
    p.tabs.setCurrentWidget(view)
    qtbot.waitExposed(view)
    assert view.position_spin.value() == TINY["seq_len"]  # the SEP position by default
    assert view.position_spin.maximum() == 2 * TINY["seq_len"] - 2
    view.position_spin.setValue(2)
    view.trials_spin.setValue(5)
    assert view.run()
    qtbot.waitUntil(lambda: view.model.current and not view.busy, timeout=20_000)
    r = view.model.result
    assert r.step == s.history[-1].step and r.probe.position == 2 and r.probe.trials == 5
    heights = view.chart.heights
    assert np.all(heights[:3] == 0.0) and np.all(heights[3:] > 0.0)  # the causal mask: exactly 0 up to t
    assert "0 (exactly)" in view.numbers_label.text()
    assert "exactly 0" in view.meaning_label.text()
    # the grid is scrubbed to step 0: the probe follows it
    s.seek(0)
    qtbot.waitUntil(lambda: view.model.current and not view.busy, timeout=20_000)
    assert view.model.result.step == 0 and np.all(view.chart.heights[:3] == 0.0)
    title = view.export(tmp_path / "probe.svg")
    assert "step 0" in title and "causal mask" in title
    # refused input shows next to the controls
    view.model.position = 99
    assert view.model.job() is None and "position must be in 0..4" in view.error_label.text()
    assert view.error_label.isVisibleTo(view)
