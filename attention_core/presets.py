"""The worked examples of the source documents, as inputs only: every result is computed, never copied.

Projection convention: ``Q = X_q @ W_Q``, ``K = X_kv @ W_K``, ``V = X_kv @ W_V`` with W of shape (d_model, d).
A preset either gives X and the projections (``x_q``/``x_kv``/``w_*``), or Q, K, V directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .steps import attention_steps


@dataclass(frozen=True)
class Preset:
    """Inputs of one example. ``q``, ``k``, ``v`` are always filled (derived from X and W when given)."""

    name: str
    title: str
    story: str
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    x_q: np.ndarray | None = None
    x_kv: np.ndarray | None = None
    w_q: np.ndarray | None = None
    w_k: np.ndarray | None = None
    w_v: np.ndarray | None = None
    source: str = ""
    scale: float | None = None
    """The scale the example uses (None: 1/√d_k, the default); a real model's head brings its own."""
    allowed: np.ndarray | None = None
    """The mask the example uses, (Lq, Lk) bool, True = may attend (None: no mask); a real head's causal mask."""

    @property
    def has_projections(self) -> bool:
        return self.x_q is not None

    @property
    def self_attention(self) -> bool:
        return self.x_q is not None and self.x_kv is self.x_q


def _from_projections(name: str, title: str, story: str, tokens: list[str], x: np.ndarray,
                      w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, source: str) -> Preset:
    x = np.asarray(x, dtype=np.float64)
    return Preset(name, title, story, tuple(tokens), tuple(tokens), x @ w_q, x @ w_k, x @ w_v,
                  x_q=x, x_kv=x, w_q=w_q, w_k=w_k, w_v=w_v, source=source)


def _cat_sat_mat() -> Preset:
    x = np.array([[1.0, 0.5, 0.2, 0.8], [0.3, 0.9, 0.1, 0.4], [0.6, 0.2, 0.7, 0.3]])
    eye = np.eye(4)
    s = attention_steps(x, x, x)
    w, raw = s.weights, s.scores
    # computed, not copied: the guide says every token attends most to itself, but with these vectors 'sat' and
    # 'mat' score higher with the long 'cat' than with themselves
    others = [(name, i) for i, name in ((1, "sat"), (2, "mat")) if raw[i].argmax() != i]
    tail = ("; ".join(f"'{name}' scores {raw[i, 0]:.2f} with 'cat' but {raw[i, i]:.2f} with itself"
                      for name, i in others) + ": a long key wins dot products.") if others else ""
    story = (f"3 tokens, d=4, identity projections so Q=K=V=X. 'cat' puts {w[0, 0]:.1%} on itself. {tail}")
    return _from_projections("cat-sat-mat", "cat / sat / mat (guide 003)", story, ["cat", "sat", "mat"],
                             x, eye, eye, eye.copy(), "003 'Attention: The Heart of Transformers', worked example")


def _it_animal_street() -> Preset:
    q = np.array([[3.0, 1.0]])
    k = np.array([[3.0, 1.0], [1.0, 4.0], [1.5, 0.5]])
    v = np.array([[2.0, 1.5], [0.5, 0.3], [-0.5, 1.2]])
    s = attention_steps(q, k, v)
    story = (f"'it' asks which word it refers to: weights {s.weights[0, 0]:.0%} animal, "
             f"{s.weights[0, 1]:.0%} street, {s.weights[0, 2]:.0%} because; context "
             f"[{s.output[0, 0]:.2f}, {s.output[0, 1]:.2f}].")
    return Preset("it-animal-street", "it -> animal / street / because (lesson 004)", story, ("it",),
                  ("animal", "street", "because"), q, k, v, source="004 'L03 Self-Attention', walkthrough")


def _magnitude() -> Preset:
    q = np.array([[3.0, 1.0]])
    k = np.array([[1.5, 0.5], [4.5, 1.5], [1.0, 4.0]])
    v = np.eye(3)
    raw = (q @ k.T)[0]
    story = (f"The magnitude problem: K3 points elsewhere yet scores {raw[2]:g} > K1's {raw[0]:g}; K2, "
             f"aligned and long, scores {raw[1]:g}. V is the identity, so the output row is the weights.")
    return Preset("magnitude", "the magnitude problem (lesson 004)", story, ("Q",),
                  ("K1 short", "K2 long", "K3 off-axis"), q, k, v, source="004 'L03 Self-Attention'")


def _bank_river_loan() -> Preset:
    x = np.array([[0.5, 0.3, 0.8, 0.2], [0.2, 0.9, 0.1, 0.3], [0.8, 0.1, 0.4, 0.7]])
    eye = np.eye(4)
    raw = x[0] @ x[1:].T
    winner = "river" if raw[0] > raw[1] else "loan"
    story = (f"bank·river = {raw[0]:.2f}, bank·loan = {raw[1]:.2f}: with these vectors '{winner}' wins, "
             "whatever the story says. Identity projections (Q=K=V=X).")
    return _from_projections("bank-river-loan", "bank / river / loan (lesson 004)", story,
                             ["bank", "river", "loan"], x, eye, eye, eye.copy(), "004 'L03 Self-Attention'")


def _lesson_random() -> Preset:
    rng = np.random.RandomState(42)  # the lesson's np.random.seed(42), same draw order
    x = rng.randn(4, 8)
    w_q, w_k, w_v = (rng.randn(8, 8) * 0.1 for _ in range(3))
    story = "Lesson 2.3's first example: 4 tokens, d_model 8, random X and W*0.1 (seed 42). Weights stay near uniform."
    return _from_projections("lesson-random-4x8", "random 4x8 (lesson 2.3, seed 42)", story,
                             [f"t{i}" for i in range(4)], x, w_q, w_k, w_v, "000 lesson 2.3")


def random_preset(seed: int = 0, n_tokens: int = 4, d_model: int = 8, d_k: int | None = None) -> Preset:
    """Random X (standard normal) and projections (N(0, 1/d_model)), reproducible from ``seed``."""
    d_k = d_model if d_k is None else d_k
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_tokens, d_model))
    w_q, w_k, w_v = (rng.standard_normal((d_model, d_k)) / np.sqrt(d_model) for _ in range(3))
    return _from_projections(f"random-{seed}", f"random (seed {seed})",
                             f"Random X ({n_tokens}x{d_model}) and projections drawn with seed {seed}.",
                             [f"t{i}" for i in range(n_tokens)], x, w_q, w_k, w_v, "generated")


_BUILDERS = {
    "cat-sat-mat": _cat_sat_mat,
    "it-animal-street": _it_animal_street,
    "magnitude": _magnitude,
    "bank-river-loan": _bank_river_loan,
    "lesson-random-4x8": _lesson_random,
}

PRESET_NAMES: tuple[str, ...] = tuple(_BUILDERS)


def get_preset(name: str) -> Preset:
    """A named preset, or ``random-N`` for ``random_preset(N)``; unknown names raise ValueError."""
    if name in _BUILDERS:
        return _BUILDERS[name]()
    if name.startswith("random-"):
        try:
            return random_preset(int(name.split("-", 1)[1]))
        except ValueError:
            pass
    raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESET_NAMES)} or random-N")
