"""Every sentence the Playground shows about its numbers, derived from the state and the result. Qt-free.

The model calls these on every change, so a caption, story or status line always describes what is on screen.
Views only put the strings into widgets.
"""

from __future__ import annotations

import math

import numpy as np

from app.playground.model.explain import fmt, scale_words
from app.playground.model.state import PlaygroundState, Result
from attention_core import attention_entropy
from attention_core.presets import Preset

MASK_CAPTIONS = {"none": "no mask", "causal": "causal: no looking ahead", "padding": "padding keys blocked",
                 "custom": "custom: click a cell to block it", "sliding": "sliding window: only the last keys"}
MASK_HINTS = {"none": "Every query sees every key.",
              "causal": "Query i sees keys 0…i (True = may attend).",
              "padding": "Untick a key to mark it as padding: no query may attend to it.",
              "custom": "Click a cell in ③ Masked or ④ Weights to block or unblock it.",
              "sliding": "Query i sees keys i−W+1…i (the window W) and the first S keys (the sinks); causal."}
SUMMARY_ROWS = 4
STEP_MARKS = dict(zip(("scores", "scaled", "masked", "weights", "output"), "①②③④⑤"))
"""The on-screen number of each step (exports spell steps out instead: no circled digits in a file's title)."""
STEP_OPERATIONS = {"scores": "Q·Kᵀ", "scaled": "× {scale}", "masked": "+ mask", "weights": "softmax", "output": "· V"}
"""The operation that makes each step from the one before: the words on the arrows of the Steps view and of the
exported pipeline figure (app/playground/qt/pipeline_figure.py), written once here."""
OPTIONAL_MARKS = {"capped": "ⓒ", "biased": "ⓑ"}
"""The marks of the optional step maps, in the order computed (soft-cap, then bias: ``attention_core.OPTIONAL_STEPS``);
the Steps view draws a stand-in where the font lacks circled letters (``app.playground.qt.step_arrows.mark``)."""
OPTIONAL_OPERATIONS = {"capped": "c·tanh(x / c)", "biased": "+ bias"}
"""The operation on the arrow into each optional step map."""
STEP_INPUTS = {"scores": ("Q", "K"), "output": ("V",)}
"""The inputs that enter the flow at a step (beside the previous step)."""
BLOCKED_NOTE = "−∞ where blocked"
ARROW = "⟶"
"""The arrow from a step to the next in the Steps view's flow line."""
STEP_NOTES = {"weights": "each row sums to 1", "output": "weighted sum"}


def no_mask_note(previous: str = "") -> str:
    """What ③ says when no cell is blocked: it is the previous map unchanged."""
    return "no mask: same" + (f" as {previous}" if previous else "")


def step_operations(scale: float, scale_note: str, n_blocked: int, previous: str = "") -> dict[str, tuple[str, str]]:
    """Per step after the first: (operation, note) for the arrow that leads into it. ``scale_note`` explains the
    scale ("= 1/√4", "unscaled"); ``previous`` names ② in the no-mask note ("" in an export: "no mask: same")."""
    return {
        "scaled": (STEP_OPERATIONS["scaled"].format(scale=f"{scale:.3g}"), scale_note),
        "masked": (STEP_OPERATIONS["masked"],
                   f"{BLOCKED_NOTE} ({n_blocked} cell{'s' if n_blocked != 1 else ''}, hatched)" if n_blocked
                   else no_mask_note(previous)),
        "weights": (STEP_OPERATIONS["weights"], STEP_NOTES["weights"]),
        "output": (STEP_OPERATIONS["output"], STEP_NOTES["output"]),
    }


def story_key(state: PlaygroundState) -> tuple[object, ...]:
    """Everything a preset's story speaks about: first how the inputs are edited (mode, kind), then the numbers
    attention sees (Q, K, V as projected), tokens, scale and mask, and the options that change the weights (rotary,
    ALiBi with the head count its slope comes from, the soft-cap: the story's percentages are ④'s); not the
    heads otherwise, nor the device."""
    mask = state.mask()
    qkv = state.projected()
    o = state.options
    options = (o.rotary_base, o.rotary_dims if o.rotary_base is not None else None,
               state.num_heads if o.alibi else None, o.softcap)
    return ((state.mode, state.kind), tuple(state.query_tokens), tuple(state.key_tokens),
            tuple(a.shape for a in qkv), state.scale(), None if mask is None else mask.tobytes(),
            tuple(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in qkv), options)


def numbers_edited(state: PlaygroundState, preset_key: object) -> bool:
    """Whether a number attention sees (or a token, the scale, the mask) differs from the preset's (``preset_key``:
    its ``story_key``). Switching between editing X and W and editing Q, K, V directly changes no number: no edit."""
    return not isinstance(preset_key, tuple) or story_key(state)[1:] != preset_key[1:]


def result_summary(state: PlaygroundState, result: Result) -> str:
    """Where each query looks most, from the current weights (the first few queries)."""
    s = result.steps
    qt, kt = state.query_tokens, state.key_tokens
    parts = []
    for i in range(min(len(qt), SUMMARY_ROWS)):
        if s.fully_masked[i]:
            parts.append(f"'{qt[i]}' sees no key (all blocked)")
            continue
        j = int(np.argmax(s.weights[i]))
        parts.append(f"'{qt[i]}' puts {s.weights[i, j]:.1%} on '{kt[j]}'")
    more = f" (+{len(qt) - SUMMARY_ROWS} more queries)" if len(qt) > SUMMARY_ROWS else ""
    return "; ".join(parts) + more + "."


def story_text(state: PlaygroundState, result: Result, preset: Preset | None, preset_key: object) -> str:
    """The preset's own story while the inputs are the preset's; once a number is edited, say so and describe the
    numbers on screen instead (the original story would be stale); the preset's numbers edited another way (Q, K, V
    directly) are no edit, but the story may name the old way: the numbers on screen are described."""
    if preset is None:
        return ""
    if story_key(state) == preset_key:
        return preset.story
    if not numbers_edited(state, preset_key):  # the preset's numbers, edited another way: no edit
        how = "as Q, K, V" if state.mode == "qkv" else "as X and W" if state.kind == "self" else "as cross-attention"
        return f"<b>{preset.title}</b>, its numbers {how}: {result_summary(state, result)}"
    return f"<b>{preset.title}, edited</b>: now {result_summary(state, result)}"


def step_captions(state: PlaygroundState, result: Result) -> dict[str, str]:
    """The line under each step's map."""
    s = result.steps
    n_blocked = 0 if s.mask is None else int((~s.mask).sum())
    warn = ""
    if s.fully_masked.any():
        rows = ", ".join(t for t, full in zip(state.query_tokens, s.fully_masked) if full)
        warn = f"  <span style='color:#c0392b'>⚠ every key blocked for: {rows} → zero weights</span>"
    return {
        "scores": "query row · key row (dot product)",
        "scaled": f"× {scale_words(state)}",
        "masked": f"{MASK_CAPTIONS[state.mask_mode]} · {n_blocked} cells = −∞{warn}",
        "weights": "each row sums to 1 (Σ at the right)" if not s.fully_masked.any()
        else "each row sums to 1 (Σ at the right), blocked rows to 0",
        "output": "each row: weighted average of V's rows",
    }


def flow_html(state: PlaygroundState, result: Result) -> dict[str, str]:
    """Per step: the arrow that leads into its map, "from ⟶ operation note", with Q, K (into ①) and V (into ⑤)
    named where they enter, so the Steps view reads as one flow whatever way its maps are laid out. One line each:
    what the caption under the map already says (row sums, weighted average) is not repeated."""
    s = result.steps
    n_blocked = 0 if s.mask is None else int((~s.mask).sum())
    scale_note = ("unscaled" if s.scale == 1.0 else f"= 1/√{state.dims['d_k']}" if state.scale_mode == "sqrt"
                  else "custom")
    # the maps in the order computed: ② is followed by ⓒ (soft-cap) and ⓑ (bias) while they are on, and ③ masks
    # the last of them: its arrow names that map (it said "② ⟶ + mask" when ③ masked the soft-capped scores)
    chain = ["scores", "scaled", *(n for n in OPTIONAL_MARKS if getattr(s, n, None) is not None), "masked",
             "weights", "output"]
    marks = {**STEP_MARKS, **OPTIONAL_MARKS}
    ops = step_operations(s.scale, scale_note, n_blocked, previous=marks[chain[chain.index("masked") - 1]])
    lq, lk, d_k, d_v = s.scores.shape[0], s.scores.shape[1], s.q.shape[-1], s.v.shape[-1]

    def arrow(source: str, op: str, note: str = "") -> str:
        # one long-arrow glyph (DejaVu and the system fonts have it): "─op─▶" drew its box-drawing lines as minus
        # signs beside the operation ("① −× 0.5−▶")
        return f"{source} {ARROW} <b>{op}</b>" + (f" <i>{note}</i>" if note else "")

    flow = {"scores": arrow(f"<b>Q</b> {lq}×{d_k}, <b>K</b> {lk}×{d_k}", STEP_OPERATIONS["scores"])}
    for prev, name in zip(chain, chain[1:]):
        if name in OPTIONAL_OPERATIONS:
            flow[name] = arrow(marks[prev], OPTIONAL_OPERATIONS[name])
            continue
        op, note = ops[name]
        if name in STEP_INPUTS:  # V enters here
            note = ", ".join(f"<b>{v}</b> {lk}×{d_v} enters" for v in STEP_INPUTS[name])
        elif name not in ("scaled", "masked"):
            note = ""
        flow[name] = arrow(marks[prev], op, note)
    return flow


def heads_banner_html(state: PlaygroundState) -> str:
    """What the heads do, for the Steps view ("" with one head): the steps there are one head over all of d_k;
    the split is drawn on the Multi-head tab (the link's href is ``multihead``)."""
    h = state.num_heads
    if h <= 1:
        return ""
    d_k, d_v = state.dims["d_k"], state.dims["d_v"]
    return (f"<b>Heads = {h}</b>: these steps are attention with <i>one</i> head over all d_k = {d_k} columns. "
            f"With {h} heads each head attends with its own {d_k // h} columns of Q and K (and {d_v // h} of V), "
            f"and W_O joins their outputs: <a href='multihead'>see the {h} heads in the Multi-head tab →</a>")


def status_text(result: Result) -> str:
    s = result.steps
    return (f"computed on {s.device} in {s.seconds * 1e6:.0f} µs · {s.scores.shape[0]} queries × "
            f"{s.scores.shape[1]} keys · d_k={s.d_k} · d_v={s.output.shape[1]} · scale {s.scale:.4g}")


def scale_text(state: PlaygroundState) -> str:
    eff = state.scale()
    return f"scale = {eff:.4g} (temperature τ = {1 / eff:.3g})"


def heads_tooltip(state: PlaygroundState) -> str:
    return (f"Valid head counts for d_k={state.dims['d_k']}, d_v={state.dims['d_v']}: "
            + ", ".join(map(str, state.valid_head_counts())))


def saturation_html(state: PlaygroundState, result: Result) -> str:
    """Per query row: the largest weight and the entropy against its maximum log(n); then a verdict."""
    s = result.steps
    ent = attention_entropy(s.weights)
    rows = []
    for i, tok in enumerate(state.query_tokens[:8]):
        if s.fully_masked[i]:
            rows.append(f"{tok}: <span style='color:#c0392b'>all keys blocked</span>")
            continue
        n_allowed = int(np.isfinite(s.masked[i]).sum())
        max_ent = math.log(n_allowed) if n_allowed > 1 else 0.0
        rows.append(f"{tok}: max {s.weights[i].max():.2f} · H {max(float(ent[i]), 0.0) + 0.0:.2f} of {max_ent:.2f}"
                    + (" (only one key allowed)" if n_allowed == 1 else ""))
    more = "" if len(state.query_tokens) <= 8 else f"<br>… {len(state.query_tokens) - 8} more rows"
    # a row with a single allowed key is 1.0 by construction, not saturated: judge rows with a choice
    choice = np.isfinite(s.masked).sum(axis=-1) > 1
    peak = float(np.max(s.weights[choice])) if s.weights.size and choice.any() else 0.0
    verdict = ("<b>saturated</b>: softmax is nearly one-hot, gradients vanish" if peak > 0.95 else
               "<b>spread</b>: weights are near uniform" if peak < 1.5 / max(s.weights.shape[1], 1) else
               "balanced")
    return ("max = largest weight in the row; H = row entropy in nats, of the uniform maximum log(n).<br>"
            + "<br>".join(rows) + more + f"<br>{verdict}")


def heads_info_html(state: PlaygroundState) -> str:
    """What splitting into heads does to the widths and (not) to the parameter count: the weights of W_Q, W_K, W_V
    and W_O as this playground has them (no biases: a lesson's ``size(W_Q) + …`` counts the same), and the scale
    each head really uses. With fewer K/V heads than query heads (grouped-query), K and V are narrower and the
    layer has fewer weights than standard multi-head: the text says so instead of "as many as one big head"."""
    h = state.num_heads
    kv = state.options.kv_heads(h)
    d_k, d_v = state.dims["d_k"], state.dims["d_v"]
    d_head = d_k // max(h, 1)
    heads = f"{h} head{'s' if h > 1 else ''}"
    scaled = {"sqrt": f"scales its scores by 1/√{d_head}", "one": "leaves its scores unscaled (scale 1)"}
    scaling = scaled.get(state.scale_mode, f"scales its scores by {fmt(state.scale(d_head))} (the custom scale)")
    standard = 4 * d_k * d_k
    if state.mode == "projection":  # the matrices on the left, whatever their shapes
        shapes = {n: state.shape_of(n) for n in ("W_Q", "W_K", "W_V", "W_O")}
        weights = sum(r * c for r, c in shapes.values())
        sizes = ", ".join(f"{n} {r}×{c}" for n, (r, c) in shapes.items())
        bias = sum(c for _r, c in shapes.values())
        d_model = shapes["W_Q"][0]
        standard = d_model * (d_k + d_k + d_v) + shapes["W_O"][0] * shapes["W_O"][1]
    elif kv < h:  # Q, K, V given: a layer that would make them from a d_k-wide X, K and V narrower
        d_kv = d_k * kv // h
        weights, bias = 2 * d_k * d_k + 2 * d_k * d_kv, 2 * d_k + 2 * d_kv
        sizes = f"W_Q and W_O {d_k}×{d_k}, W_K and W_V {d_k}×{d_kv} for a {d_k}-wide X"
    else:  # Q, K, V given: a layer that would make them from a d_k-wide X
        weights, bias = standard, 4 * d_k
        sizes = f"W_Q, W_K, W_V, W_O, each {d_k}×{d_k} for a {d_k}-wide X"
    if kv < h:
        group = h // kv
        text = (f"<b>{heads} sharing {kv} K/V head{'s' if kv > 1 else ''}</b> "
                f"({'multi-query' if kv == 1 else 'grouped-query'}): each query head takes {d_head} of the {d_k} "
                f"columns of Q and {scaling}; each K/V head is {d_head} columns of K (K is {d_head * kv} wide) and "
                f"serves {group} query heads. The layer's weights ({sizes}; no biases here): <b>{weights}</b>, "
                f"against {standard} for standard multi-head (biases add {bias} more): sharing K and V heads saves "
                "weights and KV-cache bytes, not query heads. Black lines mark head boundaries; W_O is editable on "
                "the left.")
        return text
    text = (f"<b>{heads}</b>: each head takes {d_head} of the {d_k} columns of Q and K (and {d_v // max(h, 1)} of "
            f"V's {d_v}) and {scaling}. The layer's weights ({sizes}; no biases here): <b>{weights}</b> for "
            f"{heads}, exactly as many as one big head (a layer with biases adds {bias} more, for any number of "
            "heads): heads split the width, they add no parameters. Black lines mark head boundaries; W_O is "
            "editable on the left.")
    if h == 1:
        # (no "right": on a narrow window the control sits in the left column's "Scale, mask, heads" tab)
        text += ("<br><i>Choose 2 or more Heads (the \"Heads and device\" box, after Scale and Mask) to see the "
                 "split.</i>")
    return text


def time_text(result: Result) -> str:
    return f"{result.steps.seconds * 1e6:.0f} µs on {result.steps.device}"


def plain_text(html: str) -> str:
    """The explanation bar's rich text as plain text (tags dropped, entities and sub/superscripts kept readable)."""
    import html as html_lib
    import re

    text = re.sub(r"<br\s*/?>", "\n", html)
    text = re.sub(r"<sub>(.*?)</sub>", r"_\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return html_lib.unescape(text).strip()


__all__ = ["BLOCKED_NOTE", "MASK_HINTS", "OPTIONAL_MARKS", "OPTIONAL_OPERATIONS", "STEP_MARKS", "STEP_OPERATIONS",
           "flow_html", "heads_banner_html",
           "heads_tooltip", "no_mask_note", "plain_text", "result_summary", "saturation_html", "scale_text",
           "status_text", "step_captions", "step_operations", "story_key", "story_text", "time_text", "numbers_edited"]
