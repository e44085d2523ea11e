"""The causality probe: exactly 0.0 up to t with the causal mask, > 0 without it, for plain attention (presets)
and for tiny models trained each way and saved as checkpoints. References are computed here by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_core import get_preset, probe_attention_causality, probe_checkpoint, probe_model_causality
from attention_core.tiny.checkpoint import CheckpointError, save_model_files
from attention_core.tiny.config import TrainConfig
from attention_core.tiny.training import ReversalTrainer
from tests.tolerance import assert_close

TINY = dict(seq_len=3, vocab_size=6, d_model=8, num_heads=2, num_layers=1, steps=25, train_size=128,
            test_size=8, train_eval_size=4, eval_every=1000)


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attention_by_hand(q, k, v, causal):
    s = q @ k.T / np.sqrt(q.shape[1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    return _softmax_rows(s) @ v


@pytest.mark.parametrize("name", ["cat-sat-mat", "bank-river-loan", "lesson-random-4x8"])
def test_playground_probe_zero_before_with_mask_and_positive_without(name):
    p = get_preset(name)
    for t in range(p.k.shape[0] - 1):
        causal = probe_attention_causality(p.q, p.k, p.v, t, mask="causal", trials=6)
        assert causal.max_change_before == 0.0  # exactly, not approximately
        assert causal.max_change_after > 0.0
        assert not causal.leaks
        open_ = probe_attention_causality(p.q, p.k, p.v, t, mask="none", trials=6)
        assert open_.max_change_before > 0.0 and open_.leaks
        assert open_.to_json() == {"position": t, "max_change_before": open_.max_change_before,
                                   "max_change_after": open_.max_change_after, "causal": False}


def test_playground_probe_matches_a_hand_computation():
    """The same random rows redrawn here, attention computed with numpy by hand: the same largest changes."""
    p = get_preset("lesson-random-4x8")
    t, trials, seed = 1, 3, 7
    for mask in ("causal", "none"):
        got = probe_attention_causality(p.q, p.k, p.v, t, mask=mask, trials=trials, seed=seed)
        rng = np.random.default_rng(seed)
        base = _attention_by_hand(p.q, p.k, p.v, mask == "causal")
        ref = np.zeros(p.q.shape[0])
        for _ in range(trials):
            k2, v2 = p.k.copy(), p.v.copy()
            k2[t + 1:] = rng.standard_normal(k2[t + 1:].shape) * p.k.std()
            v2[t + 1:] = rng.standard_normal(v2[t + 1:].shape) * p.v.std()
            ref = np.maximum(ref, np.abs(_attention_by_hand(p.q, k2, v2, mask == "causal") - base).max(axis=1))
        np.testing.assert_allclose(got.changes, ref, rtol=1e-12, atol=1e-14)
        before = ref[: t + 1].max()
        assert got.max_change_before == pytest.approx(before, abs=1e-14)
        assert got.max_change_after == pytest.approx(ref[t + 1:].max(), rel=1e-12)


def test_playground_probe_refuses_bad_input():
    p = get_preset("cat-sat-mat")
    with pytest.raises(ValueError, match="position"):
        probe_attention_causality(p.q, p.k, p.v, 2)
    with pytest.raises(ValueError, match="mask"):
        probe_attention_causality(p.q, p.k, p.v, 0, mask="padding")
    it = get_preset("it-animal-street")  # 1 query, 3 keys
    with pytest.raises(ValueError, match="as many queries as keys"):
        probe_attention_causality(it.q, it.k, it.v, 0, mask="causal")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model trained each way (25 steps, ~1 s each), saved as checkpoints the app's way."""
    out = {}
    folder = tmp_path_factory.mktemp("probe")
    for causal in (True, False):
        tr = ReversalTrainer(TrainConfig(**TINY, causal=causal))
        tr.run()
        path = folder / f"{'causal' if causal else 'open'}.safetensors"
        save_model_files(path, tr.model, tr.config.to_dict(), step=tr.step_count, probe=tr.probe.tolist())
        out[causal] = (tr, path)
    return out


def test_model_probe_matches_a_hand_computation(trained):
    """Tokens redrawn here the documented way (each one shifted by 1..V-1 mod V), logits by the model."""
    for causal in (True, False):
        tr, _ = trained[causal]
        t, trials, seed = 2, 3, 5
        got = probe_model_causality(tr.model, tr.probe, t, causal=causal, trials=trials, seed=seed)
        x = tr.probe[:-1].clone().reshape(1, -1)
        mask = torch.tril(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool)) if causal else None
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            base = tr.model(x, mask)[0]
            ref = torch.zeros(x.shape[1], dtype=torch.float64)
            for _ in range(trials):
                y = x.clone()
                y[0, t + 1:] = (y[0, t + 1:] + torch.randint(1, 6, (x.shape[1] - t - 1,), generator=gen)) % 6
                assert bool((y[0, t + 1:] != x[0, t + 1:]).all())  # every later token really changed
                ref = torch.maximum(ref, (tr.model(y, mask)[0] - base).abs().amax(-1)[0].double())
        # the largest change of float32 outputs: judged at the outputs' magnitude
        assert_close(got.changes, ref.numpy(), scale=float(base.abs().max()), dtype=np.float32)


def test_checkpoint_trained_with_mask_is_exactly_zero_before_t(trained):
    _, path = trained[True]
    for t in range(5):  # the model reads 2L = 6 positions: t in 0..4
        r = probe_checkpoint(path, t, trials=6)
        assert r.causal is True
        assert r.max_change_before == 0.0
        assert r.max_change_after > 0.0
        assert np.all(r.changes[: t + 1] == 0.0) and r.changes[t + 1] > 0.0


def test_checkpoint_trained_without_mask_leaks(trained):
    _, path = trained[False]
    r = probe_checkpoint(path, trials=6)  # default position: SEP, L = 3
    assert r.position == 3 and r.causal is False
    assert r.max_change_before > 1e-3  # an earlier position read the replaced future
    assert r.max_change_after > 0.0


def test_untrained_model_without_mask_leaks_too():
    torch.manual_seed(0)
    from attention_core import TinyTransformer

    model = TinyTransformer(6, d_model=8, num_heads=2, num_layers=1, max_seq_len=7)
    seq = torch.tensor([2, 3, 4, 1, 4, 3, 2])
    assert probe_model_causality(model, seq, 1, causal=False).max_change_before > 0.0
    assert probe_model_causality(model, seq, 1, causal=True).max_change_before == 0.0


def test_checkpoint_probe_refuses_bad_files(tmp_path, trained):
    with pytest.raises(CheckpointError, match="no such file"):
        probe_checkpoint(tmp_path / "missing.safetensors")
    bad = tmp_path / "x.safetensors"
    bad.write_bytes(b"not a model")
    with pytest.raises(CheckpointError):
        probe_checkpoint(bad)
    with pytest.raises(ValueError, match="position"):
        probe_checkpoint(trained[True][1], 5)
