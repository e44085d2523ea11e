"""Position encodings and attention dropout: rotary against a rotation written out pair by pair (and its
relative-position property), sinusoidal against the formula, no positions = permutation-equivariant, dropout off
at evaluation, and checkpoints that record the options (old ones load with the old defaults)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from attention_core.multihead import MultiHeadAttention
from attention_core.positions import apply_rotary, rotary_angles, sinusoidal_table
from attention_core.tiny.checkpoint import FORMAT, load_checkpoint, save_checkpoint
from attention_core.tiny.model import ModelConfig, TinyTransformer
from tests.tolerance import assert_close


def rotate_by_hand(x: np.ndarray, pos: int, base: float = 10000.0) -> np.ndarray:
    """Each pair (x[2i], x[2i+1]) times the 2x2 rotation by pos * base^(-2i/d)."""
    d = x.shape[-1]
    out = np.empty_like(x)
    for i in range(d // 2):
        theta = pos * base ** (-2 * i / d)
        rot = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
        out[2 * i:2 * i + 2] = rot @ x[2 * i:2 * i + 2]
    return out


def test_rotary_rotates_each_pair():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 8))
    got = apply_rotary(torch.from_numpy(x), rotary_angles(7, 8).double()).numpy()
    expected = np.stack([rotate_by_hand(x[p], p) for p in range(7)])
    assert_close(got, expected, dtype=np.float32)  # the angles are float32 (cast to float64 after)


def test_rotary_scores_depend_only_on_the_offset():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=8), rng.normal(size=8)
    dots = {(m, n): rotate_by_hand(q, m) @ rotate_by_hand(k, n) for m in range(6) for n in range(6)}
    turned = apply_rotary(torch.from_numpy(np.stack([q] * 6)), rotary_angles(6, 8).double()).numpy()
    keys = apply_rotary(torch.from_numpy(np.stack([k] * 6)), rotary_angles(6, 8).double()).numpy()
    np.testing.assert_allclose(turned @ keys.T, [[dots[m, n] for n in range(6)] for m in range(6)], atol=1e-9)
    for m in range(3):
        for n in range(3):
            assert dots[m, n] == pytest.approx(dots[m + 3, n + 3], abs=1e-9)  # same offset, same score
    assert abs(dots[0, 1] - dots[0, 3]) > 1e-3  # a different offset does change it


def test_sinusoidal_table_is_the_formula():
    table = sinusoidal_table(10, 6).numpy()
    for pos in range(10):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert table[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)


def test_rotary_attention_matches_by_hand_scores():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, rotary=True).eval()
    x = torch.randn(1, 5, 8)
    with torch.no_grad():
        _, weights = mha(x, x, x)
    q = (x[0] @ mha.W_q.weight.T + mha.W_q.bias).detach().double().numpy()
    k = (x[0] @ mha.W_k.weight.T + mha.W_k.bias).detach().double().numpy()
    for h in range(2):
        qh = np.stack([rotate_by_hand(q[p, 4 * h:4 * h + 4], p) for p in range(5)])
        kh = np.stack([rotate_by_hand(k[p, 4 * h:4 * h + 4], p) for p in range(5)])
        s = qh @ kh.T / 2.0
        w = np.exp(s - s.max(axis=1, keepdims=True))
        assert_close(weights[0, h].double().numpy(), w / w.sum(axis=1, keepdims=True), dtype=np.float32)
    steps = mha.explain(x[0].numpy())  # the step-by-step view agrees with the module (its float32 q and k)
    assert_close(steps.heads.weights, weights[0].double().numpy(), dtype=np.float32)


def test_no_positions_is_permutation_equivariant_and_learned_is_not():
    tokens = torch.tensor([[3, 5, 7, 9, 11]])
    perm = torch.tensor([4, 2, 0, 3, 1])
    for positional, equivariant in (("none", True), ("learned", False), ("sinusoidal", False), ("rotary", False)):
        torch.manual_seed(0)
        model = TinyTransformer(16, 16, 2, 2, 8, positional=positional).eval()
        out, _ = model(tokens)
        out_perm, _ = model(tokens[:, perm])
        assert torch.allclose(out[:, perm], out_perm, atol=1e-5) == equivariant, positional


def test_attention_dropout_only_while_training():
    torch.manual_seed(0)
    model = TinyTransformer(16, 16, 2, 2, 8, attention_dropout=0.5)
    tokens = torch.randint(2, 16, (4, 8))
    model.eval()
    a, wa = model(tokens)
    b, wb = model(tokens)
    assert torch.equal(a, b) and all(torch.equal(x, y) for x, y in zip(wa, wb, strict=True))
    model.train()
    c, _ = model(tokens)
    d, _ = model(tokens)
    assert not torch.allclose(c, d)  # dropped weights differ from pass to pass
    with pytest.raises(ValueError, match="dropout"):
        TinyTransformer(16, attention_dropout=0.95)


def test_checkpoints_record_the_options(tmp_path):
    torch.manual_seed(0)
    model = TinyTransformer(16, 16, 2, 2, 13, positional="rotary", attention_dropout=0.3)
    save_checkpoint(tmp_path / "m.safetensors", model)
    loaded, meta = load_checkpoint(tmp_path / "m.safetensors")
    assert loaded.config.positional == "rotary" and loaded.config.attention_dropout == 0.3
    x = torch.randint(2, 16, (2, 9))
    assert torch.equal(model.eval()(x)[0], loaded(x)[0])
    sin = TinyTransformer(16, 16, 2, 2, 13, positional="sinusoidal")
    save_checkpoint(tmp_path / "s.safetensors", sin)
    assert torch.equal(sin.eval()(x)[0], load_checkpoint(tmp_path / "s.safetensors")[0](x)[0])


def test_old_checkpoint_loads_with_learned_positions(tmp_path):
    torch.manual_seed(0)
    model = TinyTransformer(16, 16, 2, 2, 13).eval()
    old_config = {"vocab_size": 16, "d_model": 16, "num_heads": 2, "num_layers": 2, "max_seq_len": 13}
    path = tmp_path / "old.safetensors"  # written as version 1 files were, before the new options existed
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path),
              metadata={"format": FORMAT, "format_version": "1", "model_config": json.dumps(old_config),
                        "extra": "{}"})
    loaded, _ = load_checkpoint(path)
    assert loaded.config == ModelConfig(**old_config)
    assert loaded.config.positional == "learned" and loaded.config.attention_dropout == 0.0
    x = torch.randint(2, 16, (2, 9))
    assert torch.equal(model(x)[0], loaded(x)[0])
