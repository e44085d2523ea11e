"""Stateful fuzzing of the Playground model through the undo stack (hypothesis, no window).

Random sequences of every mutator — cells, blocks, tokens, sizes, mode, self/cross, scale, masks (custom cells and
padding keys included), heads, presets, pin/hover — each pushed through ``UndoableEdits`` like a user edit.
After every rule: every field of the result equals a float64 reference written here (not the core's code) to
1e-9; nothing shown is NaN or infinite except the −∞ of blocked cells; fully blocked rows are zeros and flagged;
a pinned cell's explanation contains its current value. At the end of each run: undoing every step restores
the first state exactly and redoing every step the last one.

Seeded (``derandomize``): a failure prints the rule sequence; rerun this file to reproduce it.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from PySide6.QtGui import QUndoStack
from PySide6.QtWidgets import QApplication

from app.playground.model.explain import fmt
from app.playground.model.playground import PlaygroundModel
from app.playground.model.shown import STEP_VIEWS
from app.playground.qt.commands import UndoableEdits

EXAMPLES, STEPS = 250, 50  # hypothesis ends some runs early: ~10,900 rules per run (≥ 10,000 asserted)
RULES_RUN = [0]
TOL = 1e-9


def reference(model: PlaygroundModel) -> dict[str, np.ndarray]:
    """Independent float64 attention of what the model holds."""
    s = model.state
    m = s.matrices
    if s.mode == "qkv":
        q, k, v = m["Q"], m["K"], m["V"]
    else:
        xq = m["X"] if s.kind == "self" else m["X_q"]
        xkv = m["X"] if s.kind == "self" else m["X_kv"]
        q, k, v = xq @ m["W_Q"], xkv @ m["W_K"], xkv @ m["W_V"]
    lq, lk = q.shape[0], k.shape[0]
    allowed = np.ones((lq, lk), dtype=bool)
    if s.mask_mode == "causal":
        allowed = np.array([[j <= i for j in range(lk)] for i in range(lq)])
    elif s.mask_mode == "padding":
        allowed = np.array([list(s.padding_keep)] * lq, dtype=bool)
    elif s.mask_mode == "custom":
        allowed = np.array(s.custom_mask, dtype=bool)
    scale = {"sqrt": 1 / math.sqrt(q.shape[1]), "one": 1.0, "custom": s.custom_scale}[s.scale_mode]
    scores = q @ k.T
    scaled = scores * scale
    masked = np.where(allowed, scaled, -np.inf)
    weights = np.zeros_like(scaled)
    for i in range(lq):
        if allowed[i].any():
            row = masked[i][allowed[i]]
            e = np.exp(row - row.max())
            weights[i, allowed[i]] = e / e.sum()
    return {"q": q, "k": k, "v": v, "scores": scores, "scaled": scaled, "masked": masked, "weights": weights,
            "output": weights @ v, "allowed": allowed, "scale": np.float64(scale)}


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=TOL, atol=TOL, equal_nan=False))


values = st.one_of(st.floats(-5, 5, allow_nan=False), st.sampled_from([0.0, 1.0, -1.0, 1e-6, 50.0, -50.0]))
index = st.integers(0, 7)


class PlaygroundMachine(RuleBasedStateMachine):
    @initialize(preset=st.sampled_from(["cat-sat-mat", "it-animal-street", "magnitude", "lesson-random-4x8",
                                        "random-3"]))
    def start(self, preset: str) -> None:
        QApplication.instance() or QApplication([])
        self.model = PlaygroundModel(preset)
        self.edits = UndoableEdits(self.model, QUndoStack())
        self.first = self.model.snapshot()

    def _do(self, text: str, fn) -> None:  # type: ignore[no-untyped-def]
        RULES_RUN[0] += 1
        self.edits.apply(text, fn)

    @rule(r=index, c=index, value=values, which=index)
    def set_cell(self, r: int, c: int, value: float, which: int) -> None:
        names = self.model.state.matrix_names()
        name = names[which % len(names)]
        rows, cols = self.model.state.shape_of(name)
        RULES_RUN[0] += 1
        self.edits.set_cell(name, r % rows, c % cols, value)

    @rule(which=index, block=st.lists(st.lists(values, min_size=2, max_size=2), min_size=1, max_size=3))
    def paste(self, which: int, block: list[list[float]]) -> None:
        names = self.model.state.matrix_names()
        name = names[which % len(names)]
        self._do("paste", lambda m: m.set_block(name, 0, 0, np.array(block)))  # may not fit: refused

    @rule(dim=st.sampled_from(["Lq", "Lk", "d_k", "d_v", "d_model"]), n=st.integers(0, 6))
    def set_dim(self, dim: str, n: int) -> None:
        self._do("dim", lambda m: m.set_dim(dim, n))

    @rule(side=st.sampled_from(["q", "k"]), i=index, name=st.text("abcxyz→é", min_size=0, max_size=4))
    def set_token(self, side: str, i: int, name: str) -> None:
        self._do("token", lambda m: m.set_token(side, i, name))

    @rule(choice=st.sampled_from([("qkv", None), ("projection", "self"), ("projection", "cross")]))
    def set_mode(self, choice: tuple[str, str | None]) -> None:
        self._do("mode", lambda m: m.set_mode(*choice))

    @rule(scale=st.one_of(st.just("standard"), st.floats(0.01, 10), st.just(1.0), st.just(-1.0)))
    def set_scale(self, scale: float | str) -> None:
        self._do("scale", lambda m: m.set_scale(scale))

    @rule(mode=st.sampled_from(["none", "causal", "padding", "custom"]))
    def set_mask(self, mode: str) -> None:
        self._do("mask", lambda m: m.set_mask(mode))

    @rule(j=index)
    def toggle_padding(self, j: int) -> None:
        self._do("padding", lambda m: m.toggle_padding(j))

    @rule(i=index, j=index)
    def toggle_custom(self, i: int, j: int) -> None:
        self._do("custom", lambda m: m.toggle_custom(i, j))

    @rule(h=st.integers(0, 4))
    def set_heads(self, h: int) -> None:
        self._do("heads", lambda m: m.set_heads(h))

    @rule(name=st.sampled_from(["cat-sat-mat", "bank-river-loan", "magnitude", "random-7"]))
    def load_preset(self, name: str) -> None:
        self._do("preset", lambda m: m.load_preset(name))

    @rule(view=st.sampled_from([*STEP_VIEWS, "head:0", "head:1", "concat", "mh_output"]), i=index, j=index)
    def pin(self, view: str, i: int, j: int) -> None:
        RULES_RUN[0] += 1
        try:
            self.model.pin(view, i % 4, j % 4)
        except ValueError:
            self.model.unpin()

    @rule(view=st.sampled_from(STEP_VIEWS), i=st.integers(-1, 4), j=index)
    def hover(self, view: str, i: int, j: int) -> None:
        RULES_RUN[0] += 1
        self.model.hover(view, i, j % 4)

    @invariant()
    def result_equals_reference(self) -> None:
        ref = reference(self.model)
        res, comp = self.model.result, self.model.computation
        for name in ("scores", "scaled", "weights", "output"):
            got = getattr(res, name)
            assert close(got, ref[name]), name
            assert np.isfinite(got).all(), f"{name} shows NaN or infinity"
        allowed = ref["allowed"]
        assert np.array_equal(np.isfinite(res.masked), allowed)
        assert close(np.where(allowed, res.masked, 0), np.where(allowed, ref["masked"], 0))
        full = ~allowed.any(axis=1)
        assert np.array_equal(np.asarray(res.fully_masked), full)
        assert np.all(res.weights[full] == 0)
        assert close(comp.q, ref["q"]) and close(comp.k, ref["k"]) and close(comp.v, ref["v"])

    @invariant()
    def heads_equal_reference(self) -> None:
        s, mh = self.model.state, self.model.computation.heads
        if s.num_heads == 1:
            assert mh is None
            return
        assert mh is not None
        ref = reference(self.model)
        h, dk = s.num_heads, ref["q"].shape[1] // s.num_heads
        dv = ref["v"].shape[1] // h
        scale = {"sqrt": 1 / math.sqrt(dk), "one": 1.0, "custom": s.custom_scale}[s.scale_mode]
        outs = []
        for i in range(h):
            q, k = ref["q"][:, i * dk:(i + 1) * dk], ref["k"][:, i * dk:(i + 1) * dk]
            sc = np.where(ref["allowed"], q @ k.T * scale, -np.inf)
            w = np.zeros_like(sc)
            for r in range(sc.shape[0]):
                if ref["allowed"][r].any():
                    e = np.exp(sc[r] - sc[r][ref["allowed"][r]].max())
                    w[r] = e / e.sum()
            assert close(mh.heads.weights[i], w)
            outs.append(w @ ref["v"][:, i * dv:(i + 1) * dv])
        assert close(mh.output, np.concatenate(outs, axis=1) @ s.matrices["W_O"])

    @invariant()
    def explanation_is_current(self) -> None:
        cell = self.model.hovered or self.model.pinned
        if cell is None:
            assert self.model.explanation == ""
            return
        view, i, j = cell
        if view in STEP_VIEWS:
            value = float(getattr(self.model.result, view)[i, j])
            text = self.model.explanation
            if view == "masked" and not math.isfinite(value):
                assert "−∞" in text
            elif view == "weights" and value == 0.0:
                assert "0" in text
            else:
                assert fmt(value) in text, (view, i, j, fmt(value), text)
        assert self.model.story == "" or self.model.preset is not None

    def teardown(self) -> None:
        stack = getattr(getattr(self, "edits", None), "stack", None)
        if stack is None:
            return
        last = self.model.snapshot()
        while stack.canUndo():
            stack.undo()
        assert self.model.snapshot() == self.first
        while stack.canRedo():
            stack.redo()
        assert self.model.snapshot() == last


PlaygroundMachine.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestPlaygroundMachine = PlaygroundMachine.TestCase


def test_zz_the_run_covered_ten_thousand_rules() -> None:
    """Runs after the machine (file order): the campaign really ran its rules."""
    assert RULES_RUN[0] >= 10_000, RULES_RUN[0]
