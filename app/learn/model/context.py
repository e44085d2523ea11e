"""What a lesson's expressions may name about the playground (``context``), and the token lookups the lesson engine
shares (``token_index``, ``pointing_row``). Qt-free; everything is computed from the model when asked.

Today's attention options add ``q_rotated``, ``k_rotated``, ``bias``, ``biased``, ``capped`` (while that step is
on), ``allowed`` (1 where the mask lets a query see a key), ``rotary_base``, ``window``, ``sinks``, ``kv_heads``,
``block_q``, ``block_k``; with 2 heads or more ``kv_group``, ``kv_bytes``, ``kv_bytes_standard``, ``params``,
``params_standard`` and ``kv_bytes_for(n)``; FlashAttention's record (``model.flash``, computed only when a text names
it): ``n_tiles``, ``tiles_skipped``, ``flash_held``, ``flash_full``, ``flash_difference`` and ``running_max(row,
key_block)``, ``running_sum(…)``, ``rescale(…)`` (a row's m, l and rescale factor after that key block's tile); and
``rotated_score(q, k, m, n)`` (q at position m against k at position n, rotated with the current base, × scale)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from app.learn.model.expr import Labeled, LessonExprError
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
    out.update(_option_unavailable(model))
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
    names.update(_option_names(model))  # rotary, ALiBi, window, K/V heads, FlashAttention's tiles
    return LazyNames(names)


# ---------------------------------------------------------------------------------------------- today's options
class LazyNames(dict[str, Any]):
    """A lesson's names where some values are computed only when an expression names them (``Lazy``): the
    FlashAttention record is not computed for lessons that never mention it."""

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if isinstance(value, Lazy):
            value = value.fn()
            self[key] = value
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default


class Lazy:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn


def _option_names(m: PlaygroundModel) -> dict[str, Any]:
    """The names of today's attention options (see the module's docstring)."""
    s = m.result
    qt, kt = tuple(m.query_tokens), tuple(m.key_tokens)
    out: dict[str, Any] = {}
    for name, axes in (("q_rotated", (qt, None)), ("k_rotated", (kt, None)), ("bias", (qt, kt)),
                       ("biased", (qt, kt)), ("capped", (qt, kt))):
        value = getattr(s, name, None)
        if value is not None:
            out[name] = Labeled(np.asarray(value, dtype=np.float64), axes)
    mask = s.mask if s.mask is not None else np.ones(np.shape(s.scores), dtype=bool)
    out["allowed"] = Labeled(np.asarray(mask, dtype=np.float64), (qt, kt))
    base = m.rotary_base
    out.update(rotary_base=float(base or 0.0), window=int(m.window), sinks=int(m.sinks), kv_heads=int(m.kv_heads),
               block_q=int(m.block_q), block_k=int(m.block_k))
    out["rotated_score"] = _rotated_score(m)
    out.update(_heads(m))
    def flash_stat(name: str) -> Any:
        f = m.flash
        if name == "n_tiles":
            return len(f.tiles)
        if name == "tiles_skipped":
            return sum(t.skipped for t in f.tiles)
        if name == "flash_held":
            return int(f.largest_intermediate)
        if name == "flash_full":
            return int(f.full_matrix_elements)
        return float(np.max(np.abs(f.output - s.output))) if f.output.size else 0.0

    for name in ("n_tiles", "tiles_skipped", "flash_held", "flash_full", "flash_difference"):
        out[name] = Lazy(functools.partial(flash_stat, name))
    for name, field in (("running_max", "m"), ("running_sum", "l"), ("rescale", "rescale")):
        out[name] = _tile_stat(m, field)
    return out


def _rotated_score(m: PlaygroundModel) -> Callable[..., float]:
    def score(q: Any, k: Any, pos_q: Any, pos_k: Any) -> float:
        from attention_core import rotate

        qv, kv = (np.asarray(x.a if isinstance(x, Labeled) else x, dtype=np.float64).reshape(1, -1) for x in (q, k))
        if qv.shape != kv.shape:
            raise LessonExprError("rotated_score takes a row of Q and a row of K of one width")
        base = m.rotary_base or 10000.0
        dims = m.rotary_dims
        qr = rotate(qv, np.array([int(pos_q)]), base=base, dims=dims)
        kr = rotate(kv, np.array([int(pos_k)]), base=base, dims=dims)
        return float(np.dot(qr.ravel(), kr.ravel()) * m.result.scale)
    return score


def _heads(m: PlaygroundModel) -> dict[str, Any]:
    """The K/V heads' names (with 2 heads or more), each computed when named."""
    mh = m.computation.heads
    if mh is None:
        return {}
    heads, d_head = int(mh.num_heads), int(mh.q_heads.shape[-1])
    kv = int(mh.num_kv_heads or heads)
    per_kv_head = int(mh.kv_cache_bytes_per_token) // kv  # a key and a value of one K/V head, 16-bit

    def params_standard() -> int:
        from attention_core.multihead_steps import parameter_count

        return int(parameter_count(heads * d_head, heads))

    return {"kv_group": heads // kv, "head_dim": d_head, "kv_bytes": int(mh.kv_cache_bytes_per_token),
            "kv_bytes_standard": per_kv_head * heads, "params": Lazy(lambda: int(mh.parameters)),
            "params_standard": Lazy(params_standard), "kv_bytes_for": lambda n: per_kv_head * int(n)}


def _tile_stat(m: PlaygroundModel, field: str) -> Callable[..., float]:
    def stat(row: Any, key_block: Any) -> float:
        flash = m.flash
        r = row if isinstance(row, int) else int(row) if isinstance(row, float) else None
        if r is None:
            if row not in m.query_tokens:
                raise LessonExprError(f"no query {row!r}")
            r = m.query_tokens.index(row)
        for t in flash.tiles:
            if r in t.rows and t.k_block == int(key_block):
                return float(np.asarray(getattr(t, field))[r - t.rows.start])
        raise LessonExprError(f"no tile of query row {r} and key block {key_block}")
    return stat


def _option_unavailable(m: PlaygroundModel) -> dict[str, str]:
    """Why an option's name has no value now (said instead of "unknown name")."""
    out = {}
    s = m.result
    for name, words in (("q_rotated", "rotary is off: turn Rotary on to see it"),
                        ("k_rotated", "rotary is off: turn Rotary on to see it"),
                        ("bias", "ALiBi is off: turn ALiBi on to see it"), ("biased", "ALiBi is off"),
                        ("capped", "the soft-cap is off")):
        if getattr(s, name, None) is None:
            out[name] = words
    if m.computation.heads is None:
        out.update(dict.fromkeys(("kv_group", "head_dim", "kv_bytes", "kv_bytes_standard", "params",
                                  "params_standard", "kv_bytes_for"), "there is one head now: choose 2 or more"))
    return out
