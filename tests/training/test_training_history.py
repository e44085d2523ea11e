"""The Training session's Qt-free parts: snapshots, history series, playback cursor, comparisons, try-it generation."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from app.training.model.cursor import PlaybackCursor
from app.training.model.history import Snapshot, TrainingHistory, head_metrics, mirrored_cells
from app.training.model.tools import (
    eta_seconds,
    extend_run,
    format_eta,
    greedy_with_attention,
    parse_tokens,
    trainer_from_checkpoint,
)
from tests.tolerance import assert_close

L = 3


def fake_report(step: int, *, evaluated: bool = True, seq: float = 0.0, wall: float | None = None,
                weights: list[np.ndarray] | None = None) -> SimpleNamespace:
    n = 2 * L
    if weights is None:
        rng = np.random.default_rng(step)
        w = rng.random((2, n, n))
        weights = [w / w.sum(-1, keepdims=True)]
    return SimpleNamespace(step=step, loss=1.0 / (step + 1), train_accuracy=step / 10, evaluated=evaluated,
                           test_loss=2.0 / (step + 1), reversal_accuracy=min(1.0, step / 5), sequence_accuracy=seq,
                           train_sequence_accuracy=seq, head_reversal_scores=np.full((1, 2), step / 10),
                           probe_weights=weights, wall_seconds=step * 0.1 if wall is None else wall)


def snap(step: int, **kw) -> Snapshot:
    return Snapshot.from_report(fake_report(step, **kw), [2, 3, 4, 1, 4, 3, 2], L)


def test_history_records_in_order_and_builds_series():
    h = TrainingHistory()
    assert h.latest is None and len(h) == 0
    assert h.add(snap(0))
    assert h.add(snap(1, evaluated=False))
    assert h.add(snap(2, seq=0.995))
    assert not h.add(snap(2)), "a step already recorded is ignored"
    assert not h.add(snap(1))
    assert [s.step for s in h] == [0, 1, 2]
    s = h.series()
    np.testing.assert_array_equal(s["step"], [0, 1, 2])
    np.testing.assert_array_equal(s["eval_step"], [0, 2])
    assert s["sequence_accuracy"].tolist() == [0.0, 0.995]
    assert h.first_step_reaching(0.99) == 2 and h.first_step_reaching(0.999) is None
    assert h.index_of_step(2) == 2
    with pytest.raises(ValueError):
        h.index_of_step(7)
    steps, rev = h.head_series("reversal")
    assert steps.tolist() == [0, 1, 2] and rev.shape == (3, 1, 2)
    assert h.head_series("focus", upto=1)[1].shape == (2, 1, 2)
    with pytest.raises(ValueError):
        h.head_series("nonsense")
    v = h.version
    h.replace_latest(h.latest.with_probe([5, 6, 7, 1, 7, 6, 5], h.latest.probe_weights))
    assert h.version > v and h.latest.labels == ["5", "6", "7", "SEP", "7", "6"]
    with pytest.raises(ValueError):
        h.replace_latest(h[0])


def test_compare_reports_change_per_head():
    h = TrainingHistory()
    n = 2 * L
    uniform = [np.full((2, n, n), 1.0 / n)]
    onehot = np.zeros((2, n, n))
    onehot[:, :, 0] = 1.0
    h.add(snap(0, weights=uniform))
    h.add(snap(5, weights=[onehot]))
    rows = h.compare(0, 1)
    assert [(r.layer, r.head) for r in rows] == [(0, 0), (0, 1)]
    r = rows[1]
    assert r.entropy_before == pytest.approx(math.log(n)) and r.entropy_after == pytest.approx(0.0)
    assert r.focus_before == pytest.approx(1.0 / n) and r.focus_after == pytest.approx(1.0)
    assert r.entropy_change == pytest.approx(-math.log(n))
    assert r.reversal_change == pytest.approx(0.5)


def test_head_metrics_use_only_decoder_queries():
    n = 2 * L
    w = np.zeros((1, n, n))
    w[0, :L, :] = 1.0 / n  # encoder rows uniform: must not count
    w[0, L:, 0] = 1.0  # decoder rows one-hot
    ent, foc = head_metrics([w], L)
    assert ent.shape == (1, 1) and ent[0, 0] == pytest.approx(0.0) and foc[0, 0] == pytest.approx(1.0)
    assert mirrored_cells(3) == [(3, 2), (4, 1), (5, 0)]


def test_cursor_follows_live_until_scrubbed_and_replays_at_speed():
    c = PlaybackCursor()
    c.set_length(5)
    assert c.follow_live and c.tick(0.0) == 4
    c.set_length(9)
    assert c.tick(0.0) == 8
    c.seek(2)
    c.set_length(12)
    assert not c.follow_live and c.tick(1.0) == 2
    c.seek(99)
    assert c.index == 11
    c.speed = 2.0
    c.seek(0)
    c.play(now=10.0)
    assert c.tick(10.4) == 0
    assert c.tick(11.0) == 2
    assert c.tick(13.6) == 7 and c.playing
    assert c.tick(100.0) == 11 and not c.playing, "a replay stops at the last snapshot"
    c.play(now=0.0)
    assert c.index == 0, "play at the end starts over"
    c.go_live()
    assert c.follow_live and c.tick(0.0) == 11


def test_cursor_real_time_replay_follows_recorded_wall_clock():
    h = TrainingHistory()
    for step, wall in [(0, 0.0), (1, 0.1), (2, 0.15), (3, 1.0), (4, 1.05)]:
        h.add(snap(step, wall=wall))
    c = PlaybackCursor()
    c.set_length(len(h))
    c.speed = None
    c.seek(0)
    c.play(now=0.0, history=h)
    assert c.tick(0.12, h) == 1
    assert c.tick(0.5, h) == 2
    assert c.tick(1.02, h) == 3
    assert c.tick(2.0, h) == 4 and not c.playing


def test_parse_tokens_explains_what_is_wrong():
    assert parse_tokens("3 7, 2", 3, 16) == [3, 7, 2]
    with pytest.raises(ValueError, match="exactly 3 tokens"):
        parse_tokens("3 7", 3, 16)
    with pytest.raises(ValueError, match="reserved"):
        parse_tokens("3 1 2", 3, 16)
    with pytest.raises(ValueError, match="reserved"):
        parse_tokens("3 16 2", 3, 16)
    with pytest.raises(ValueError, match="whole numbers"):
        parse_tokens("a b c", 3, 16)


def test_eta():
    assert eta_seconds(10, 30, 0.5) == pytest.approx(10.0)
    assert eta_seconds(10, 30, None) is None and eta_seconds(0, 5, float("nan")) is None
    assert format_eta(None) == "ETA –" and format_eta(3.14) == "ETA 3.1 s" and format_eta(75) == "ETA 1 min 15 s"


@pytest.fixture(scope="module")
def tiny_model():
    from attention_core.tiny.model import TinyTransformer

    torch.manual_seed(3)
    return TinyTransformer(vocab_size=10, d_model=16, num_heads=2, num_layers=2, max_seq_len=13).eval()


@given(st.lists(st.integers(2, 9), min_size=1, max_size=6), st.booleans())
def test_greedy_with_attention_matches_core_greedy_reverse(tiny_model, tokens, causal):
    from attention_core.tiny.analysis import greedy_reverse

    r = greedy_with_attention(tiny_model, tokens, causal)
    assert list(r.generated) == greedy_reverse(tiny_model, torch.tensor([tokens]), causal)[0].tolist()
    n = len(tokens)
    assert len(r.step_weights) == n
    for p, per_layer in enumerate(r.step_weights):
        assert per_layer[0].shape == (2, n + 1 + p)
        assert_close(per_layer[1].sum(-1), 1.0, dtype=np.float32)  # float32 weights kept as float64
    vals, blocked = r.matrix(1, 0)
    assert vals.shape == (n, 2 * n) and blocked[0, n + 1:].all() and not blocked[n - 1].any()


def test_with_the_causal_mask_each_step_saw_what_teacher_forcing_sees(tiny_model):
    from attention_core.tiny.analysis import probe_attention

    r = greedy_with_attention(tiny_model, [2, 5, 7, 3], causal=True)
    full = probe_attention(tiny_model, torch.tensor([*r.sequence]), causal=True)
    for p in range(4):
        for li in range(2):
            assert_close(r.step_weights[p][li], full[li][:, 4 + p, : 5 + p], dtype=np.float32)


def test_trainer_from_checkpoint_continues_the_run(tmp_path):
    from attention_core.tiny.checkpoint import load_checkpoint, save_checkpoint
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.training import ReversalTrainer

    cfg = TrainConfig(steps=4, seq_len=4, vocab_size=8, d_model=16, num_heads=2, num_layers=1, test_size=50,
                      train_size=200)
    t = ReversalTrainer(cfg)
    t.run()
    save_checkpoint(tmp_path / "m.safetensors", t.model, extra={"train_config": cfg.to_dict(), "step": 4})
    model, meta = load_checkpoint(tmp_path / "m.safetensors")
    t2 = trainer_from_checkpoint(model, meta)
    assert [r.step for r in t2.history] == [0, 4]
    # a model saved at the end of its run loads finished, in the unit it was saved in (no "1 epochs" -> "N steps")
    assert t2.step_count == 4 and t2.finished and t2.config.steps == 4
    for k, v in t.model.state_dict().items():
        assert torch.equal(v, t2.model.state_dict()[k])
    np.testing.assert_array_equal(t2.history[0].probe_weights[0], t.history[0].probe_weights[0])
    assert t2.history[1].sequence_accuracy == pytest.approx(t.evaluate()["sequence_accuracy"])
    t2.config = extend_run(t2.config)  # what "Continue training" does: one more length of the run
    assert t2.config.steps == 8 and not t2.finished
    t2.step()
    assert t2.step_count == 5
    # trained on a GPU that is not here: continues on the CPU
    save_checkpoint(tmp_path / "g.safetensors", t.model,
                    extra={"train_config": {**cfg.to_dict(), "device": "cuda:7"}, "step": 4})
    t3 = trainer_from_checkpoint(*load_checkpoint(tmp_path / "g.safetensors"))
    assert t3.config.device == "cpu" and t3.step_count == 4
