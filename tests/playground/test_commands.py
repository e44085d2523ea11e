"""Undo commands on a bare QUndoStack (no window): each calls model methods only; discrete changes are one
step each, drags merge, the device is undoable like the rest."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QUndoStack

from app.playground.model.playground import PlaygroundModel
from app.playground.qt.commands import UndoableEdits


@pytest.fixture
def edits(qapp):
    model = PlaygroundModel("cat-sat-mat")
    return UndoableEdits(model, QUndoStack())


def test_each_discrete_change_is_one_step_and_undo_all_restores(edits):
    m, stack = edits.model, edits.stack
    start = m.snapshot()
    edits.apply("mode", lambda m: m.set_mode("qkv"))
    edits.apply("mask", lambda m: m.set_mask("causal"))
    edits.apply("scale", lambda m: m.set_scale(1.0))
    edits.set_cell("Q", 0, 0, 3.0)
    edits.apply("heads", lambda m: m.set_heads(2))
    edits.apply("preset", lambda m: m.load_preset("magnitude"))
    assert stack.count() == 6
    end, end_weights = m.snapshot(), m.result.weights.copy()
    for _ in range(6):
        stack.undo()
    assert m.snapshot() == start
    for _ in range(6):
        stack.redo()
    assert m.snapshot() == end
    np.testing.assert_array_equal(m.result.weights, end_weights)


def test_refused_edit_pushes_nothing_and_says_why(edits):
    messages: list[str] = []
    edits.refused.connect(messages.append)
    assert not edits.apply("heads", lambda m: m.set_heads(3))
    assert not edits.set_cell("Q", 0, 0, float("inf"))
    assert edits.stack.count() == 0 and len(messages) == 2 and "divide" in messages[0]


def test_a_drag_merges_into_one_step_but_two_drags_do_not(edits):
    m, stack = edits.model, edits.stack
    x0 = m.matrices["X"][0, 0]
    for v in (1.1, 1.2, 1.3):
        edits.set_cell("X", 0, 0, v, merge_key="drag1")
    for v in (1.4, 1.5):
        edits.set_cell("X", 0, 0, v, merge_key="drag2")
    assert stack.count() == 2
    stack.undo()
    assert m.matrices["X"][0, 0] == 1.3
    stack.undo()
    assert m.matrices["X"][0, 0] == x0
    for v in (0.5, 0.6):
        edits.apply("slider", lambda m, v=v: m.set_scale_mode("custom", v), merge_key="scale-slider")
    assert stack.count() == 1 and m.custom_scale == 0.6


def test_device_choice_is_undoable(edits, monkeypatch):
    import app.playground.model.state as state_module

    used: list[str] = []
    real = state_module.attention_steps

    def on_any_device(q, k, v, *, mask=None, scale=None, device="cpu"):  # no GPU here: record, compute on CPU
        used.append(device)
        return real(q, k, v, mask=mask, scale=scale, device="cpu")

    monkeypatch.setattr(state_module, "attention_steps", on_any_device)
    m = edits.model
    m.set_available_devices(["cpu", "cuda:0"])
    edits.apply("device", lambda m: m.set_device("cuda:0"))
    assert m.device == "cuda:0" and used[-1] == "cuda:0"
    edits.stack.undo()
    assert m.device == "cpu" and used[-1] == "cpu"
    edits.stack.redo()
    assert m.device == "cuda:0"


def test_a_failing_gpu_falls_back_to_the_cpu_and_says_so(edits, monkeypatch):
    """Device faults: CUDA fails (out of memory during a later edit); the app says so and goes on on the CPU."""
    import app.playground.model.state as state_module

    real = state_module.attention_steps
    fail = {"on": False}

    def flaky(q, k, v, *, mask=None, scale=None, device="cpu"):
        if device != "cpu" and fail["on"]:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(q, k, v, mask=mask, scale=scale, device="cpu")

    monkeypatch.setattr(state_module, "attention_steps", flaky)
    m = edits.model
    m.set_available_devices(["cpu", "cuda:0"])
    edits.apply("device", lambda m: m.set_device("cuda:0"))
    fail["on"] = True
    seen: list[frozenset[str]] = []
    m.events.changed.connect(seen.append)
    assert edits.set_cell("X", 0, 0, 2.0)  # the edit is kept …
    assert m.matrices["X"][0, 0] == 2.0 and m.device == "cpu"  # … and computed on the CPU
    assert "cuda:0 failed (CUDA out of memory" in m.device_note and "device" in seen[-1]
    ref = real(m.computation.q, m.computation.k, m.computation.v)
    np.testing.assert_array_equal(m.result.weights, ref.weights)
    edits.apply("device", lambda m: m.set_device("cuda:0"))  # still failing: refused, CPU kept, said again
    assert m.device == "cpu" and "out of memory" in m.device_note
