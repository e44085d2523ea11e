"""One name per loss figure in the Detect view. The scan's caption said "loss on the repeat (2nd copy): 19.46 nats with
every head on" beside the curve's "second copy 19.95 nats": two numbers for what read as one quantity. They are two:
the curve's is the mean over the probe's four sequences, the scan's the first sequence alone. Each is now named for
what it is, and each name goes with one number (checked against ``repeated_tokens`` independently)."""

from __future__ import annotations

import re

import pytest

from app.model_tab.model.detect_runs import BATCH, SEED
from app.model_tab.model.session import InspectSession


@pytest.fixture(scope="module")
def measured(induction_model):
    s = InspectSession()
    s.load(induction_model)
    assert s.wait_idle(60)
    s.heads.detect()
    assert s.heads.wait_idle(60)
    assert s.heads.start_scan() and s.heads.wait_idle(60)
    yield s
    s.shutdown()


def _plain(html_text: str) -> str:
    return re.sub(r"<[^>]+>", "", html_text).replace("━", "").replace("●", "").replace("╌", "")


def test_the_curve_and_the_scan_name_their_second_copy_losses_apart(measured, qtbot):
    from app.model_tab.qt.detect_maps import LossCurveView, ScanPanel
    from attention_core.phenomena import repeated_tokens

    four = repeated_tokens(measured.model, seed=SEED, batch=BATCH)
    one = repeated_tokens(measured.model, seed=SEED, batch=1)
    assert abs(four.second_half_loss - one.second_half_loss) > 0.005  # the premise: two different numbers
    curve, scan = LossCurveView(measured), ScanPanel(measured)
    for w in (curve, scan):
        qtbot.addWidget(w)
    curve.redraw()
    scan.redraw()
    key, caption = " ".join(_plain(curve.caption.text()).split()), scan.caption.text()
    assert f"second copy {four.second_half_loss:.2f} nats (mean of {BATCH} sequences)" in key
    assert f"first copy {four.first_half_loss:.2f}" in key
    assert f"Loss on the second copy of sequence 1: {one.second_half_loss:.2f} nats with every head on" in caption
    assert scan.measure_box.currentText() == "second copy of sequence 1"
    # each name with one number: the scan's never says "mean of", the curve's never "sequence 1"
    assert "sequence 1" not in key and "mean of" not in caption and "2nd copy" not in caption
