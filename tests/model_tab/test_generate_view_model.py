"""The Generate view's Qt-free session on the app's own trained model: Step and Run deliver the library's steps
(checked against a whole trace of the same tokens), Cancel keeps what was made, Undo takes the newest back, sampling
and the cache policy change mid-way without starting again, bad values are refused with the old kept."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from app.common.runner import ThreadRunner
from app.model_tab.model.generate import GenerateSession
from app.model_tab.model.generate_views import cache_grid, distribution, evicted_positions, grown_map, ranges_text
from app.model_tab.model.session import InspectSession
from tests.tolerance import assert_close


@pytest.fixture
def gen(own_model):
    session = InspectSession(runner=ThreadRunner())
    session.load(own_model)
    assert session.wait_idle(120) and session.trace is not None
    g = GenerateSession(session)
    yield g
    g.shutdown()
    session.shutdown()


def made(g, n):
    assert g.run(n)
    assert g.wait_idle(120)
    return g.steps


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_steps_are_the_models_greedy_tokens_and_undo_takes_the_newest_back(gen):
    steps = made(gen, 3)
    assert len(steps) == 3 and not gen.running
    model = gen.model
    ids = list(gen.prompt_ids)
    assert ids == [int(i) for i in model.ids_of(gen.effective_prompt)[0]]
    for s in steps:  # the reference: a whole forward of the tokens so far, no cache
        logits = model.trace(ids).logits[-1].astype(np.float64)
        assert s.id == int(np.argmax(logits)) and s.query_position == len(ids) - 1
        assert s.probability == pytest.approx(softmax(logits)[s.id], abs=1e-5)
        ids.append(s.id)
    assert gen.ids() == ids
    third = steps[-1].id
    assert gen.undo() and len(gen.steps) == 2 and gen.ids() == ids[:-1]
    made(gen, 1)
    assert gen.steps[-1].id == third  # the same cache and state: greedy makes the same token again
    assert "made" in gen.status


def test_cancel_stops_a_run_and_keeps_the_tokens_made(gen, monkeypatch):
    model = gen.model
    real = model.decoder
    gate = threading.Event()

    def slow(*args, **kwargs):  # the second token waits until the test has pressed Cancel
        dec = real(*args, **kwargs)
        step = dec.step

        def gated():
            if len(dec.generation.steps) >= 1:
                gate.wait(30)
            return step()
        monkeypatch.setattr(dec, "step", gated)
        return dec

    monkeypatch.setattr(model, "decoder", slow)
    assert gen.run(5)
    while len(gen.steps) < 1:
        gen.host.runner.pump(0.05)
    gen.cancel()
    assert gen.cancelling
    gate.set()
    assert gen.wait_idle(60)
    assert 1 <= len(gen.steps) <= 2 and not gen.running
    assert gen.status.startswith("Cancelled after")
    made(gen, 1)  # and it goes on from there
    assert gen.steps[-1].query_position == gen.steps[-2].query_position + 1


def test_temperature_and_top_k_changed_mid_way_apply_to_the_next_token(gen):
    made(gen, 2)
    gen.set_greedy(False)
    gen.set_temperature("0.5")
    gen.set_top_k("3")
    before = gen.ids()
    made(gen, 1)
    s = gen.steps[-1]
    assert len(gen.steps) == 3 and gen.ids()[:-1] == before  # not started again
    logits = gen.model.trace(before).logits[-1].astype(np.float64)
    raw = softmax(logits)
    for i, _t, p in s.top_raw:
        assert p == pytest.approx(raw[i], abs=1e-5)
    best3 = np.argsort(-logits)[:3]
    cut = softmax(logits[best3] / 0.5)
    got = {int(i): p for i, _t, p in s.top if p > 0}  # the cut tokens are listed with 0
    assert set(got) <= {int(i) for i in best3}
    for j, i in enumerate(best3):
        if int(i) in got:
            assert got[int(i)] == pytest.approx(cut[j], abs=1e-5)
    assert s.id in {int(i) for i in best3}
    rows = distribution(s)
    assert [r[3] for r in rows].count(True) == 1  # the drawn token is marked once


def test_switching_to_sinks_mid_way_keeps_the_policys_positions(gen):
    made(gen, 2)
    gen.set_cache("sinks", window=4, sinks=1)
    made(gen, 1)
    s = gen.steps[-1]
    q = s.query_position
    assert list(s.cache_positions) == [0, *range(q - 2, q + 1)]
    assert s.kl_from_full is not None and s.top_changed in (True, False)
    assert evicted_positions(s) == list(range(1, q - 2))
    info = gen.model.info
    assert s.cache_bytes == 2 * info.layers * info.kv_heads * 4 * info.d_head * 4
    assert s.full_cache_bytes == 2 * info.layers * info.kv_heads * (q + 1) * info.d_head * 4
    grid = cache_grid(s, gen.tokens(), info.kv_heads)
    assert grid.blocked[:, 1:q - 2].all() and not grid.blocked[:, [0, q]].any()
    gen.set_cache("full")
    made(gen, 1)
    assert gen.steps[-1].kl_from_full is None


def test_the_grown_map_holds_each_steps_row_at_its_positions(gen):
    steps = made(gen, 3)
    grown = grown_map(steps, gen.tokens(), 1, 2)
    assert grown is not None and grown.values.shape == (3, steps[-1].query_position + 1)
    for i, s in enumerate(steps):
        np.testing.assert_array_equal(grown.values[i, list(s.cache_positions)], s.attentions[1, 2])
        assert grown.blocked[i, s.query_position + 1:].all()
        # the row equals the last row of a whole trace of the same tokens
        full = gen.model.trace(gen.ids()[:s.query_position + 1])
        assert_close(s.attentions[1, 2], full.attentions[1, 2, -1])


@pytest.mark.parametrize("call, bad", [("set_temperature", "-1"), ("set_temperature", "hot"), ("set_top_k", "-2"),
                                       ("set_top_k", "2.5"), ("set_top_p", "1.5"), ("set_seed", "-3")])
def test_bad_values_are_refused_and_the_old_kept(gen, call, bad):
    attrs = ("temperature", "top_k", "top_p", "seed")
    old = {a: getattr(gen, a) for a in attrs}
    with pytest.raises(ValueError):
        getattr(gen, call)(bad)
    assert {a: getattr(gen, a) for a in attrs} == old


def test_a_sinks_cache_needs_fewer_sinks_than_its_window(gen):
    with pytest.raises(ValueError, match="fewer than the window"):
        gen.set_cache("sinks", window=4, sinks=4)
    with pytest.raises(ValueError):
        gen.run(0)
    assert gen.cache == "full" and (gen.window, gen.sinks) == (16, 4)


def test_ranges_are_written_short():
    assert ranges_text([0, 1, 7, 8, 9, 10]) == "0–1, 7–10" and ranges_text([3]) == "3" and ranges_text([]) == ""


def test_a_policy_switched_during_a_run_applies_from_the_next_token(gen, monkeypatch):
    """While a run is under way the decoder is the worker's: the new policy waits and is applied before the next token
    the worker starts."""
    model = gen.model
    real = model.decoder
    gate = threading.Event()

    def slow(*args, **kwargs):
        dec = real(*args, **kwargs)
        step = dec.step

        def gated():
            if len(dec.generation.steps) == 1:
                gate.wait(30)
            return step()
        monkeypatch.setattr(dec, "step", gated)
        return dec

    monkeypatch.setattr(model, "decoder", slow)
    assert gen.run(3)
    while len(gen.steps) < 1:
        gen.host.runner.pump(0.05)
    gen.set_cache("window", window=3)
    assert gen.running and gen.cache == "window"
    gate.set()
    assert gen.wait_idle(60) and len(gen.steps) == 3
    # the first token, and the second (being made when the switch came), with the full cache; the third with the window
    assert [s.kl_from_full is None for s in gen.steps] == [True, True, False]
    q = gen.steps[2].query_position
    assert list(gen.steps[2].cache_positions) == [q - 2, q - 1, q]


def test_the_status_after_a_second_run_names_the_whole_count_too(gen):
    made(gen, 2)
    assert gen.status.startswith("2 tokens made") and "in all" not in gen.status
    made(gen, 1)  # the text now shows 3 new tokens: "1 token made" alone read as the whole
    assert gen.status.startswith("1 token made") and "3 in all" in gen.status
