"""The Detect view's Qt-free part (``session.heads``): the detectors against ``head_scores`` and ``repeated_tokens``,
the ideal patterns against ``score_attention`` on hand-made heads, heads switched off against ``forward(ablate=)``,
the ablation scan against ``ablation_scan`` (cancelled too), and everything reset by a new model."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from app.model_tab.model import detect as detect_module
from app.model_tab.model.detect_runs import KINDS, THRESHOLD
from app.model_tab.model.detect_views import (
    head_rows,
    ideal_marks,
    off_html,
    pattern,
    repeat_curve,
    scan_grid,
    score_grid,
)
from app.model_tab.model.session import InspectSession
from app.model_tab.model.views import head_name, off_text
from tests.tolerance import assert_close


def loaded(path) -> InspectSession:
    s = InspectSession()
    s.load(path)
    assert s.wait_idle(60)
    return s


def settled(s: InspectSession) -> None:
    assert s.wait_idle(60) and s.heads.wait_idle(60)
    assert s.wait_idle(60)  # a retrace asked for by a result delivered meanwhile


@pytest.fixture(scope="module")
def session(induction_model):
    s = loaded(induction_model)
    s.set_text("3 8 13 4 9 3 8 13")
    s.heads.detect()
    settled(s)
    yield s
    s.shutdown()


def test_constants_and_names_match_the_library():
    from attention_core.phenomena import KINDS as LIB_KINDS
    from attention_core.phenomena import THRESHOLD as LIB_THRESHOLD

    assert KINDS == LIB_KINDS and THRESHOLD == LIB_THRESHOLD
    assert head_name(5, 1) == "5.1"
    assert off_text([]) == "" and off_text([(5, 5), (5, 1)]) == "2 heads off: 5.1, 5.5"
    assert off_text([(0, 3)]) == "1 head off: 0.3"
    assert off_text([(0, h) for h in range(10)], limit=3).endswith("0.0, 0.1, 0.2 and 7 more")


@pytest.mark.parametrize("offset", [0, 1])
def test_the_circled_cells_are_the_keys_each_detector_scores(offset):
    """A hand-made head that attends exactly to the circled cells scores 1.0 by ``score_attention``; moved one key
    along, 0."""
    from attention_core.phenomena import score_attention

    seq_len = 4
    n = offset + 2 * seq_len
    for kind in KINDS:
        marks = ideal_marks(kind, n, seq_len, offset)
        att = np.zeros((1, 2, n, n))
        att[0, 1, 0, 0] = 1.0
        for q, k in marks:
            att[0, 1, q, k] = 1.0
            att[0, 0, q, max(k - 1, 0) if k else k + 1] = 1.0  # head 0: one key off
        scores = score_attention(kind, att, seq_len, offset)
        assert scores[0, 1] == pytest.approx(1.0) and scores[0, 0] == pytest.approx(0.0), kind
    assert ideal_marks("induction", 8, 4, 0) == [(4, 1), (5, 2), (6, 3), (7, 4)]
    assert ideal_marks("previous-token", 3, 1, 1) == [(1, 0), (2, 1)]
    with pytest.raises(ValueError, match="unknown detector"):
        ideal_marks("copying", 8, 4, 0)


def test_the_detectors_equal_head_scores_and_repeated_tokens(session):
    from attention_core.phenomena import head_scores, repeated_tokens

    a, model = session.heads, session.model
    d = a.detection
    assert d is not None and d.off == () and d.clean_repeat is None
    for kind in KINDS:
        ref = head_scores(model, kind, seed=0, batch=4)
        assert_close(d.scores[kind].scores, ref.scores)
        np.testing.assert_array_equal(d.scores[kind].ids, ref.ids)
    rep = repeated_tokens(model, seed=0, batch=4)
    assert_close(d.repeat.losses, rep.losses)
    assert d.seq_len == 5 and d.attentions.shape == (2, 4, 10, 10)
    assert d.tokens == model.token_strings(rep.ids[0].tolist())
    # this recipe's heads: induction in layer 1, previous-token in layer 0
    a.set_kind("induction")
    assert a.scores() is not None and {li for li, _ in a.heads_above()} == {1}
    grid = score_grid(a)
    assert grid is not None and grid.kind == "weights" and grid.rows == ["0", "1"] and grid.cols == ["0", "1", "2", "3"]
    np.testing.assert_array_equal(grid.values, d.scores["induction"].scores)
    assert set(grid.outlined) == set(d.scores["induction"].heads_above()) and grid.blocked is None
    assert "An induction head" in grid.caption
    rows = head_rows(a)
    assert [r.text.split()[0] for r in rows][:4] == [head_name(*p) for p in a.heads_above()]
    assert all(r.on for r in rows)
    # the curve: the probe's mean loss per predicted position, the halves' means as RepeatTrace says
    cv = repeat_curve(a)
    assert cv is not None
    assert_close(cv.y, rep.losses.mean(axis=0))
    np.testing.assert_array_equal(cv.x, np.arange(1, 10))
    assert cv.first == (1.0, 4.0, pytest.approx(rep.first_half_loss, abs=1e-5))
    assert cv.second == (5.0, 9.0, pytest.approx(rep.second_half_loss, abs=1e-5))
    assert cv.clean is None and "copies from context" in cv.caption


def test_picking_a_detector_changes_the_grid_and_the_circles_not_the_run(session):
    a = session.heads
    d = a.detection
    calls = []
    a.events.detection.connect(lambda: calls.append("run"))
    a.set_kind("previous-token")
    np.testing.assert_array_equal(score_grid(a).values, d.scores["previous-token"].scores)
    p = pattern(a, 0, 2)
    np.testing.assert_array_equal(p.values, d.attentions[0, 2])
    assert p.marks == [(q, q - 1) for q in range(1, 10)] and "0.2: previous-token" in p.title
    assert p.blocked is not None and p.blocked[0, 1] and not p.blocked[1, 0]  # causal
    assert a.detection is d and calls == []
    with pytest.raises(ValueError, match="unknown detector"):
        a.set_kind("copying")
    a.set_kind("induction")


def test_heads_off_retrace_the_text_as_forward_ablate_and_all_back_on_restores_it(session):
    from attention_core.phenomena import head_scores, repeated_tokens, score_attention

    a, model = session.heads, session.model
    original = session.trace
    target = a.heads_above()[0]
    a.toggle(*target)
    assert a.off == (target,)
    settled(session)
    t = session.trace
    assert t is not original and t.ablated == (target,)
    expect = model.forward(t.ids, ablate={target: "zero"}).logits[0].numpy()
    assert_close(t.logits, expect)
    assert not np.allclose(t.logits, original.logits, atol=1e-3)
    assert f"1 head off: {head_name(*target)}" in session.status
    assert f"1 head off: {head_name(*target)}" in off_html(a)
    # the detectors ran again on the model as it is now
    d = a.detection
    assert d.off == (target,)
    out = model.forward(d.repeat.ids, ablate={target: "zero"}, record={"weights"})
    import torch

    att = torch.stack(out.records["weights"], dim=1).numpy()
    assert_close(d.scores["induction"].scores, score_attention("induction", att, 5, 0))
    assert_close(d.repeat.losses, repeated_tokens(model, seed=0, batch=4, ablate={target: "zero"}).losses)
    assert_close(d.clean_repeat.losses, repeated_tokens(model, seed=0, batch=4).losses)
    assert repeat_curve(a).clean is not None and "Every head on" in repeat_curve(a).caption
    assert score_grid(a).blocked[target] and score_grid(a).blocked.sum() == 1
    assert not [r for r in head_rows(a) if (r.layer, r.head) == target][0].on
    # more heads off, then every one back on: the trace is the original one, exactly
    assert a.switch_off_above() == len(a.heads_above())
    settled(session)
    assert set(session.trace.ablated) == set(a.off) >= set(head_scores(model, "induction").heads_above())
    a.switch_all_on()
    settled(session)
    assert a.off == () and session.trace.ablated == ()
    np.testing.assert_array_equal(session.trace.logits, original.logits)
    np.testing.assert_array_equal(session.trace.attentions, original.attentions)
    np.testing.assert_array_equal(a.detection.scores["induction"].scores, head_scores(model, "induction").scores)
    assert "tokens traced" in session.status and "off" not in session.status
    with pytest.raises(ValueError, match="no head 2.0"):
        a.toggle(2, 0)


def test_the_scan_equals_ablation_scan_and_keeps_the_heads_off(session):
    from attention_core.phenomena import ablation_scan

    a, model = session.heads, session.model
    assert a.start_scan()
    settled(session)
    r = a.scan
    ref = ablation_scan(model, session.trace.ids, "zero")
    assert r.scan.completed and r.done == r.total == 8 and r.off == ()
    # changes of float32 losses: judged at the losses' magnitude (tests/tolerance.py)
    assert_close(r.scan.repeat_change, ref.repeat_change, scale=ref.repeat_loss)
    assert_close(r.scan.text_change, ref.text_change, scale=ref.text_loss)
    grid = scan_grid(a)
    assert grid.kind == "signed" and grid.blocked is None
    np.testing.assert_array_equal(grid.values, r.scan.repeat_change)
    a.set_scan_measure("text")
    np.testing.assert_array_equal(scan_grid(a).values, r.scan.text_change)
    a.set_scan_measure("repeat")
    # a head off: the grid says the scan no longer describes the model; a new scan keeps it off (NaN there)
    a.toggle(1, 0)
    settled(session)
    assert "scan again" in scan_grid(a).caption and scan_grid(a).outlined == ((1, 0),)
    a.set_scan_how("mean")
    assert a.start_scan()
    settled(session)
    ref = ablation_scan(model, session.trace.ids, "mean", also_off=[(1, 0)])
    assert_close(a.scan.scan.repeat_change, ref.repeat_change, scale=ref.repeat_loss, equal_nan=True)
    grid = scan_grid(a)
    assert np.isnan(grid.values[1, 0]) and grid.blocked[1, 0] and grid.blocked.sum() == 1
    assert "1 head off: 1.0 (hatched)" in grid.caption and "scan again" not in grid.caption
    a.switch_all_on()
    a.set_scan_how("zero")
    settled(session)
    with pytest.raises(ValueError, match="how must be"):
        a.set_scan_how("resample")
    with pytest.raises(ValueError, match="measure must be"):
        a.set_scan_measure("both")


def test_cancelling_a_scan_keeps_what_it_measured_and_says_so(session, monkeypatch):
    import attention_core.phenomena as phenomena

    a, real = session.heads, phenomena.ablation_scan
    reached, release = threading.Event(), threading.Event()

    def slow(*args, progress, **kw):
        def report(done, total):
            progress(done, total)
            if done == 3:
                reached.set()
                release.wait(20)

        return real(*args, progress=report, **kw)

    monkeypatch.setattr(phenomena, "ablation_scan", slow)
    assert a.start_scan()
    assert reached.wait(20)
    a.cancel_scan()
    assert a.scan_cancelling and "Cancelling" in a.status
    release.set()
    settled(session)
    r = a.scan
    assert not a.scanning and not r.scan.completed and r.done == 3
    assert np.isfinite(r.scan.repeat_change).sum() == 3
    ref = real(session.model, session.trace.ids, "zero")
    assert_close(r.scan.repeat_change.ravel()[:3], ref.repeat_change.ravel()[:3], scale=ref.repeat_loss)
    assert "cancelled after 3 of 8 heads" in scan_grid(a).caption
    assert a.status == "Scan cancelled after 3 of 8 heads."
    # cancelled before its first head: nothing measured (the scan is held at its start, so the cancel lands first)
    started, go = threading.Event(), threading.Event()

    def held(*args, **kw):
        started.set()
        go.wait(20)
        return real(*args, **kw)

    monkeypatch.setattr(phenomena, "ablation_scan", held)
    assert a.start_scan()
    assert started.wait(20)
    a.cancel_scan()
    go.set()
    settled(session)
    assert not a.scan.scan.completed and not np.isfinite(a.scan.scan.repeat_change).any()


def test_detectors_run_when_shown_and_a_new_model_resets_everything(induction_model):
    s = loaded(induction_model)
    a = s.heads
    assert a.detection is None and not a.detecting  # nothing runs until the Detect view is shown
    a.set_shown(True)
    assert a.detecting
    settled(s)
    assert a.detection is not None
    a.toggle(0, 1)
    a.toggle(0, 2)  # while the detectors run for 0.1 alone: they run again for both when that run ends
    settled(s)
    assert a.detection.off == a.off == ((0, 1), (0, 2)) and s.trace.ablated == a.off
    assert a.start_scan()
    s.load(induction_model)  # the same folder again: a new model object, nothing measured on the old one counts
    settled(s)
    assert a.off == () and a.scan is None and s.trace.ablated == ()
    assert a.detection is not None and a.detection.off == ()  # shown: the detectors ran on the new model
    a.cancel_detect()
    assert not a.detecting
    s.shutdown()


def test_without_a_model_nothing_runs():
    s = InspectSession()
    a = s.heads
    a.detect()
    assert not a.detecting and "No model" in a.status
    assert not a.start_scan() and "Trace a text first" in a.status
    assert a.switch_off_above() == 0 and "run the detectors first" in a.status
    assert score_grid(a) is None and pattern(a, 0, 0) is None and repeat_curve(a) is None and scan_grid(a) is None
    assert head_rows(a) == [] and off_html(a) == "Every head is on."
    assert detect_module.HeadsAnalysis is type(a)


def test_the_next_token_list_is_the_stable_argsorts_first_k_even_with_ties():
    """``Trace.top_next`` partitions instead of sorting the whole vocabulary (a retrace per head switched off must
    not stall the window); its order is still ``np.argsort(-p, kind="stable")[:k]``, ties included."""
    from attention_core.pretrained import Trace

    rng = np.random.default_rng(0)
    for _ in range(100):
        t, v = int(rng.integers(1, 7)), int(rng.integers(1, 30))
        logits = rng.integers(-2, 3, size=(t, v)).astype(np.float32)  # many equal probabilities
        trace = Trace("m", np.zeros(t, dtype=np.int64), ["x"] * t, logits, np.zeros((1, 1, t, t)), None)
        for k in (1, 3, 50):
            expect = np.argsort(-trace.probabilities, axis=-1, kind="stable")[:, :min(k, v)]
            assert [[i for _n, i, _p in row] for row in trace.top_next(k)] == expect.tolist()

