"""What the Multi-head view says about K/V heads (grouped-query and multi-query attention). Qt-free.

``kv_grouping`` reads ``MultiHeadSteps`` (``attention_core.multi_head_steps(..., num_kv_heads=)``): which query
heads share each K/V head, and the parameters and KV-cache bytes per token of this layer against the same layer
with one K/V head per query head (standard multi-head), from ``attention_core.multihead_steps``'s
``parameter_count`` and ``kv_cache_bytes_per_token``, so the view never counts on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.playground.model.playground import PlaygroundModel

GROUP_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#0072B2", "#D55E00", "#F0E442", "#999999")
"""One colour per K/V head (Okabe and Ito's colour-blind safe set), cycled past eight."""


@dataclass(frozen=True)
class KVGrouping:
    """``members[g]``: the query heads (0-based) that read K/V head ``g``; ``kv_head_of[h]``: query head h's K/V
    head; ``d_k_head`` / ``d_v_head``: the width of one head's key / value. ``parameters`` (W_Q, W_K, W_V, W_O with
    biases; ``weights`` without) / ``kv_bytes``: this layer's; ``standard_*``: with as many K/V heads as query heads."""

    heads: int
    kv_heads: int
    group: int
    d_head: int
    d_k_head: int
    d_v_head: int
    kv_head_of: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]
    parameters: int
    standard_parameters: int
    kv_bytes: int
    standard_kv_bytes: int
    weights: int
    standard_weights: int

    @property
    def kind(self) -> str:
        """"multi-query" (one K/V head), "standard multi-head" (one per query head) or "grouped-query"."""
        if self.kv_heads == 1:
            return "multi-query"
        return "standard multi-head" if self.kv_heads == self.heads else "grouped-query"


def group_colour(g: int) -> str:
    return GROUP_COLOURS[g % len(GROUP_COLOURS)]


def kv_grouping(model: PlaygroundModel) -> KVGrouping | None:
    """The grouping of the Playground's heads now; None with one head (nothing split)."""
    from attention_core.multihead_steps import parameter_count

    mh = model.computation.heads
    if mh is None:
        return None
    heads = int(mh.num_heads)
    kv = int(mh.num_kv_heads or heads)
    group = heads // kv
    of = tuple(int(g) for g in (mh.kv_head_of or (h // group for h in range(heads))))
    members = tuple(tuple(h for h in range(heads) if of[h] == g) for g in range(kv))
    d_head = int(mh.q_heads.shape[-1])
    kv_bytes = int(mh.kv_cache_bytes_per_token)
    d_model = heads * d_head
    return KVGrouping(heads, kv, group, d_head, int(mh.k_heads.shape[-1]), int(mh.v_heads.shape[-1]), of, members,
                      int(mh.parameters), int(parameter_count(d_model, heads)), kv_bytes, kv_bytes // kv * heads,
                      int(parameter_count(d_model, heads, bias=False, num_kv_heads=kv)),
                      int(parameter_count(d_model, heads, bias=False)))


def grouping_html(g: KVGrouping) -> str:
    """The grouping in words, each K/V head in its colour, and the cost against standard multi-head."""
    parts = []
    for kv, heads in enumerate(g.members):
        names = ", ".join(str(h + 1) for h in heads)
        parts.append(f"<span style='color:{group_colour(kv)}'><b>■ K/V head {kv + 1}</b></span> → query "
                     f"head{'s' if len(heads) > 1 else ''} {names}")
    share = (f"each K/V head serves {g.group} query heads" if g.group > 1 else "one K/V head per query head")
    params = (f"W_Q, W_K, W_V, W_O: <b>{g.weights:,}</b> weights, {g.parameters:,} with biases (standard "
              f"multi-head: {g.standard_weights:,}, {g.standard_parameters:,})")
    cache = (f"KV cache per token (one layer, 16-bit): <b>{g.kv_bytes:,} bytes</b> = {g.kv_heads} K/V "
             f"head{'s' if g.kv_heads > 1 else ''} × ({g.d_k_head} key + {g.d_v_head} value numbers) × 2 bytes "
             f"(standard: {g.standard_kv_bytes:,} bytes, {g.standard_kv_bytes / max(g.kv_bytes, 1):g}× as many)")
    return (f"<b>{g.kind.capitalize()}</b>: {g.heads} query heads, {g.kv_heads} K/V head"
            f"{'s' if g.kv_heads > 1 else ''} — {share}. " + " · ".join(parts) + f"<br>{params} · {cache}")
