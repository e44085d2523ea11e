"""What the Generate view draws, derived from the ``GenerationStep`` s (Qt-free): the attention rows grown into a
map, the newest row of every head, the cache (layers × K/V heads × positions) and its bytes, the text with each
new token's probability, the next-token distribution before and after sampling. Every number is the step's own."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class GridData:
    """A map to draw: ``values`` (rows × columns), ``blocked`` (True = no value: a position not in the cache),
    labels and a title."""

    values: np.ndarray
    blocked: np.ndarray
    rows: list[str]
    cols: list[str]
    title: str


def position_labels(tokens: Sequence[str], count: int) -> list[str]:
    """The first ``count`` positions as "token@position" (positions repeat tokens; the column must say which)."""
    return [f"{tokens[p] if p < len(tokens) else '?'}@{p}" for p in range(count)]


def grown_map(steps: Sequence[Any], tokens: Sequence[str], layer: int, head: int) -> GridData | None:
    """Step i's attention row (layer, head) over the positions then in the cache, as row i: the map grows downwards
    by one row a token. Columns: every position up to the newest query; a position not in that step's cache is
    blocked."""
    if not steps:
        return None
    width = max(int(max(s.cache_positions)) for s in steps) + 1
    values = np.full((len(steps), width), np.nan)  # not in the cache: no weight (drawn as a dash on the hatching)
    blocked = np.ones((len(steps), width), dtype=bool)
    for i, s in enumerate(steps):
        cols = np.asarray(s.cache_positions, dtype=int)
        values[i, cols] = np.asarray(s.attentions[layer, head], dtype=np.float64)
        blocked[i, cols] = False
    labels = position_labels(tokens, width)
    rows = [f"{labels[int(s.query_position)]} → {s.token}" for s in steps]
    return GridData(values, blocked, rows, labels, f"L{layer} H{head}: each new query's row over the cache")


def newest_rows(step: Any, tokens: Sequence[str]) -> GridData:
    """The newest query's row for every layer and head (rows "L0 H0" …) over the positions in its cache."""
    att = np.asarray(step.attentions, dtype=np.float64)
    layers, heads, _ = att.shape
    cols = position_labels(tokens, int(max(step.cache_positions)) + 1)
    names = [cols[int(p)] for p in step.cache_positions]
    return GridData(att.reshape(layers * heads, -1), np.zeros((layers * heads, att.shape[2]), dtype=bool),
                    [f"L{li} H{h}" for li in range(layers) for h in range(heads)], names,
                    "the newest row of every head (click: pick it)")


def cache_grid(step: Any, tokens: Sequence[str], kv_heads: int) -> GridData:
    """The cache as layers × K/V heads (rows) × positions (columns): each kept key/value's cell holds the mean
    attention the query heads reading it gave it this step; positions dropped from the cache are blocked."""
    att = np.asarray(step.attentions, dtype=np.float64)
    layers, heads, _ = att.shape
    group = max(1, heads // max(1, kv_heads))
    width = int(max(step.cache_positions)) + 1
    kept = np.asarray(step.cache_positions, dtype=int)
    values = np.full((layers * kv_heads, width), np.nan)
    blocked = np.ones((layers * kv_heads, width), dtype=bool)
    for li in range(layers):
        for g in range(kv_heads):
            r = li * kv_heads + g
            values[r, kept] = att[li, g * group:(g + 1) * group].mean(axis=0)
            blocked[r, kept] = False
    rows = [f"L{li} KV{g}" for li in range(layers) for g in range(kv_heads)]
    return GridData(values, blocked, rows, position_labels(tokens, width),
                    f"cache: {layers} L × {kv_heads} K/V × {len(kept)} positions (mean weight)")


def evicted_positions(step: Any) -> list[int]:
    """Every position before the newest that the cache no longer holds."""
    kept = {int(p) for p in step.cache_positions}
    return [p for p in range(int(max(step.cache_positions)) + 1) if p not in kept]


def ranges_text(positions: Sequence[int]) -> str:
    """"0–3, 7, 9–12"."""
    spans: list[list[int]] = []
    for p in sorted(positions):
        if spans and spans[-1][1] == p - 1:
            spans[-1][1] = p
        else:
            spans.append([p, p])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in spans)


def cache_text(step: Any, info: Any) -> str:
    """The cache's bytes and what they are made of, what a standard multi-head cache would need, and for a window or
    sinks what was evicted and how far the next-token distribution moved against the full cache (HTML)."""
    kept = len(step.cache_positions)
    per = 2 * info.layers * info.kv_heads * kept * info.d_head
    element = int(step.cache_bytes) // per if per else 0
    mha = int(step.cache_bytes) * info.heads // max(1, info.kv_heads)
    lines = [f"<b>Cache: {int(step.cache_bytes):,} bytes</b> = 2 (keys, values) × {info.layers} layers × "
             f"{info.kv_heads} K/V heads × {kept} positions × {info.d_head} dims × {element} bytes"]
    if info.kv_heads != info.heads:
        lines.append(f"A standard multi-head cache (one K/V head per query head, {info.heads}) would need "
                     f"{mha:,} bytes: {info.heads // max(1, info.kv_heads)} × as much.")
    else:
        lines.append(f"A standard multi-head cache: this is one ({info.heads} K/V heads, one per query head).")
    if int(step.full_cache_bytes) != int(step.cache_bytes):
        lines.append(f"The full cache would hold {int(step.full_cache_bytes):,} bytes "
                     f"({int(step.query_position) + 1} positions).")
    gone = evicted_positions(step)
    if step.kl_from_full is not None:
        now = ranges_text([int(p) for p in step.evicted]) or "none"
        lines.append(f"Evicted: {ranges_text(gone) or 'none'} (this token: {now}).")
        changed = "<b>changed</b>" if step.top_changed else "the same"
        lines.append(f"Against the full cache: KL divergence {float(step.kl_from_full):.4g} nats; the top token is "
                     f"{changed}.")
    return "<br>".join(lines)


def text_html(prompt_tokens: Sequence[str], steps: Sequence[Any], colors: Sequence[str], joiner: str = "") -> str:
    """The prompt, then each new token on a background coloured by its probability (``colors``: ten colours from
    unlikely to certain). ``joiner``: between tokens (" " for a model whose tokens are words: "3 7 SEP")."""
    out = [html.escape(_shown(t)) for t in prompt_tokens]
    for s in steps:
        p = float(s.probability)
        c = colors[min(len(colors) - 1, int(p * len(colors)))]
        out.append(f"<span style='background-color:{c}'>{html.escape(_shown(s.token))}</span>")
    return joiner.join(out)


def _shown(token: str) -> str:
    return str(token).replace("␣", " ")


def distribution(step: Any) -> list[tuple[str, float | None, float | None, bool]]:
    """The newest token's distribution: (token, its probability before temperature/top-k/top-p, after them, whether
    it is the token drawn), the union of ``top_raw`` and ``top`` ordered by the raw probability; None where the
    step's list does not name the token."""
    raw = {int(i): (str(t), float(p)) for i, t, p in step.top_raw}
    cut = {int(i): (str(t), float(p)) for i, t, p in step.top}
    ids = sorted(set(raw) | set(cut), key=lambda i: (-raw.get(i, ("", -1.0))[1], -cut.get(i, ("", -1.0))[1]))
    return [((raw.get(i) or cut[i])[0], raw[i][1] if i in raw else None, cut[i][1] if i in cut else None,
             i == int(step.id)) for i in ids]
