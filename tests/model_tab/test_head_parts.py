"""A real head opened in the Playground carries its parts: q and k before rotation with the rotary base and width
(so the rotate step turns them as the model did), its sliding window, its soft-cap and its K/V group; heads up to
128 columns open. Checked with a hand-made setting of ``Trace.head_setting``'s shape, and with a tiny random Llama
(grouped-query, rotary) built here with transformers, against the model's own rotated q and k and its weights."""

from __future__ import annotations

import os

import numpy as np
import pytest

from app.model_tab.model.playground_head import MAX_DIM, playground_head
from app.playground.model.playground import PlaygroundModel
from attention_core import sliding_window_mask
from tests.tolerance import assert_close

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def hand_rotate(x: np.ndarray, base: float, dims: int) -> np.ndarray:
    out = x.copy()
    half = dims // 2
    for p in range(x.shape[0]):
        for c in range(half):
            t = p * base ** (-2 * c / dims)
            out[p, c] = x[p, c] * np.cos(t) - x[p, c + half] * np.sin(t)
            out[p, c + half] = x[p, c + half] * np.cos(t) + x[p, c] * np.sin(t)
    return out


class HandTrace:
    """A stand-in trace with ``head_setting`` as the library's contract writes it (one layer; 4 heads, 2 K/V)."""

    name = "hand"

    def __init__(self, n: int = 6, d_head: int = 8, window: int | None = 3, softcap: float | None = 30.0,
                 rotary_dims: int | None = 4) -> None:
        rng = np.random.default_rng(1)
        self.q, self.k, self.v = (rng.normal(size=(n, d_head)) for _ in range(3))
        self.tokens = [f"w{i}" for i in range(n)]
        self.window, self.softcap, self.rotary_dims = window, softcap, rotary_dims
        self.masks = [sliding_window_mask(n, window=window) if window else np.tril(np.ones((n, n), dtype=bool))]

    def __len__(self) -> int:
        return len(self.tokens)

    def mask(self, layer: int) -> np.ndarray:
        return self.masks[layer]

    def head_setting(self, layer: int, head: int) -> dict:
        return {"q": self.q, "k": self.k, "v": self.v, "positions": np.arange(len(self)), "rotary_base": 10000.0,
                "rotary_dims": self.rotary_dims, "window": self.window, "softcap": self.softcap,
                "scale": 1 / np.sqrt(self.q.shape[1]), "causal": True, "kv_head": 1, "kv_heads": 2, "heads": 4,
                "note": ""}


def test_a_heads_parts_reach_the_playground_and_its_rotate_step_turns_them():
    trace = HandTrace()
    head = playground_head(trace, 0, 3)  # type: ignore[arg-type]
    assert head.options == {"rotary_base": 10000.0, "rotary_dims": 4, "window": 3, "softcap": 30.0}
    assert (head.kv_head, head.kv_heads, head.heads) == (1, 2, 4)
    assert "K/V head 1 of 2" in head.preset.story and "query heads 2…3" in head.preset.story
    m = PlaygroundModel(preset=None)
    m.set_heads(1)
    m.load_preset(head.preset, head.options)
    assert (m.rotary_base, m.rotary_dims, m.softcap, m.mask_mode, m.window, m.sinks) == (10000.0, 4, 30.0,
                                                                                         "sliding", 3, 0)
    np.testing.assert_array_equal(m.matrices["Q"], trace.q)  # before rotation
    np.testing.assert_allclose(m.result.q_rotated, hand_rotate(trace.q, 10000.0, 4), atol=1e-12)
    np.testing.assert_allclose(m.result.k_rotated, hand_rotate(trace.k, 10000.0, 4), atol=1e-12)
    scaled = hand_rotate(trace.q, 10000.0, 4) @ hand_rotate(trace.k, 10000.0, 4).T / np.sqrt(8)
    np.testing.assert_allclose(m.result.capped, 30 * np.tanh(scaled / 30), atol=1e-12)
    np.testing.assert_array_equal(m.result.mask, sliding_window_mask(6, window=3))
    assert not m.preset_edited and "rotary base 10000" in m.story


def test_heads_up_to_128_columns_open_and_wider_ones_are_refused_with_the_reason():
    assert MAX_DIM == 128
    head = playground_head(HandTrace(d_head=128, window=None, softcap=None, rotary_dims=None), 0, 0)  # type: ignore
    assert head.preset.q.shape == (6, 128) and head.options == {"rotary_base": 10000.0, "rotary_dims": None}
    m = PlaygroundModel(preset=None)
    m.load_preset(head.preset, head.options)
    assert m.matrices["Q"].shape == (6, 128) and m.result.q_rotated.shape == (6, 128)  # nothing cut
    with pytest.raises(ValueError, match="at most 128 columns"):
        playground_head(HandTrace(d_head=130, window=None), 0, 0)  # type: ignore[arg-type]


def test_undo_of_an_opened_head_takes_its_options_back(qapp):
    from PySide6.QtGui import QUndoStack

    from app.model_tab.qt.host import apply_head
    from app.playground.qt.commands import UndoableEdits

    edits = UndoableEdits(PlaygroundModel("cat-sat-mat"), QUndoStack())
    head = playground_head(HandTrace(), 0, 0)  # type: ignore[arg-type]
    assert edits.apply("open head", lambda m: apply_head(m, head))
    assert edits.model.rotary_base == 10000.0 and edits.model.mask_mode == "sliding"
    edits.stack.undo()
    assert edits.model.rotary_base is None and edits.model.softcap is None and edits.model.mask_mode == "none"
    edits.stack.redo()
    assert edits.model.rotary_dims == 4 and edits.model.window == 3 and not edits.model.preset_edited


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A tiny random Llama (4 heads, 2 K/V heads, rotary base 10000), weights drawn large enough that attention
    is far from uniform, saved as safetensors with a small byte-level tokenizer."""
    transformers = pytest.importorskip("transformers")
    import torch

    from tests.pretrained.conftest import _redraw, train_tokenizer

    cfg = transformers.LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                                   intermediate_size=64, max_position_embeddings=64, rms_norm_eps=1e-5,
                                   vocab_size=400, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    _redraw(model, 0)
    folder = tmp_path_factory.mktemp("llama")
    model.save_pretrained(folder, safe_serialization=True)
    train_tokenizer(bos=True).save(str(folder / "tokenizer.json"))
    return folder


def test_a_tiny_llama_head_opens_with_the_models_own_rotation(tiny_llama):
    from attention_core import load_pretrained

    trace = load_pretrained(tiny_llama).trace("The quick brown fox jumps over the lazy dog.")
    if not hasattr(trace, "head_setting"):
        pytest.skip("Trace.head_setting has not landed")
    head = playground_head(trace, 1, 3)
    assert head.options["rotary_base"] == pytest.approx(10000.0)
    assert (head.kv_head, head.kv_heads, head.heads) == (1, 2, 4)
    m = PlaygroundModel(preset=None)
    m.set_heads(1)
    m.load_preset(head.preset, head.options)
    # the Playground's rotation of the head's unrotated q and k gives the q and k the model attended with
    assert_close(m.result.q_rotated, trace.q[1, 3])
    assert_close(m.result.k_rotated, trace.k[1, trace.kv_head(3)])
    assert_close(m.result.weights, trace.attentions[1, 3])
    assert not np.allclose(m.matrices["Q"], trace.q[1, 3], atol=1e-3)  # q arrived before rotation
