"""What the Model tab's views show, derived from the session's trace (Qt-free): a layer's flow, one head's map
with its labels and mask, the hover read-out and the next-token list as text. Views call these and draw."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from app.common.flow import FlowData

if TYPE_CHECKING:
    from attention_core.pretrained import Trace


def head_name(layer: int, head: int) -> str:
    """"5.1": layer 5, head 1 (from 0, as the papers and TransformerLens write it)."""
    return f"{int(layer)}.{int(head)}"


def off_text(heads: Sequence[tuple[int, int]], limit: int = 8) -> str:
    """"2 heads off: 5.1, 5.5" ("" when none is); past ``limit`` names, "… and 3 more"."""
    if not heads:
        return ""
    names = [head_name(li, h) for li, h in sorted(heads)]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"{len(names)} head{'s' if len(names) != 1 else ''} off: {', '.join(names[:limit])}{more}"


def trace_text(trace: Trace, limit: int = 60) -> str:
    """The traced text as a title quotes it: the tokens joined (their visible spaces back to spaces), one line,
    at most ``limit`` characters."""
    joiner = " " if trace.info.family == "attention-playground" else ""  # its tokens are words: "3 7 SEP"
    one = " ".join(joiner.join(trace.tokens).replace("␣", " ").split())
    return f"'{one if len(one) <= limit else one[:limit - 1] + '…'}'"


def position_labels(trace: Trace) -> list[str]:
    """Axis labels: the tokens with their position when a token repeats (so rows stay distinguishable)."""
    counts: dict[str, int] = {}
    for t in trace.tokens:
        counts[t] = counts.get(t, 0) + 1
    return [t if counts[t] == 1 else f"{t}@{i}" for i, t in enumerate(trace.tokens)]


def block_labels(trace: Trace, block: int | None = None) -> list[str]:
    """A long trace's pooled axes: each block's positions, "0–15", "16–31", …"""
    b, n = block or trace.overview.block, len(trace)
    return [f"{i}–{min(i + b, n) - 1}" for i in range(0, n, b)]


def grid_block(trace: Trace) -> int:
    """Positions per cell of the mosaic's maps (1 for a short trace)."""
    return trace.overview.block if trace.is_long else 1


def grid_maps(trace: Trace) -> tuple[np.ndarray, list[str]]:
    """What the every-head mosaic draws: the full maps with the tokens, or for a long trace each head's map
    block-pooled (the block's largest weight, so a sharp head stays visible) with the blocks' positions."""
    if trace.is_long:
        return trace.overview.max, block_labels(trace)
    return trace.attentions, position_labels(trace)


def layer_flow(trace: Trace, layer: int) -> FlowData:
    """One layer's heads as flow lines (queries left, keys right), read from the trace; a long trace's lines join
    blocks of positions (a query block's average weight on each key block)."""
    if not 0 <= layer < trace.info.layers:
        raise ValueError(f"no layer {layer} (the model has {trace.info.layers}, numbered from 0)")
    off = f" ({off_text(trace.ablated)})" if trace.ablated else ""
    if trace.is_long:
        ov = trace.overview
        labels = tuple(block_labels(trace))
        w = np.asarray(ov.mean[layer], dtype=np.float64) * ov.block
        return FlowData(w, labels, labels, tuple(f"head {h}" for h in range(w.shape[0])),
                        f"{trace.name}: layer {layer}, every head, blocks of {ov.block} tokens{off}")
    labels = tuple(f"{i}: {t}" for i, t in enumerate(trace.tokens))
    w = np.asarray(trace.attentions[layer], dtype=np.float64)
    return FlowData(w, labels, labels, tuple(f"head {h}" for h in range(w.shape[0])),
                    f"{trace.name}: layer {layer}, every head{off}")


def head_window(trace: Trace, layer: int, head: int, start: int, size: int, keys: int | None = None
                ) -> tuple[np.ndarray, list[str], list[str], int, int]:
    """A long trace's head map seen through a window: the exact weights of queries start … start + size − 1 against
    keys ``keys`` … (default: the same positions), computed for those queries only; the rows' and the columns'
    labels, the first query and the first key. Blocked cells are not hatched here (hatching draws one rectangle per
    cell: 130,000 at 512 took 1.3 s); they show as weight 0 and the title says the window is exact."""
    n, size = len(trace), int(size)

    def first(at: int) -> int:
        return min(max(0, int(at)), max(0, n - size))

    start = first(start)
    key = start if keys is None else first(keys)
    values = trace.head_map(layer, head, slice(start, start + size))[:, key:key + size]
    labels = position_labels(trace)
    return values, labels[start:start + size], labels[key:key + size], start, key


def head_blocked(trace: Trace, layer: int) -> np.ndarray | None:
    """(T, T) True where the layer's mask blocks a key (the future; beyond the window on a local layer)."""
    mask = trace.mask(layer)
    return None if mask is None else ~np.asarray(mask, dtype=bool)


def hover_text(trace: Trace, layer: int, head: int, query: int, key: int) -> str:
    """"layer 5 head 1: 'John' → 'Mary' 0.431 (the query's largest: 'the' 0.52)"."""
    if not (0 <= query < len(trace) and 0 <= key < len(trace)):
        return ""
    row = trace.head_map(layer, head, slice(query, query + 1))[0]  # one row: cheap on a long trace too
    best = int(np.argmax(row))
    tok = trace.tokens
    return (f"layer {layer} head {head}: '{tok[query]}' (position {query}) → '{tok[key]}' (position {key}) "
            f"{float(row[key]):.3f} · this query's largest weight: '{tok[best]}' {float(row[best]):.3f}")


def grid_hover_text(trace: Trace, layer: int, head: int, query: int, key: int) -> str:
    """The mosaic's read-out: ``hover_text`` for a full map; for a long trace's pooled map, the blocks' positions
    and the largest weight between them."""
    if not trace.is_long:
        return hover_text(trace, layer, head, query, key)
    maps, labels = grid_maps(trace)
    if not (0 <= query < len(labels) and 0 <= key < len(labels)):
        return ""
    value = float(maps[layer, head, query, key])
    return (f"layer {layer} head {head}: queries {labels[query]} → keys {labels[key]}: largest weight {value:.3f} "
            "(click to see this head's exact map there)")


def next_token_html(trace: Trace, position: int, top: list[tuple[str, int, float]]) -> str:
    """The likeliest tokens after ``position`` (``top``: the session's ``top_next``), as HTML with probabilities."""
    if not 0 <= position < len(trace) or not top:
        return ""
    rows = "".join(f"<tr><td>{html.escape(name)}</td><td align='right'>&nbsp;{p:.1%}</td></tr>"
                   for name, _id, p in top)
    after = html.escape(trace.tokens[position])
    off = f"<br><i>with {html.escape(off_text(trace.ablated))}</i>" if trace.ablated else ""
    if getattr(trace, "prediction", "next") == "masked":  # an encoder guesses the token at a position, not after it
        what = "Predicted for" if position in trace.masked_positions else "Predicted at (no mask here)"
        return f"<b>{what} '{after}'</b> (position {position}){off}:<table>{rows}</table>"
    return f"<b>Next token after '{after}'</b> (position {position}){off}:<table>{rows}</table>"
