"""What a lesson's expressions may name about the playground (``context``), and the token lookups the lesson engine
shares (``token_index``, ``pointing_row``). Qt-free; everything is computed from the model when asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from app.learn.model.expr import Labeled
from app.playground.model.playground import PlaygroundModel
from attention_core.tiny.probe import probe_attention_causality


def token_index(tokens: list[str], key: Any) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        if not 0 <= key < len(tokens):
            raise ValueError(f"position {key} is outside 0..{len(tokens) - 1}")
        return key
    if key not in tokens:
        raise ValueError(f"no token {key!r} (tokens: {', '.join(tokens)})")
    return tokens.index(key)


def pointing_row(m: PlaygroundModel, query: Any, key: Any) -> np.ndarray | None:
    """A Q row whose largest weight is on ``key`` (qkv mode only): K[key] itself, or K[key] minus another key."""
    if m.mode != "qkv":
        return None
    k = m.result.k
    j = token_index(m.key_tokens, key)
    candidates = [k[j]] + [k[j] - k[o] for o in range(len(k)) if o != j]
    for row in candidates:
        scores = k @ row * m.result.scale
        if np.linalg.norm(row) > 0 and int(np.argmax(scores)) == j and np.sum(scores == scores[j]) == 1:
            return np.asarray(row, dtype=np.float64)
    return None


def unavailable(model: PlaygroundModel) -> dict[str, str]:
    """Why a name the playground gives in other states is not there now (said instead of "unknown name")."""
    out: dict[str, str] = {}
    if model.mode != "projection":
        out.update(dict.fromkeys(("X", "W_Q", "W_K", "W_V"), "there are no projections in this mode: choose "
                                 "\"X and projections\" as the mode to see it again"))
    if model.computation.heads is None:
        out.update(dict.fromkeys(("head_weights", "head_scores", "concat", "mh_output", "head_scale", "head_dim"),
                                 "there is one head now: choose 2 or more heads to see it again"))
    return out


def context(model: PlaygroundModel) -> dict[str, Any]:
    """The names a lesson's expressions may use, all computed from the model now."""
    c, s = model.computation, model.result
    qt, kt = tuple(model.query_tokens), tuple(model.key_tokens)
    names: dict[str, Any] = {name: Labeled(getattr(s, name), (qt, kt)) for name in ("scores", "scaled", "masked",
                                                                                    "weights")}
    names.update(output=Labeled(s.output, (qt, None)), Q=Labeled(c.q, (qt, None)), K=Labeled(c.k, (kt, None)),
                 V=Labeled(c.v, (kt, None)), scale=float(s.scale), d_k=int(c.q.shape[1]), d_v=int(c.v.shape[1]),
                 Lq=len(qt), Lk=len(kt), heads=int(model.num_heads))
    rows = {"X": qt, "X_q": qt, "X_kv": kt}
    for name, arr in model.matrices.items():  # the inputs as edited: X, W_Q, W_K, W_V, W_O (only what is in use)
        if name not in names and (model.mode == "projection" or not name.startswith(("X", "W_Q", "W_K", "W_V"))):
            names[name] = Labeled(arr, (rows.get(name), None))
    names["d_model"] = int(model.dims.get("d_model", c.q.shape[1]))
    mh = c.heads
    if mh is not None:  # heads > 1: the split made visible
        names.update(head_weights=Labeled(mh.heads.weights, (None, qt, kt)),
                     head_scores=Labeled(mh.heads.scores, (None, qt, kt)), concat=Labeled(mh.concat, (qt, None)),
                     mh_output=Labeled(mh.output, (qt, None)), head_scale=float(mh.heads.scale),
                     head_dim=int(mh.q_heads.shape[-1]))

    def probe(which: str) -> Callable[..., float]:
        default = "causal" if model.mask_mode == "causal" else "none"

        def run(position: Any, mask: str = default) -> float:
            pos = token_index(list(kt), position if not isinstance(position, float) else int(position))
            p = probe_attention_causality(c.q, c.k, c.v, pos, mask=mask, scale=s.scale)
            return p.max_change_before if which == "before" else p.max_change_after
        return run

    names["probe_before"], names["probe_after"] = probe("before"), probe("after")
    return names
