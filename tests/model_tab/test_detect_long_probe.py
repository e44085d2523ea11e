"""The Detect view's probe at 4,095 positions (BOS + 2 × 2,047) on a tiny random Llama with 4,096 positions: run off
the caller's thread with progress and Cancel, its scores and losses equal to transformers' eager attention and logits
on the same ids (the reference, sequence by sequence), every window of the picked head's map equal to the slice of
transformers' map, and no T × T map per head ever held (asserted on what the detection keeps and on every attention
chunk computed). The long path also equals the short one (full maps) at a length both can run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("transformers")

from app.model_tab.model.detect_long import ROWS  # noqa: E402
from app.model_tab.model.detect_runs import KINDS, Detection, run_detectors  # noqa: E402
from tests.tolerance import assert_close

S = 2047
N = 1 + 2 * S


@pytest.fixture(scope="module")
def session(long_session):  # conftest's: the 4,096-position Llama, opened for this module
    return long_session


@pytest.fixture(scope="module")
def detected(session):
    a = session.heads
    a.set_probe_length(S)  # no detection yet and the view not shown: kept for the next run
    assert a.probe.tokens == S and not a.detecting
    a.detect()
    assert a.detecting  # detect() returned at once: the probe runs on the session's worker
    progress = []
    a.events.progress.connect(lambda: progress.append(a.detect_progress))
    assert a.wait_idle(300) and a.detection is not None
    return a.detection, progress


@pytest.fixture(scope="module")
def eager(long_llama, detected):
    """transformers' eager attention (float32) and losses on each probe sequence, one at a time (4 × 2 maps of
    4,095² weights would be 1 GB at once): per sequence, every detector's cell weights summed, and the first
    sequence's maps kept for the windows."""
    import torch
    import transformers as tr

    from app.model_tab.model.detect_long import cells

    d, _ = detected
    ref = tr.LlamaForCausalLM.from_pretrained(long_llama, attn_implementation="eager", dtype=torch.float32)
    ref.eval()
    sums = {kind: 0.0 for kind in KINDS}
    losses, first = [], None
    for b, row in enumerate(d.repeat.ids):
        with torch.no_grad():
            out = ref(torch.as_tensor(row[None]), output_attentions=True)
        att = torch.stack(out.attentions, dim=1)[0].numpy()  # (layers, heads, n, n)
        for kind in KINDS:
            q, k = cells(kind, 0, N, S, 1)
            sums[kind] = sums[kind] + att[:, :, q, k].astype(np.float64).sum(axis=-1)
        logp = torch.log_softmax(out.logits[0, :-1].float(), dim=-1)
        losses.append((-logp.gather(-1, torch.as_tensor(row[1:, None]))[:, 0]).numpy())
        if b == 0:
            first = att
        del out, att
    count = {kind: cells(kind, 0, N, S, 1)[0].size * len(d.repeat.ids) for kind in KINDS}
    return {kind: sums[kind] / count[kind] for kind in KINDS}, np.stack(losses), first


def test_the_long_probe_runs_off_the_thread_with_progress(detected, session):
    d, progress = detected
    assert d.is_long and d.seq_len == S and d.positions == N == 4095 and d.offset == 1
    layers = session.model.info.layers
    assert progress[-1] == (4 * layers, 4 * layers) and len(progress) >= 4 * layers  # one per layer run
    assert "4 × 2,047 random tokens" in session.heads.status
    assert session.heads.detect_progress == (0, 0) and not session.heads.detecting


def test_scores_and_losses_equal_transformers_eager(detected, eager):
    d, _ = detected
    scores, losses, _first = eager
    for kind in KINDS:
        assert_close(d.scores[kind].scores, scores[kind], err_msg=kind)
    np.testing.assert_allclose(d.repeat.losses, losses, atol=2e-4, rtol=1e-5)


def test_scrolled_and_zoomed_windows_equal_the_slice_of_the_full_map(detected, eager, session):
    from app.model_tab.model.detect_views import pattern, repeat_curve

    d, _ = detected
    full = eager[2]
    a, probe = session.heads, session.heads.probe
    session.select_head(1, 1)

    def check() -> tuple[int, int, int]:
        q, k, size = probe.window
        p = pattern(a, 1, 1)
        assert p is not None and p.start == (q, k) and p.values.shape == (size, size)
        assert_close(p.values, full[1, 1, q:q + size, k:k + size])
        assert p.labels[0] == f"{d.tokens[q]}@{q}" and p.cols[-1] == f"{d.tokens[k + size - 1]}@{k + size - 1}"
        cv = repeat_curve(a)
        x, y, _ = cv.window_points()
        assert x[0] == max(q, 1) and x[-1] == q + size - 1
        assert_close(y, d.repeat.losses.mean(axis=0)[int(x[0]) - 1:int(x[-1])])
        return q, k, size

    start = 1 + S - 64
    assert check() == (start, 0, 128)  # a new length opens around the second copy's start, keys from the first's
    p = pattern(a, 1, 1)
    assert a.kind == "induction" and len(p.marks) == 64  # key q - S + 1 of the second copy's queries
    assert all(mk == mq - 62 for mq, mk in p.marks) and p.marks[0] == (64, 2)
    probe.scroll(2)  # wheel up: both sides half a window earlier
    assert check() == (start - 64, 0, 128)
    probe.scroll(-3, keys_only=True)  # Shift+wheel down: the keys alone, later
    assert check() == (start - 64, 96, 128)
    probe.zoom(1)  # Ctrl+wheel up: half the size, around the middle
    assert check() == (start - 64 + 32, 96 + 32, 64)
    for _ in range(5):
        probe.zoom(-1)
    assert check()[2] == 512
    probe.set_window(query=N - 100, key=10**6)  # any position, clamped into the probe
    assert check() == (N - 512, N - 512, 512)
    probe.set_window(query=-5, key=-5, size=16)
    assert check() == (0, 0, 16)
    a.set_kind("induction")
    probe.set_window(query=3000, size=128)
    probe.centre_on("induction")  # the keys follow the induction stripe: key q - S + 1 through the middle
    q, k, size = check()
    assert (q + 64) - S + 1 - k == 64 and (64, 64) in pattern(a, 1, 1).marks


def _arrays(obj, seen=None):
    """Every numpy array reachable from a detection's fields (its Trace's and HeadScores' too)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _arrays(x, seen)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _arrays(x, seen)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _arrays(getattr(obj, f.name), seen)


def test_no_map_of_every_position_is_kept_per_head(detected):
    from attention_core.pretrained import LongTraceError, NotKept

    d, _ = detected
    arrays = list(_arrays(d))
    assert arrays and isinstance(d.attentions, NotKept)
    with pytest.raises(LongTraceError):
        np.asarray(d.attentions)
    big = [a.shape for a in arrays if a.size >= N * N]
    # the layers' causal mask (shared by both layers: one bool array) is the only T × T array, and it is no head's
    assert [s for s in big] == [(N, N)] and sum(a.nbytes for a in arrays if a.size >= N * N) == N * N
    assert sum(a.nbytes for a in arrays) < 2 * 2 * N * N * 4 / 10  # far below the full maps of 2 × 2 heads


def test_no_attention_chunk_covers_more_than_rows_queries(session, monkeypatch):
    """Structurally, while it runs: every softmax the long probe computes (the forward pass's chunks, the scores')
    has at most ROWS queries; a short probe's one pass would have (heads, n, n)."""
    import attention_core.pretrained.forward as forward
    import attention_core.pretrained.layers as layers

    shapes = []
    original = layers.attention_weights

    def spy(q, k, *args):
        shapes.append(tuple(q.shape[-2:-1]) + tuple(k.shape[-2:-1]))
        return original(q, k, *args)

    monkeypatch.setattr(layers, "attention_weights", spy)
    monkeypatch.setattr(forward, "attention_weights", spy, raising=False)  # (where the pass names it)
    d = run_detectors(session.model, seq_len=700)
    assert d.is_long and shapes and max(rows for rows, _ in shapes) <= ROWS


def test_the_long_path_equals_the_whole_one(session):
    model = session.model
    for off in ((), ((0, 1),)):
        whole = run_detectors(model, off, seq_len=150, long=False)
        long = run_detectors(model, off, seq_len=150, long=True)
        assert long.is_long and not whole.is_long and isinstance(whole, Detection)
        for kind in KINDS:
            assert_close(long.scores[kind].scores, whole.scores[kind].scores)
        assert_close(long.repeat.losses, whole.repeat.losses)
        if off:
            assert_close(long.clean_repeat.losses, whole.clean_repeat.losses)
        for q, k, size in ((0, 0, 301), (150, 3, 64), (280, 280, 40)):
            assert_close(long.window(1, 0, q, k, size), whole.window(1, 0, q, k, size))


def test_cancel_stops_a_long_probe_before_its_next_layer_and_keeps_the_last_result(session, detected, monkeypatch):
    import threading

    a, model = session.heads, session.model
    before = a.detection
    calls, gate = [], threading.Event()
    forward = model.forward

    def gated(*args, **kwargs):  # the second layer run waits until the test has pressed Cancel
        calls.append(kwargs.get("start_layer"))
        if len(calls) == 2:
            gate.wait(60)
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", gated)
    seen = []
    a.events.progress.connect(lambda: seen.append(a.detect_progress))
    a.set_probe_length(2000)  # a detection exists: the detectors run again at once at the new length
    assert a.detecting and a.probe.tokens == 2000
    while not seen or seen[-1] == (0, 0):
        session.runner.pump(0.01)
    assert seen[-1] == (1, 4 * model.info.layers)
    a.cancel_detect()
    assert not a.detecting and a.detection is before and "cancelled" in a.status and a.detect_progress == (0, 0)
    gate.set()
    assert all(handle.wait(60) for handle in list(a._handles))
    assert len(calls) == 2  # the run under way ended; no layer started after Cancel
    assert a.detection is before and not a.detecting
