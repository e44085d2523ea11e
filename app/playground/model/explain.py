"""'Why this number?': the formula behind any cell, with the numbers plugged in. Qt-free.

The text only formats numbers that ``attention_core`` computed (the exponentials shown are the softmax's own
terms, recovered from the displayed scaled scores), plus which source rows/columns to highlight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.playground.model.state import PlaygroundState, Result
from attention_core import default_scale

MAX_TERMS = 6
EXPLAIN_HINT = "Hover over any cell to see where its number comes from; click to pin it."


@dataclass
class Explanation:
    """``html`` for the panel; ``highlight`` maps a view or matrix name to (rows, cols, cells) to outline."""

    html: str
    highlight: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...]]] = field(
        default_factory=dict)


def fmt(v: float) -> str:
    if not math.isfinite(v):
        return "−∞" if v < 0 else ("∞" if v > 0 else "nan")
    s = f"{v:.4g}" if abs(v) < 1e4 else f"{v:.3e}"
    return s.replace("-", "−")


def _terms(pairs: list[tuple[float, float]]) -> str:
    shown = [f"{fmt(a)}·{fmt(b)}" for a, b in pairs[:MAX_TERMS]]
    more = len(pairs) - MAX_TERMS
    return " + ".join(shown) + (f" + … ({more} more)" if more > 0 else "")


def _b(text: str) -> str:
    return f"<b>{text}</b>"


def _softmax_text(row: np.ndarray, j: int, weight: float) -> str:
    """``e^x_j / (e^x_0 + …) = a / b = w`` for one softmax row (−∞ entries are blocked keys)."""
    allowed = np.isfinite(row)
    shift = float(np.max(row[allowed])) if np.max(row[allowed]) > 30 else 0.0
    exps = np.where(allowed, np.exp(np.where(allowed, row - shift, 0.0)), 0.0)
    shown = " + ".join(f"e^{fmt(x - shift)}" for x in row[allowed][:MAX_TERMS])
    if allowed.sum() > MAX_TERMS:
        shown += " + …"
    note = f" (exponents shifted by −{fmt(shift)}, which cancels)" if shift else ""
    return (f"e^{fmt(row[j] - shift)} / ({shown}) = {fmt(float(exps[j]))} / {fmt(float(exps.sum()))} = "
            f"{_b(fmt(weight))}{note}")


def explain(view: str, i: int, j: int, state: PlaygroundState, result: Result) -> Explanation:
    """Explain cell (i, j) of ``view`` in scores/scaled/masked/weights/output."""
    s = result.steps
    if view in OPTIONAL_EXPLAINED:
        return explain_optional(view, i, j, state, result)
    qt, kt = state.query_tokens, state.key_tokens
    lq, lk = s.scores.shape
    if not (0 <= i < lq and 0 <= j < (s.output.shape[1] if view == "output" else lk)):
        return Explanation("")
    q_src = "Q" if state.mode == "qkv" else "Q = X·W_Q"
    hl_q = ("Q", (i,), (), ())
    if view == "scores":
        rotated = s.q_rotated is not None and s.k_rotated is not None
        q_rows = s.q_rotated if s.q_rotated is not None else s.q
        k_rows = s.k_rotated if s.k_rotated is not None else s.k
        pairs = list(zip(q_rows[i].tolist(), k_rows[j].tolist()))
        names = ("q_rotated", "k_rotated") if rotated else ("Q", "K")
        html = (f"{_b(f'score[{qt[i]}, {kt[j]}]')} = {names[0]}[{qt[i]}] · {names[1]}[{kt[j]}] = {_terms(pairs)} = "
                f"{_b(fmt(s.scores[i, j]))}<br><span>The dot product of the query row and the key row "
                f"({q_src}). Large when they point the same way <i>and</i> are long.</span>")
        return Explanation(html, {hl_q[0]: hl_q[1:], "K": ((j,), (), ()), "scores": ((), (), ((i, j),))})
    if view == "scaled":
        html = (f"{_b(f'scaled[{qt[i]}, {kt[j]}]')} = score × scale = {fmt(s.scores[i, j])} × {fmt(s.scale)} = "
                f"{_b(fmt(s.scaled[i, j]))}<br>Scale = {scale_words(state)}: it keeps scores from growing with "
                f"d_k, so softmax does not saturate.")
        return Explanation(html, {"scores": ((), (), ((i, j),)), "scaled": ((), (), ((i, j),))})
    # (output columns are value dimensions, not keys: the mask is never indexed with them; found by fuzzing)
    blocked = view != "output" and s.mask is not None and not bool(s.mask[i, j])
    if view == "masked":
        before = _before_mask(s)
        if blocked and state.mask_mode == "sliding":
            html = f"{_b(f'masked[{qt[i]}, {kt[j]}]')} = {_b('−∞')}: {sliding_reason(i, j, state)}"
        elif blocked:
            html = (f"{_b(f'masked[{qt[i]}, {kt[j]}]')} = {_b('−∞')}: the {state.mask_mode} mask blocks query "
                    f"'{qt[i]}' from key '{kt[j]}', so exp(−∞) = 0 and its weight is exactly 0.")
        else:
            html = (f"{_b(f'masked[{qt[i]}, {kt[j]}]')} = {before} = {_b(fmt(s.masked[i, j]))} (allowed: the mask "
                    f"lets query '{qt[i]}' see key '{kt[j]}').")
        return Explanation(html, {before: ((), (), ((i, j),)), "masked": ((), (), ((i, j),))})
    if view == "weights":
        row = s.masked[i]
        if s.fully_masked[i]:
            html = (f"{_b(f'weight[{qt[i]}, {kt[j]}]')} = {_b('0')}: every key is blocked for '{qt[i]}', so the "
                    f"row is all zeros (not NaN) and its output is zero.")
            return Explanation(html, {"masked": ((i,), (), ())})
        if blocked:
            value = "0 (blocked: e^−∞ = 0)"
            html = f"{_b(f'weight[{qt[i]}, {kt[j]}]')} = {_b(value)}"
        else:
            html = f"{_b(f'weight[{qt[i]}, {kt[j]}]')} = {_softmax_text(row, j, float(s.weights[i, j]))}"
        html += f"<br>Softmax over the row of '{qt[i]}': the weights sum to {s.weights[i].sum():.4f}."
        return Explanation(html, {"masked": ((i,), (), ()), "weights": ((), (), ((i, j),))})
    if view == "output":
        pairs = list(zip(s.weights[i].tolist(), s.v[:, j].tolist()))
        html = (f"{_b(f'output[{qt[i]}, v{j}]')} = Σ<sub>k</sub> weight[{qt[i]}, k] · V[k, v{j}] = "
                f"{_terms(pairs)} = {_b(fmt(s.output[i, j]))}<br>A weighted average of column v{j} of V, "
                f"with the weights of row '{qt[i]}'.")
        return Explanation(html, {"weights": ((i,), (), ()), "V": ((), (j,), ())})
    return Explanation("")


OPTIONAL_EXPLAINED = ("q_rotated", "k_rotated", "capped", "biased")


def _before_mask(s: Any) -> str:
    """The map ③ masks: the last of scaled, capped, biased that is on (soft-cap, then bias, then mask)."""
    return "biased" if s.biased is not None else "capped" if s.capped is not None else "scaled"


def explain_optional(view: str, i: int, j: int, state: PlaygroundState, result: Result) -> Explanation:
    """A cell of an optional step: its rotation, bias or cap with the numbers plugged in."""
    s = result.steps
    qt, kt = state.query_tokens, state.key_tokens
    arr = getattr(s, view, None)
    if arr is None or not (0 <= i < arr.shape[0] and 0 <= j < arr.shape[1]):
        return Explanation("")
    cell = ((), (), ((i, j),))
    if view in ("q_rotated", "k_rotated"):
        return _explain_rotation(view, i, j, state, result)
    if view == "biased":  # after the soft-cap when it is on: c·tanh(s/c) + bias, as Gemma 2 and FlashAttention
        assert s.bias is not None
        before = "capped" if s.capped is not None else "scaled"
        bias = float(np.broadcast_to(s.bias, s.scaled.shape)[i, j])
        html = (f"{_b(f'biased[{qt[i]}, {kt[j]}]')} = {before} + bias = {fmt(float(getattr(s, before)[i, j]))} + "
                f"({fmt(bias)}) = {_b(fmt(float(arr[i, j])))}<br>ALiBi: bias = −slope · distance; the further the "
                "key from the query, the lower its score (no position is added to Q or K)"
                + (", added after the soft-cap, so the cap never squashes it." if before == "capped" else "."))
        return Explanation(html, {before: cell, "biased": cell})
    x, c = float(s.scaled[i, j]), float(s.softcap or 0.0)
    html = (f"{_b(f'capped[{qt[i]}, {kt[j]}]')} = c · tanh(scaled / c) = {fmt(c)} · tanh({fmt(x)} / {fmt(c)}) = "
            f"{_b(fmt(float(arr[i, j])))}<br>Soft-capping: a score stays below ±{fmt(c)} however large it "
            "grows; small ones pass almost unchanged.")
    return Explanation(html, {"scaled": cell, "capped": cell})


def _explain_rotation(view: str, i: int, c: int, state: PlaygroundState, result: Result) -> Explanation:
    """q_rotated[i, c] or k_rotated[i, c]: the turn of its column pair at its position."""
    s = result.steps
    side, src = ("q", s.q) if view == "q_rotated" else ("k", s.k)
    token = (state.query_tokens if side == "q" else state.key_tokens)[i]
    dims = int(s.rotary_dims or src.shape[1])
    value = float(getattr(s, view)[i, c])
    name = f"{view}[{token}, {c}]"
    editor = "Q" if side == "q" else "K"
    if c >= dims:
        html = (f"{_b(name)} = {editor}[{token}, {c}] = {_b(fmt(value))}: only the first {dims} columns turn "
                "(partial rotary); this one passes through unchanged.")
        return Explanation(html, {view: ((), (), ((i, c),)), editor: ((i,), (), ())})
    half = dims // 2
    pair = c % half
    base = float(s.rotary_base or 0.0)
    positions = s.positions[0 if side == "q" else 1] if s.positions is not None else np.arange(src.shape[0])
    pos = int(positions[i])
    theta = pos * base ** (-2 * pair / dims)
    x, y = float(src[i, pair]), float(src[i, pair + half])
    if c < half:
        formula = f"x·cosθ − y·sinθ = {_p(x)}·cos {_p(theta)} − {_p(y)}·sin {_p(theta)}"
    else:
        formula = f"y·cosθ + x·sinθ = {_p(y)}·cos {_p(theta)} + {_p(x)}·sin {_p(theta)}"
    html = (f"{_b(name)} = {formula} = {_b(fmt(value))}<br>Columns {pair} and {pair + half} turn together as a pair "
            f"(x, y) by θ = position · base<sup>−2i/dims</sup> = {pos} · {base:g}<sup>−2·{pair}/{dims}</sup> = "
            f"{fmt(theta)} rad: the later the token, the further it turns, so q·k sees only their distance.")
    return Explanation(html, {view: ((), (), ((i, c),)), editor: ((i,), (), ())})


def _p(v: float) -> str:
    """A number in a formula, in parentheses when negative (no "− −0.5")."""
    return f"({fmt(v)})" if v < 0 else fmt(v)


def sliding_reason(i: int, j: int, state: PlaygroundState) -> str:
    """Why the sliding mask blocks query i from key j: ahead of the query, or outside the window and not a sink."""
    o = state.options
    lq, lk = state.dims["Lq"], state.dims["Lk"]
    p = i + lk - lq  # the queries sit at the last positions
    qt, kt = state.query_tokens, state.key_tokens
    if j > p:
        return f"key '{kt[j]}' comes after query '{qt[i]}' (the sliding window is causal)."
    sinks = (f"not a sink (the sinks are keys 0…{o.sinks - 1})" if o.sinks else "and there are no sinks")
    return (f"key '{kt[j]}' (position {j}) is outside the window of query '{qt[i]}' (W = {o.window}: positions "
            f"{max(p - o.window + 1, 0)}…{p}), {sinks}; so exp(−∞) = 0 and its weight is exactly 0.")


def scale_words(state: PlaygroundState) -> str:
    if state.scale_mode == "sqrt":
        d = state.dims["d_k"]
        return f"1/√d_k = 1/√{d} = {fmt(default_scale(d))}"
    if state.scale_mode == "one":
        return "1 (unscaled)"
    return f"{fmt(state.custom_scale)} (custom; temperature τ = 1/scale = {fmt(1 / state.custom_scale)})"


def with_projection_sources(highlight: dict, state: PlaygroundState) -> dict:
    """In projection mode, carry the Q/K/V outlines back to the cells they are made of.

    Q = X_q·W_Q: row i of Q comes from row i of X_q, column c from column c of W_Q (likewise K, V from X_kv, W_K,
    W_V; X_q = X_kv = X in self-attention). Adds those editor names to ``highlight``; unchanged in Q, K, V mode.
    """
    if state.mode != "projection":
        return highlight
    out = dict(highlight)
    sources = {"Q": ("X" if state.kind == "self" else "X_q", "W_Q"),
               "K": ("X" if state.kind == "self" else "X_kv", "W_K"),
               "V": ("X" if state.kind == "self" else "X_kv", "W_V")}
    for name, (x_name, w_name) in sources.items():
        rows, cols, _ = highlight.get(name, ((), (), ()))
        if rows:
            old_rows, old_cols, old_cells = out.get(x_name, ((), (), ()))
            out[x_name] = (tuple(sorted({*old_rows, *rows})), old_cols, old_cells)
        if cols:
            out[w_name] = ((), tuple(cols), ())
    return out


# --------------------------------------------------------------------------------------------- multi-head view
MULTIHEAD_VIEWS = ("split:Q", "split:K", "split:V", "concat", "w_o", "mh_output")
"""Names of the multi-head view's maps; head h's weights map is ``f"head:{h}"``."""


def explain_multihead(view: str, i: int, j: int, state: PlaygroundState, result: Result) -> Explanation:
    """Explain cell (i, j) of a multi-head map: ``split:Q|K|V``, ``head:h``, ``concat``, ``w_o`` or ``mh_output``.

    Highlights use the same names, so the view can outline where the number comes from.
    """
    mh = result.heads
    if mh is None or i < 0 or j < 0:
        return Explanation("")
    s = mh.heads
    n_heads = mh.num_heads
    qt, kt = state.query_tokens, state.key_tokens
    d_head = mh.q_heads.shape[-1]
    dv_head = mh.v_heads.shape[-1]
    none: tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...]] = ((), (), ())

    def head_cols(h: int, width: int) -> tuple[int, ...]:
        return tuple(range(h * width, (h + 1) * width))

    if view.startswith("split:"):
        name = view[-1]
        mat = {"Q": result.q, "K": result.k, "V": result.v}[name]
        if not (0 <= i < mat.shape[0] and 0 <= j < mat.shape[1]):
            return Explanation("")
        width = dv_head if name == "V" else d_head
        h, c = divmod(j, width)
        tokens = qt if name == "Q" else kt
        use = {"Q": "its queries", "K": "its keys", "V": "the values it averages"}[name]
        html = (f"{_b(f'{name}[{tokens[i]}, {j}]')} = {_b(fmt(float(mat[i, j])))} goes to {_b(f'head {h + 1}')} "
                f"as its column {c}: head {h + 1} uses columns {h * width}…{(h + 1) * width - 1} of {name} as "
                f"{use}. Splitting is a reshape: no number changes.")
        return Explanation(html, {view: ((), head_cols(h, width), ()), name: ((), head_cols(h, width), ()),
                                  f"head:{h}": none})
    if view.startswith("head:"):
        h = int(view.split(":", 1)[1])
        if not (0 <= h < n_heads and 0 <= i < s.weights.shape[1] and 0 <= j < s.weights.shape[2]):
            return Explanation("")
        cols = head_cols(h, d_head)
        hl = {view: ((), (), ((i, j),)), "split:Q": ((i,), cols, ()), "split:K": ((j,), cols, ()),
              "Q": ((i,), cols, ()), "K": ((j,), cols, ())}
        head = f"head {h + 1}"
        scale_why = {"sqrt": f"1/√{d_head}: a head scales by its own width", "one": "unscaled"}.get(
            state.scale_mode, "custom")
        pairs = list(zip(mh.q_heads[h, i].tolist(), mh.k_heads[h, j].tolist()))
        score = float(s.scores[h, i, j])
        html = (f"{_b(f'{head} weight[{qt[i]}, {kt[j]}]')}: score = Q<sub>{h + 1}</sub>[{qt[i]}] · "
                f"K<sub>{h + 1}</sub>[{kt[j]}] = {_terms(pairs)} = {fmt(score)}; × scale {fmt(float(s.scale))} "
                f"({scale_why}) = {fmt(float(s.scaled[h, i, j]))}.<br>")
        blocked = s.mask is not None and not bool(np.broadcast_to(s.mask, s.scores.shape)[h, i, j])
        if bool(np.asarray(s.fully_masked)[h, i]):
            html += f"Every key is blocked for '{qt[i]}': the row is all zeros (not NaN)."
        elif blocked:
            html += f"Blocked by the {state.mask_mode} mask: weight {_b('0')} (e^−∞ = 0)."
        else:
            html += (f"Softmax over this head's row: {_softmax_text(s.masked[h, i], j, float(s.weights[h, i, j]))}. "
                     f"Each head has its own weights: it can look somewhere else than the others.")
        return Explanation(html, hl)
    if view == "concat":
        if not (0 <= i < mh.concat.shape[0] and 0 <= j < mh.concat.shape[1]):
            return Explanation("")
        h, c = divmod(j, dv_head)
        pairs = list(zip(s.weights[h, i].tolist(), mh.v_heads[h, :, c].tolist()))
        html = (f"{_b(f'concat[{qt[i]}, c{j}]')} = head {h + 1}'s output, column {c} = Σ<sub>k</sub> "
                f"weight<sub>{h + 1}</sub>[{qt[i]}, k] · V<sub>{h + 1}</sub>[k, {c}] = {_terms(pairs)} = "
                f"{_b(fmt(float(mh.concat[i, j])))}<br>The heads' outputs are put side by side; W_O then mixes them.")
        return Explanation(html, {view: ((), (), ((i, j),)), f"head:{h}": ((i,), (), ()),
                                  "split:V": ((), (h * dv_head + c,), ()), "V": ((), (h * dv_head + c,), ())})
    if view == "w_o":
        if not (0 <= i < mh.w_o.shape[0] and 0 <= j < mh.w_o.shape[1]):
            return Explanation("")
        h = i // dv_head
        html = (f"{_b(f'W_O[c{i}, o{j}]')} = {_b(fmt(float(mh.w_o[i, j])))}: how much concat column c{i} (from "
                f"head {h + 1}) adds to output column o{j}. A learnt parameter (editable on the left); the identity "
                f"just copies the concatenation.")
        return Explanation(html, {view: ((), (), ((i, j),)), "concat": ((), (i,), ()), "mh_output": ((), (j,), ()),
                                  "W_O": ((i,), (j,), ())})
    if view == "mh_output":
        if not (0 <= i < mh.output.shape[0] and 0 <= j < mh.output.shape[1]):
            return Explanation("")
        pairs = list(zip(mh.concat[i].tolist(), mh.w_o[:, j].tolist()))
        bias, bias_value = "", ""
        if mh.b_o is not None:
            bias, bias_value = f" + b_O[o{j}]", f" + {fmt(float(mh.b_o[j]))}"
        html = (f"{_b(f'output[{qt[i]}, o{j}]')} = Σ<sub>c</sub> concat[{qt[i]}, c] · W_O[c, o{j}]{bias} = "
                f"{_terms(pairs)}{bias_value} = "
                f"{_b(fmt(float(mh.output[i, j])))}<br>Every output column mixes all heads' outputs.")
        return Explanation(html, {view: ((), (), ((i, j),)), "concat": ((i,), (), ()), "w_o": ((), (j,), ()),
                                  "W_O": ((), (j,), ())})
    return Explanation("")
