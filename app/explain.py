"""'Why this number?': the formula behind any cell, with the numbers plugged in. Qt-free.

The text only formats numbers that ``attention_core`` computed (the exponentials shown are the softmax's own
terms, recovered from the displayed scaled scores), plus which source rows/columns to highlight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .state import PlaygroundState, Result

MAX_TERMS = 6


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


def explain(view: str, i: int, j: int, state: PlaygroundState, result: Result) -> Explanation:
    """Explain cell (i, j) of ``view`` in scores/scaled/masked/weights/output."""
    s = result.steps
    qt, kt = state.query_tokens, state.key_tokens
    lq, lk = s.scores.shape
    if not (0 <= i < lq and 0 <= j < (s.output.shape[1] if view == "output" else lk)):
        return Explanation("")
    q_src = "Q" if state.mode == "qkv" else "Q = X·W_Q"
    hl_q = ("Q", (i,), (), ())
    if view == "scores":
        pairs = list(zip(result.q[i].tolist(), result.k[j].tolist()))
        html = (f"{_b(f'score[{qt[i]}, {kt[j]}]')} = Q[{qt[i]}] · K[{kt[j]}] = {_terms(pairs)} = "
                f"{_b(fmt(s.scores[i, j]))}<br><span>The dot product of the query row and the key row "
                f"({q_src}). Large when they point the same way <i>and</i> are long.</span>")
        return Explanation(html, {hl_q[0]: hl_q[1:], "K": ((j,), (), ()), "scores": ((), (), ((i, j),))})
    if view == "scaled":
        html = (f"{_b(f'scaled[{qt[i]}, {kt[j]}]')} = score × scale = {fmt(s.scores[i, j])} × {fmt(s.scale)} = "
                f"{_b(fmt(s.scaled[i, j]))}<br>Scale = {scale_words(state)}: it keeps scores from growing with "
                f"d_k, so softmax does not saturate.")
        return Explanation(html, {"scores": ((), (), ((i, j),)), "scaled": ((), (), ((i, j),))})
    blocked = s.mask is not None and not bool(s.mask[i, j])
    if view == "masked":
        if blocked:
            html = (f"{_b(f'masked[{qt[i]}, {kt[j]}]')} = {_b('−∞')}: the {state.mask_mode} mask blocks query "
                    f"'{qt[i]}' from key '{kt[j]}', so exp(−∞) = 0 and its weight is exactly 0.")
        else:
            html = (f"{_b(f'masked[{qt[i]}, {kt[j]}]')} = scaled = {_b(fmt(s.masked[i, j]))} (allowed: the mask "
                    f"lets query '{qt[i]}' see key '{kt[j]}').")
        return Explanation(html, {"scaled": ((), (), ((i, j),)), "masked": ((), (), ((i, j),))})
    if view == "weights":
        row = s.masked[i]
        if s.fully_masked[i]:
            html = (f"{_b(f'weight[{qt[i]}, {kt[j]}]')} = {_b('0')}: every key is blocked for '{qt[i]}', so the "
                    f"row is all zeros (not NaN) and its output is zero.")
            return Explanation(html, {"masked": ((i,), (), ())})
        allowed = np.isfinite(row)
        shift = float(np.max(row[allowed])) if np.max(row[allowed]) > 30 else 0.0
        exps = np.where(allowed, np.exp(np.where(allowed, row - shift, 0.0)), 0.0)
        total = float(exps.sum())
        shown = " + ".join(f"e^{fmt(x - shift) if shift else fmt(x)}" for x in row[allowed][:MAX_TERMS])
        if allowed.sum() > MAX_TERMS:
            shown += " + …"
        shift_note = f" (all exponents shifted by −{fmt(shift)}, which cancels)" if shift else ""
        if blocked:
            value = "0 (blocked: e^−∞ = 0)"
            html = f"{_b(f'weight[{qt[i]}, {kt[j]}]')} = {_b(value)}"
        else:
            html = (f"{_b(f'weight[{qt[i]}, {kt[j]}]')} = e^{fmt(row[j] - shift)} / ({shown}) = "
                    f"{fmt(float(exps[j]))} / {fmt(total)} = {_b(fmt(s.weights[i, j]))}{shift_note}")
        html += f"<br>Softmax over the row of '{qt[i]}': the weights sum to {s.weights[i].sum():.4f}."
        return Explanation(html, {"masked": ((i,), (), ()), "weights": ((), (), ((i, j),))})
    if view == "output":
        pairs = list(zip(s.weights[i].tolist(), result.v[:, j].tolist()))
        html = (f"{_b(f'output[{qt[i]}, v{j}]')} = Σ<sub>k</sub> weight[{qt[i]}, k] · V[k, v{j}] = "
                f"{_terms(pairs)} = {_b(fmt(s.output[i, j]))}<br>A weighted average of column v{j} of V, "
                f"with the weights of row '{qt[i]}'.")
        return Explanation(html, {"weights": ((i,), (), ()), "V": ((), (j,), ())})
    return Explanation("")


def scale_words(state: PlaygroundState) -> str:
    if state.scale_mode == "sqrt":
        d = state.dims["d_k"]
        return f"1/√d_k = 1/√{d} = {fmt(1 / math.sqrt(d))}"
    if state.scale_mode == "one":
        return "1 (unscaled)"
    return f"{fmt(state.custom_scale)} (custom; temperature τ = 1/scale = {fmt(1 / state.custom_scale)})"
