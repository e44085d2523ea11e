"""Copy as code: the Playground's current setting as a self-contained Python script, Qt-free. The script needs numpy
alone. It rebuilds the inputs the Steps view uses — Q, K, V as given, or X (X_q and X_kv for cross-attention) and
W_Q, W_K, W_V in projection mode —, the mask (True = may attend; the sliding window written as its rule) and the
scale, then prints the five steps (raw scores, scaled, masked, weights, output) row by row with the token labels,
every number as ``repr`` (exact: it reads back as the same float). The modern options add their steps before those
(q_rotated, k_rotated, capped, biased: the soft-cap before the bias, as Gemma 2 and FlashAttention), K/V heads add
every query head's weights with its K/V head, and any modern option (or block sizes other than 2 × 2) adds
FlashAttention's tiled pass and its output. The arithmetic is ``attention_core.steps``' own (the same operations in
the same order), so the printed numbers equal the ones on screen. With Heads > 1 the Steps view shows attention
with one head over all of d_k (the split is the Multi-head view's), and so does the script.

``script_for_model(model)`` for the window (Edit → Copy as code), ``script_for_state(state, setting)`` for the
command line (``export --view code --out FILE.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from app.playground.model.options import DEFAULT_BLOCK, head_rotary_dims

if TYPE_CHECKING:
    from app.playground.model.playground import PlaygroundModel
    from app.playground.model.state import PlaygroundState

STEP_LINES = (
    ("scores", "1. raw scores = Q @ K.T"),
    ("scaled", "2. scaled = scores * scale"),
    ("masked", "3. masked = scaled where the mask allows, -inf where it blocks"),
    ("weights", "4. weights = softmax(masked) over each row (a row with every key blocked: zeros)"),
    ("output", "5. output = weights @ V"),
)
"""The five steps in the order the script prints them: (the ``AttentionSteps`` field, the heading printed)."""
OPTIONAL_LINES = (
    ("q_rotated", "q_rotated = rotate(Q, query positions): rotary positions"),
    ("k_rotated", "k_rotated = rotate(K, key positions): rotary positions (scores = q_rotated @ k_rotated.T)"),
    ("capped", "capped = softcap * tanh(scaled / softcap): soft-capping, before the bias and the mask"),
    ("biased", "biased = capped + bias (scaled + bias without a soft-cap): ALiBi, after the soft-cap"),
)
"""The optional steps, printed (before the five) while their option is on."""
FLASH_LINE = ("flash_output", "flash output = FlashAttention's tiled pass (online softmax), never the full matrix")
HEAD_LINE = "head {h}: weights (K/V head {g})"

_BODY = '''


def softmax_rows(masked):
    """Softmax over each row; blocked keys (-inf) get 0, and a row with every key blocked is all zeros."""
    row_max = masked.max(axis=-1, keepdims=True) if masked.shape[-1] else np.zeros((masked.shape[0], 1))
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.exp(masked - row_max)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


STEPS_BODY


def show(heading, matrix, columns, rows=None):
    """A step, row by row: the row's label (a query's unless told), then every number as repr (exact)."""
    print(heading)
    print("  columns: " + repr(columns))
    for label, row in zip(query_tokens if rows is None else rows, matrix):
        print("  " + repr(label) + ": " + ", ".join(repr(float(x)) for x in row))


print("scale: " + repr(scale))
'''


def _matrix(name: str, values: np.ndarray) -> str:
    """``NAME = np.array([[...], ...])`` with every number as ``repr`` (exact)."""
    rows = [", ".join(repr(float(x)) for x in row) for row in np.asarray(values, dtype=np.float64)]
    inner = ",\n    ".join(f"[{r}]" for r in rows)
    return f"{name} = np.array([\n    {inner},\n])"


def _mask(mode: str, mask: np.ndarray | None) -> str:
    if mask is None:
        return "mask = None  # no mask: every query may attend to every key"
    if mode == "causal" and mask.shape[0] == mask.shape[1]:
        return (f"mask = np.tril(np.ones(({mask.shape[0]}, {mask.shape[1]}), dtype=bool))  "
                "# causal: query i sees keys 0..i")
    rows = ", ".join("[" + ", ".join(repr(bool(x)) for x in row) + "]" for row in mask)
    return f"mask = np.array([{rows}])  # {mode} mask: True = may attend"


def script_for_state(state: PlaygroundState, setting: str = "") -> str:
    """The script that rebuilds ``state``'s inputs, mask and scale and prints the five steps the Steps view
    shows; ``setting`` (the export context's line) goes into its docstring."""
    m = state.matrices
    heads = int(state.num_heads)
    lines = ['"""Scaled dot-product attention, step by step: exported from Attention Playground (Copy as code).',
             "", f"Setting: {setting}" if setting else "Setting: the Playground's current inputs.",
             "Needs numpy only. Prints the five steps of the Steps view, every number as repr (exact)."]
    if heads > 1:
        lines += ["", f"Heads = {heads}: like the Steps view, this is attention with one head over all "
                  f"d_k = {state.dims['d_k']} columns; the split into heads is the Multi-head view's."]
    lines += ['"""', "", "import numpy as np", ""]
    lines.append(f"query_tokens = {[str(t) for t in state.query_tokens]!r}")
    lines.append(f"key_tokens = {[str(t) for t in state.key_tokens]!r}")
    lines.append("")
    if state.mode == "qkv":
        lines.append("# Q, K, V given directly")
        for name in ("Q", "K", "V"):
            lines.append(_matrix(name, m[name]))
    else:
        xs = ("X",) if state.kind == "self" else ("X_q", "X_kv")
        lines.append(f"# projection mode ({state.kind}-attention): Q, K, V are the inputs times W_Q, W_K, W_V")
        for name in (*xs, "W_Q", "W_K", "W_V"):
            lines.append(_matrix(name, m[name]))
        xq, xkv = (xs[0], xs[0]) if len(xs) == 1 else xs
        lines += [f"Q = {xq} @ W_Q", f"K = {xkv} @ W_K", f"V = {xkv} @ W_V"]
    lines.append("")
    if state.mask_mode == "sliding":
        lines += sliding_lines(state.options.window, state.options.sinks)
    else:
        lines.append(_mask(str(state.mask_mode), state.mask()))
    scale = float(state.scale())
    lines.append(f"scale = {scale!r}  # {_scale_note(state)}")
    lines += option_lines(state)
    body = _BODY.replace("STEPS_BODY", steps_body(state))
    fields = [f for f, _ in OPTIONAL_LINES if f in optional_fields(state)]
    for field, heading in [*(line for line in OPTIONAL_LINES if line[0] in fields), *STEP_LINES]:
        columns = "[f'v{j}' for j in range(output.shape[1])]" if field == "output" else "key_tokens"
        if field in ("q_rotated", "k_rotated"):
            columns = "[f'k{j}' for j in range(Q.shape[1])]"
        rows = ", key_tokens" if field == "k_rotated" else ""
        body += f"show({heading!r}, {field}, {columns}{rows})\n"
    return "\n".join(lines) + body + extra_sections(state, HEAD_LINE, FLASH_LINE[1])


def optional_fields(state: PlaygroundState) -> set[str]:
    """The optional steps the state's options turn on (``AttentionSteps`` fields)."""
    o = state.options
    out = {"q_rotated", "k_rotated"} if o.rotary_base is not None else set()
    return out | ({"capped"} if o.softcap is not None else set()) | ({"biased"} if o.alibi else set())


def _positions_lines() -> list[str]:
    return ["# positions: the queries sit at the last positions of the keys (as rows decoded after a prompt)",
            "query_pos = np.arange(len(query_tokens))[:, None] + (len(key_tokens) - len(query_tokens))",
            "key_pos = np.arange(len(key_tokens))[None, :]"]


def sliding_lines(window: int, sinks: int) -> list[str]:
    """The sliding-window mask, written as its rule."""
    return [*_positions_lines(),
            f"window, sinks = {int(window)}, {int(sinks)}  # the sliding window and the attention sinks",
            "# causal; a query sees itself and the window - 1 keys before it, and the first `sinks` keys",
            "mask = (key_pos <= query_pos) & ((key_pos > query_pos - window) | (key_pos < sinks))"]


_ROTATE = '''

def rotate(x, positions, dims=None):
    """Rotary positions in the rotate-half layout (Hugging Face's Llama): pair c = (column c, column c + dims/2)
    of the first dims columns (rotary_dims unless told) turns by the angle position * rotary_base ** (-2c / dims)."""
    dims = rotary_dims if dims is None else dims
    half = dims // 2
    angles = positions[:, None] * (1.0 / rotary_base ** (np.arange(0, dims, 2) / dims))
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
    part = x[:, :dims]
    turned = np.concatenate([-part[:, half:], part[:, :half]], axis=-1)
    return np.concatenate([part * cos + turned * sin, x[:, dims:]], axis=-1)

'''

_REPEAT_KV = '''

def repeat_kv(x):
    """K or V with each K/V head's columns repeated for the query heads of its group: what one head over all
    of d_k reads (grouped-query attention)."""
    parts = np.split(x, num_kv_heads, axis=-1)
    return np.concatenate([p for p in parts for _ in range(num_heads // num_kv_heads)], axis=-1)

'''


def option_lines(state: PlaygroundState) -> list[str]:
    """The values (and helper functions) of the modern options that are on."""
    from attention_core import alibi_slopes

    o, out = state.options, []
    if o.rotary_base is not None:
        dims = o.rotary_dims or state.dims["d_k"]
        out += [f"rotary_base = {float(o.rotary_base)!r}",
                f"rotary_dims = {int(dims)}  # how many leading columns of Q and K turn, in pairs", _ROTATE]
    if o.alibi:
        slope = float(alibi_slopes(state.num_heads)[0])
        out += [] if state.mask_mode == "sliding" else _positions_lines()
        out += [f"alibi_slope = {slope!r}  # ALiBi: head 0's slope of {state.num_heads} head(s) (Press et al.)",
                "bias = -alibi_slope * np.abs(query_pos - key_pos)  # distance costs"]
    if o.softcap is not None:
        out.append(f"softcap = {float(o.softcap)!r}  # soft-capping: scores squashed into (-softcap, softcap)")
    if o.num_kv_heads is not None:
        out += [f"num_heads, num_kv_heads = {state.num_heads}, {o.num_kv_heads}  # grouped-query attention: "
                "K and V hold num_kv_heads heads", _REPEAT_KV]
    return out


def steps_body(state: PlaygroundState) -> str:
    """The computation of every step, the optional ones where they are on, in ``attention_steps``' order."""
    o = state.options
    grouped = o.num_kv_heads is not None
    lines = ["K_read, V_read = repeat_kv(K), repeat_kv(V)"] if grouped else []
    k, v = ("K_read", "V_read") if grouped else ("K", "V")
    if o.rotary_base is not None:
        lines += ["q_rotated = rotate(Q, np.arange(Q.shape[0]))", f"k_rotated = rotate({k}, np.arange({k}.shape[0]))",
                  "scores = q_rotated @ k_rotated.T"]
    else:
        lines.append(f"scores = Q @ np.swapaxes({k}, -1, -2)")
    lines.append("scaled = scores * scale")
    last = "scaled"
    if o.softcap is not None:  # soft-cap, then bias, then mask: attention_core.steps' order
        lines.append("capped = softcap * np.tanh(scaled / softcap)")
        last = "capped"
    if o.alibi:
        lines.append(f"biased = {last} + bias")
        last = "biased"
    lines += [f"masked = {last} if mask is None else np.where(mask, {last}, -np.inf)",
              "weights = softmax_rows(masked)", f"output = weights @ {v}"]
    return "\n".join(lines)


_FLASH = '''

def flash_attention(q, k, v):
    """FlashAttention-2's forward pass: each block of query rows sweeps the key blocks, keeping a running row
    max m, a running sum l and an un-normalised output o, rescaled by exp(m_old - m_new) when a larger max
    arrives; the Lq x Lk matrix is never formed."""
    out = np.zeros((q.shape[0], v.shape[1]))
    for r0 in range(0, q.shape[0], block_q):
        rows = slice(r0, min(r0 + block_q, q.shape[0]))
        n = rows.stop - rows.start
        m, l, o = np.full(n, -np.inf), np.zeros(n), np.zeros((n, v.shape[1]))
        for c0 in range(0, k.shape[0], block_k):
            cols = slice(c0, min(c0 + block_k, k.shape[0]))
            s = (q[rows] @ k[cols].T) * scale
BIAS_CAP_MASK
            if not np.isfinite(s).any():
                continue  # the mask blocks the whole tile: skipped
            m_new = np.maximum(m, s.max(axis=1))
            m_safe = np.where(np.isfinite(m_new), m_new, 0.0)  # a row with nothing seen yet
            p = np.exp(s - m_safe[:, None])
            rescale = np.exp(m - m_safe)
            l = l * rescale + p.sum(axis=1)
            o = o * rescale[:, None] + p @ v[cols]
            m = m_new
        out[rows] = np.divide(o, l[:, None], out=np.zeros_like(o), where=l[:, None] > 0)
    return out

'''


def extra_sections(state: PlaygroundState, head_line: str, flash_heading: str) -> str:
    """With K/V heads: every query head's weights with its group's K/V head (the Multi-head view's maps). With
    any modern option on: FlashAttention's tiled pass, printed beside the output it must equal."""
    o, out = state.options, ""
    if o.num_kv_heads is not None:
        out += _heads_section(state, head_line)
    if not with_tiles(state):
        return out
    k, v = ("K_read", "V_read") if o.num_kv_heads is not None else ("K", "V")
    q, k = ("q_rotated", "k_rotated") if o.rotary_base is not None else ("Q", k)
    tile = []
    if o.softcap is not None:
        tile.append("            s = softcap * np.tanh(s / softcap)")
    if o.alibi:
        tile.append("            s = s + bias[rows, cols]")
    tile.append("            s = s if mask is None else np.where(mask[rows, cols], s, -np.inf)")
    return (out + f"\n\nblock_q, block_k = {o.block_q}, {o.block_k}  # query rows and key columns per tile\n"
            + _FLASH.replace("BIAS_CAP_MASK", "\n".join(tile))
            + f"\nflash_output = flash_attention({q}, {k}, {v})\n"
            f"show({flash_heading!r}, flash_output, [f'v{{j}}' for j in range(flash_output.shape[1])])\n"
            "print('largest |flash output - output|: ' + repr(float(np.abs(flash_output - output).max(initial=0))))\n")


def _heads_section(state: PlaygroundState, head_line: str) -> str:
    """Every query head's weights, reading its group's K/V head, with the options per head (the Multi-head view's
    maps: ``options.head_options``)."""
    from attention_core import alibi_slopes

    o, h = state.options, state.num_heads
    d_head = state.dims["d_k"] // h
    dims = head_rotary_dims(o, d_head)
    lines = ["", "", "# The query heads, each reading its group's K/V head (the Multi-head view's maps)",
             "d_head = Q.shape[1] // num_heads", f"head_scale = {float(state.scale(d_head))!r}"]
    if o.alibi:
        lines.append(f"head_slopes = {[float(x) for x in alibi_slopes(h)]!r}  # ALiBi: each head's own slope")
    lines += ["for h in range(num_heads):", "    g = h // (num_heads // num_kv_heads)",
              "    q_h, k_h = Q[:, h * d_head:(h + 1) * d_head], K[:, g * d_head:(g + 1) * d_head]"]
    if dims is not None:
        lines += [f"    q_h = rotate(q_h, np.arange(len(q_h)), {dims})  # each head turns its own first columns",
                  f"    k_h = rotate(k_h, np.arange(len(k_h)), {dims})"]
    lines.append("    s_h = (q_h @ k_h.T) * head_scale")
    if o.softcap is not None:
        lines.append("    s_h = softcap * np.tanh(s_h / softcap)")
    if o.alibi:
        lines.append("    s_h = s_h - head_slopes[h] * np.abs(query_pos - key_pos)")
    lines += ["    w_h = softmax_rows(s_h if mask is None else np.where(mask, s_h, -np.inf))",
              f"    show(f{head_line!r}, w_h, key_tokens)", ""]
    return "\n".join(lines)


def with_tiles(state: PlaygroundState) -> bool:
    """Whether the script runs FlashAttention's tiles too: with any modern option on or block sizes chosen."""
    o = state.options
    return bool(o.on(state.mask_mode)) or (o.block_q, o.block_k) != (DEFAULT_BLOCK, DEFAULT_BLOCK)


def _scale_note(state: PlaygroundState) -> str:
    mode = str(state.scale_mode)
    if mode == "one":
        return "1: unscaled"
    if mode == "custom":
        return "a custom scale"
    return f"1/sqrt(d_k), d_k = {state.dims['d_k']}"


def script_for_model(model: PlaygroundModel) -> str:
    """The script for the Playground's current state, its docstring naming the setting as an export does."""
    from app.playground.model.export_context import playground_context

    return script_for_state(model.state, playground_context(model).line())


def parse_printed(text: str) -> dict[str, tuple[list[str], list[str], np.ndarray]]:
    """Read what a script prints back: step field -> (row labels, column labels, numbers). For tests and for
    anyone checking a script against the window."""
    import ast
    import re

    heads = {heading: field for field, heading in (*OPTIONAL_LINES, *STEP_LINES, FLASH_LINE)}
    head_re = re.compile(re.escape(HEAD_LINE).replace(r"\{h\}", r"(\d+)").replace(r"\{g\}", r"\d+"))
    out: dict[str, tuple[list[str], list[str], np.ndarray]] = {}
    field = None
    labels: list[str] = []
    columns: list[str] = []
    rows: list[list[float]] = []
    for line in [*text.splitlines(), ""]:
        if line in heads or not line.startswith("  "):
            if field is not None:
                out[field] = (labels, columns, np.array(rows, dtype=np.float64).reshape(len(labels), len(columns)))
            head = head_re.fullmatch(line)
            field = heads.get(line) if head is None else f"head:{head.group(1)}"
            labels, columns, rows = [], [], []
        elif field is not None and line.startswith("  columns: "):
            columns = list(ast.literal_eval(line[len("  columns: "):]))
        elif field is not None:
            label, _, numbers = line[2:].rpartition(": ")
            labels.append(ast.literal_eval(label))
            rows.append([float(x) for x in numbers.split(", ")] if numbers else [])
    return out


__all__: Sequence[str] = ("FLASH_LINE", "OPTIONAL_LINES", "STEP_LINES", "parse_printed", "script_for_model",
                          "script_for_state")
