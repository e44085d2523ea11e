"""The Playground's modern attention options on the model: each setter refuses a bad value with its reason and keeps
the old one, is one undo step, is saved in a session (an older session opens with every option off), and the result
carries the optional steps — checked against hand computations written here, not against the library."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtGui import QUndoStack

from app.playground.model.playground import PlaygroundModel
from app.playground.model.session_file import load_session, save_session
from app.playground.model.state import MASK_MODES, MAX_DIM, PlaygroundState
from app.playground.qt.commands import UndoableEdits

OPTIONS = ("rotary_base", "rotary_dims", "alibi", "softcap", "window", "sinks", "num_kv_heads", "block_q", "block_k")


def options_of(m: PlaygroundModel) -> dict:
    return {name: getattr(m, name) for name in OPTIONS}


def hand_rotate(x: np.ndarray, base: float, dims: int) -> np.ndarray:
    """Rotate-half rotary written out column pair by column pair (the layout of Hugging Face's Llama)."""
    out = x.copy()
    half = dims // 2
    for p in range(x.shape[0]):
        for c in range(half):
            theta = p * base ** (-2 * c / dims)
            a, b = x[p, c], x[p, c + half]
            out[p, c] = a * np.cos(theta) - b * np.sin(theta)
            out[p, c + half] = b * np.cos(theta) + a * np.sin(theta)
    return out


@pytest.fixture
def edits(qapp):
    return UndoableEdits(PlaygroundModel("lesson-random-4x8"), QUndoStack())


REFUSALS = [
    ("a window of 0", lambda m: m.set_window(0), "window"),
    ("negative sinks", lambda m: m.set_window(2, -1), "sinks"),
    ("a soft-cap of 0", lambda m: m.set_softcap(0), "soft-cap"),
    ("a negative soft-cap", lambda m: m.set_softcap(-3.0), "soft-cap"),
    ("a soft-cap of nan", lambda m: m.set_softcap(float("nan")), "soft-cap"),
    ("kv heads not dividing heads", lambda m: (m.set_heads(4), m.set_kv_heads(3)), "divide"),
    ("zero kv heads", lambda m: (m.set_heads(4), m.set_kv_heads(0)), "divide"),
    ("odd rotary dims", lambda m: m.set_rotary(10000.0, 3), "even"),
    ("rotary dims wider than d_k", lambda m: m.set_rotary(10000.0, 10), "d_k"),
    ("rotary on with an odd d_k", lambda m: (m.set_dim("d_k", 5), m.set_rotary(10000.0)), "odd"),
    ("a rotary base of 0", lambda m: m.set_rotary(0.0), "base"),
    ("a query block of 0", lambda m: m.set_blocks(0, 2), "block"),
    ("a key block of 0", lambda m: m.set_blocks(2, 0), "block"),
    ("ALiBi given a number", lambda m: m.set_alibi(2), "ALiBi"),
]


@pytest.mark.parametrize("case", [c[0] for c in REFUSALS])
def test_a_bad_value_is_refused_with_its_reason_and_the_old_value_kept(case):
    _, bad, word = next(c for c in REFUSALS if c[0] == case)
    m = PlaygroundModel("lesson-random-4x8")
    m.set_window(2, 1)
    m.set_softcap(5.0)
    m.set_rotary(500.0, 4)
    m.set_blocks(3, 1)
    with pytest.raises(ValueError, match=word):
        bad(m)
    assert (m.window, m.sinks, m.softcap, m.rotary_base, m.rotary_dims, m.block_q, m.block_k) == \
        (2, 1, 5.0, 500.0, 4, 3, 1)
    assert m.num_kv_heads is None and m.alibi is False


def test_changing_d_k_that_breaks_rotary_is_refused_and_kept():
    m = PlaygroundModel("lesson-random-4x8")
    m.set_rotary(10000.0, 6)
    with pytest.raises(ValueError, match="d_k"):
        m.set_dim("d_k", 4)  # 6 rotating columns no longer fit
    assert m.dims["d_k"] == 8 and m.rotary_dims == 6
    m.set_rotary(10000.0)  # all of d_k: any even d_k fits, an odd one does not
    m.set_dim("d_k", 6)
    with pytest.raises(ValueError, match="odd"):
        m.set_dim("d_k", 5)
    assert m.dims["d_k"] == 6 and m.rotary_base == 10000.0 and m.rotary_dims is None


SETTERS = [
    ("rotary", lambda m: m.set_rotary(10000.0, 4)),
    ("alibi", lambda m: m.set_alibi(True)),
    ("softcap", lambda m: m.set_softcap(2.5)),
    ("sliding mask", lambda m: m.set_mask("sliding")),
    ("window", lambda m: m.set_window(2, 1)),
    ("kv heads", lambda m: m.set_kv_heads(2)),
    ("blocks", lambda m: m.set_blocks(3, 1)),
]


@pytest.mark.parametrize("name", [s[0] for s in SETTERS])
def test_each_setter_is_one_undo_step(edits, name):
    m, stack = edits.model, edits.stack
    if name == "kv heads":
        edits.apply("heads", lambda m: m.set_heads(4))
    before, count = options_of(m), stack.count()
    before_mask = m.mask_mode
    assert edits.apply(name, dict(SETTERS)[name])
    after, after_mask = options_of(m), m.mask_mode
    assert stack.count() == count + 1
    assert (after, after_mask) != (before, before_mask)
    stack.undo()
    assert options_of(m) == before and m.mask_mode == before_mask
    stack.redo()
    assert options_of(m) == after and m.mask_mode == after_mask


def test_a_refused_setter_pushes_no_step(edits):
    said = []
    assert not edits.apply("window", lambda m: m.set_window(0), on_refused=said.append)
    assert edits.stack.count() == 0 and "window" in said[0]


def test_fewer_kv_heads_narrow_k_and_v_and_undo_brings_the_columns_back(edits):
    m, stack = edits.model, edits.stack
    edits.apply("heads", lambda m: m.set_heads(4))
    k_full, v_full = m.matrices["K"].copy(), m.matrices["V"].copy()
    edits.apply("kv", lambda m: m.set_kv_heads(2))
    assert m.state.shape_of("K") == (4, 4) and m.matrices["K"].shape == (4, 4)
    np.testing.assert_array_equal(m.matrices["K"], k_full[:, :4])  # K/V heads 0 and 1 keep their columns
    assert m.state.col_labels("K") == ["k0", "k1", "k2", "k3"]
    # Steps reads each K/V head for both query heads of its group: [k-head 0, k-head 0, k-head 1, k-head 1]
    expanded = np.concatenate([k_full[:, 0:2], k_full[:, 0:2], k_full[:, 2:4], k_full[:, 2:4]], axis=1)
    np.testing.assert_array_equal(m.result.k, expanded)
    assert m.computation.heads is not None and m.computation.heads.num_kv_heads == 2
    stack.undo()
    np.testing.assert_array_equal(m.matrices["K"], k_full)
    np.testing.assert_array_equal(m.matrices["V"], v_full)


def test_the_result_carries_every_optional_step_as_computed_by_hand():
    m = PlaygroundModel("lesson-random-4x8")
    m.set_mode("qkv")
    m.set_rotary(100.0, 4)
    m.set_alibi(True)
    m.set_softcap(0.3)
    m.set_mask("sliding")
    m.set_window(2, 1)
    q, k = m.matrices["Q"], m.matrices["K"]
    r = m.result
    np.testing.assert_allclose(r.q_rotated, hand_rotate(q, 100.0, 4), atol=1e-12)
    np.testing.assert_allclose(r.k_rotated, hand_rotate(k, 100.0, 4), atol=1e-12)
    scaled = hand_rotate(q, 100.0, 4) @ hand_rotate(k, 100.0, 4).T / np.sqrt(8)
    np.testing.assert_allclose(r.scaled, scaled, atol=1e-12)
    slope = 2.0 ** -8  # Press et al.: one head's slope is 2^(-8/1)
    bias = -slope * np.abs(np.arange(4)[:, None] - np.arange(4)[None, :])
    np.testing.assert_allclose(r.capped, 0.3 * np.tanh(scaled / 0.3), atol=1e-12)  # soft-cap, then bias
    np.testing.assert_allclose(r.biased, 0.3 * np.tanh(scaled / 0.3) + bias, atol=1e-12)
    allowed = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 1, 1]], dtype=bool)  # W = 2, 1 sink
    np.testing.assert_array_equal(r.mask, allowed)
    x = np.where(allowed, 0.3 * np.tanh(scaled / 0.3) + bias, -np.inf)
    w = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(r.weights, w / w.sum(axis=1, keepdims=True), atol=1e-12)
    assert "sliding" in MASK_MODES and MAX_DIM == 128


def test_the_flash_record_follows_the_steps_and_the_block_sizes():
    m = PlaygroundModel("lesson-random-4x8")
    m.set_rotary(10000.0)
    m.set_mask("causal")
    seen = []
    m.events.flash.connect(lambda: seen.append(1))
    m.set_blocks(3, 2)
    flash = m.flash
    assert seen and (flash.block_q, flash.block_k) == (3, 2)
    assert flash is m.flash  # cached until something changes
    np.testing.assert_allclose(flash.output, m.result.output, atol=1e-12)
    m.set_cell("Q", 0, 0, 2.0)
    assert m.flash is not flash
    np.testing.assert_allclose(m.flash.output, m.result.output, atol=1e-12)


def test_a_session_keeps_every_option_and_an_older_one_opens_with_them_off(tmp_path):
    m = PlaygroundModel("lesson-random-4x8")
    m.set_heads(4)
    m.set_kv_heads(1)
    m.set_rotary(500.0, 4)
    m.set_alibi(True)
    m.set_softcap(7.5)
    m.set_mask("sliding")
    m.set_window(3, 2)
    m.set_blocks(1, 3)
    path = tmp_path / "s.json"
    save_session(path, m.snapshot())
    fresh = PlaygroundModel(preset=None)
    fresh.restore(load_session(path))
    assert options_of(fresh) == options_of(m) and fresh.mask_mode == "sliding"
    np.testing.assert_array_equal(fresh.matrices["K"], m.matrices["K"])
    np.testing.assert_allclose(fresh.result.weights, m.result.weights, atol=0)
    old = json.loads(path.read_text())
    for name in OPTIONS:
        del old["state"][name]
    old["state"]["mask_mode"] = "causal"
    old["state"]["num_heads"] = 1
    old["state"]["matrices"] = {k: v for k, v in old["state"]["matrices"].items() if k not in ("K", "V", "W_K", "W_V")}
    path.write_text(json.dumps(old))
    older = PlaygroundModel(preset=None)
    older.restore(load_session(path))
    assert options_of(older) == options_of(PlaygroundModel(preset=None))
    assert older.result.q_rotated is None and older.result.capped is None


@pytest.mark.parametrize("bad", [{"window": 0}, {"softcap": -1}, {"rotary_base": 10.0, "rotary_dims": 3},
                                 {"num_kv_heads": 3}, {"block_q": 0}, {"alibi": "yes"}])
def test_a_session_with_a_bad_option_is_refused(bad):
    snap = PlaygroundState().snapshot()
    snap.update(bad)
    with pytest.raises(ValueError):
        PlaygroundState.from_snapshot(snap)


def test_a_preset_load_turns_the_options_off_but_keeps_the_blocks():
    m = PlaygroundModel("lesson-random-4x8")
    m.set_rotary(10000.0)
    m.set_softcap(3.0)
    m.set_blocks(4, 4)
    m.load_preset("cat-sat-mat")
    assert m.rotary_base is None and m.softcap is None and (m.block_q, m.block_k) == (4, 4)


def test_hover_formulas_of_the_new_steps_plug_in_the_numbers():
    m = PlaygroundModel("lesson-random-4x8")
    m.set_mode("qkv")
    m.set_rotary(10000.0, 4)
    m.set_softcap(2.0)
    m.set_alibi(True)
    m.set_mask("sliding")
    m.set_window(2, 1)
    q = m.matrices["Q"]
    m.pin("q_rotated", 2, 1)  # pair (1, 3) at position 2: θ = 2 · 10000^(−2/4) = 0.02
    text = m.explanation
    theta = 2 * 10000 ** -0.5
    assert "x·cosθ − y·sinθ" in text and "0.02" in text and f"{q[2, 1]:.4g}" in text
    assert f"{q[2, 1] * np.cos(theta) - q[2, 3] * np.sin(theta):.4g}".replace("-", "−") in text
    m.pin("k_rotated", 1, 6)
    assert "unchanged" in m.explanation  # only the first 4 columns turn
    m.pin("biased", 3, 1)
    assert "capped + bias" in m.explanation and f"{m.result.biased[3, 1]:.4g}".replace("-", "−") in m.explanation
    m.pin("capped", 3, 0)
    assert "tanh" in m.explanation and f"{m.result.capped[3, 0]:.4g}".replace("-", "−") in m.explanation
    m.pin("masked", 3, 1)
    assert "outside the window" in m.explanation and "not a sink" in m.explanation
    m.pin("masked", 0, 2)
    assert "after" in m.explanation


def test_export_titles_and_csv_lines_name_every_option_that_is_on():
    from app.common.heatmap_files import context_comments
    from app.common.titles import full_title
    from app.playground.model.export_context import playground_context

    m = PlaygroundModel("lesson-random-4x8")
    assert "rotary" not in playground_context(m).line()  # off: not named
    m.set_heads(4)
    m.set_kv_heads(2)
    m.set_rotary(10000.0)
    m.set_alibi(True)
    m.set_mask("sliding")
    m.set_window(3, 1)
    m.set_softcap(20.0)
    line = playground_context(m).line()
    assert "· rotary base 10000 · ALiBi bias · window 3 + 1 sink · soft-cap 20 ·" in line
    assert line.endswith("2 K/V heads for 4 heads (grouped-query)") and "sliding-window mask" not in line
    assert full_title("Weights = softmax", playground_context(m)).endswith(" · soft-cap 20 · " + line.split(" · ")[-1])
    lines = context_comments("Weights", playground_context(m))
    for expected in ("# mask: sliding", "# rotary: rotary base 10000", "# alibi: ALiBi bias",
                     "# window: window 3 + 1 sink", "# softcap: soft-cap 20",
                     "# kv heads: 2 K/V heads for 4 heads (grouped-query)"):
        assert expected in lines
    m.set_rotary(10000.0, 4)
    assert "rotary base 10000 on 4 of 8 columns" in playground_context(m).line()


def test_more_queries_than_keys_are_refused_under_a_window_or_alibi():
    m = PlaygroundModel("cat-sat-mat")
    m.set_mode("projection", "cross")
    m.set_mask("sliding")
    with pytest.raises(ValueError, match="at least as many keys as queries"):
        m.set_dim("Lq", 5)
    assert m.dims["Lq"] == 3
    m.set_mask("none")
    m.set_dim("Lq", 5)
    with pytest.raises(ValueError, match="ALiBi needs at least as many keys"):
        m.set_alibi(True)
    assert m.alibi is False
