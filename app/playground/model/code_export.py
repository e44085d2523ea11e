"""Copy as code: the Playground's current setting as a self-contained Python script, Qt-free.

The script needs numpy alone. It rebuilds the inputs the Steps view uses — Q, K, V as given, or X (X_q and X_kv
for cross-attention) and W_Q, W_K, W_V in projection mode —, the mask (True = may attend) and the scale, then
prints the five steps (raw scores, scaled, masked, weights, output) row by row with the token labels, every number
as ``repr`` (exact: it reads back as the same float). The arithmetic is ``attention_core.steps``' own (the same
operations in the same order), so the printed numbers equal the ones on screen. With Heads > 1 the Steps view
shows attention with one head over all of d_k (the split is the Multi-head view's), and so does the script.

``script_for_model(model)`` for the window (Edit → Copy as code), ``script_for_state(state, setting)`` for the
command line (``export --view code --out FILE.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

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

_BODY = '''


def softmax_rows(masked):
    """Softmax over each row; blocked keys (-inf) get 0, and a row with every key blocked is all zeros."""
    row_max = masked.max(axis=-1, keepdims=True) if masked.shape[-1] else np.zeros((masked.shape[0], 1))
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.exp(masked - row_max)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


scores = Q @ np.swapaxes(K, -1, -2)
scaled = scores * scale
masked = scaled if mask is None else np.where(mask, scaled, -np.inf)
weights = softmax_rows(masked)
output = weights @ V


def show(heading, matrix, columns):
    """A step, row by row: the query's label, then every number as repr (exact)."""
    print(heading)
    print("  columns: " + repr(columns))
    for label, row in zip(query_tokens, matrix):
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
    lines.append(_mask(str(state.mask_mode), state.mask()))
    scale = float(state.scale())
    lines.append(f"scale = {scale!r}  # {_scale_note(state)}")
    body = _BODY
    for field, heading in STEP_LINES:
        columns = "[f'v{j}' for j in range(V.shape[1])]" if field == "output" else "key_tokens"
        body += f"show({heading!r}, {field}, {columns})\n"
    return "\n".join(lines) + body


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

    heads = {heading: field for field, heading in STEP_LINES}
    out: dict[str, tuple[list[str], list[str], np.ndarray]] = {}
    field = None
    labels: list[str] = []
    columns: list[str] = []
    rows: list[list[float]] = []
    for line in [*text.splitlines(), ""]:
        if line in heads or not line.startswith("  "):
            if field is not None:
                out[field] = (labels, columns, np.array(rows, dtype=np.float64).reshape(len(labels), len(columns)))
            field = heads.get(line)
            labels, columns, rows = [], [], []
        elif field is not None and line.startswith("  columns: "):
            columns = list(ast.literal_eval(line[len("  columns: "):]))
        elif field is not None:
            label, _, numbers = line[2:].rpartition(": ")
            labels.append(ast.literal_eval(label))
            rows.append([float(x) for x in numbers.split(", ")] if numbers else [])
    return out


__all__: Sequence[str] = ("STEP_LINES", "parse_printed", "script_for_model", "script_for_state")
