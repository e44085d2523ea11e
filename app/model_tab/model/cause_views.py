"""What the Cause view shows, as plain data and words (Qt-free): the knockout's "q→k" cells and its layers read from
what a person types (refused with the reason), the patching sweeps' axes and labels, and each panel's caption,
which names the model, the text and the position its numbers are for (a caption that no longer describes the state
would be a bug, so ``CauseAnalysis`` clears a result the moment its text or model changes)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from attention_core.pretrained.cause.sweeps import SWEEPS as SWEEP_TABLE

SWEEPS = tuple(SWEEP_TABLE)
"""The patching sweeps' names, the library's own table (``cause.sweeps`` is torch-free: importing it loads no torch)."""
SWEEP_HELP = {
    "resid": "the residual stream entering layer L at one position",
    "attn_out": "layer L's attention output at one position",
    "mlp_out": "layer L's MLP output at one position",
    "heads": "one head's output (z) at every position",
    "heads_by_position": "one head's output at one position",
    "q": "one head's query input at every position",
    "k": "one key/value head's key input at every position",
    "v": "one key/value head's value input at every position",
}


class CauseHost(Protocol):
    """What the Cause view's analysis needs of the session (``InspectSession``)."""

    model: Any
    trace: Any
    traced_text: str
    runner: Any
    events: Any
    heads: Any  # the Detect view's ``HeadsAnalysis``: its ``off`` heads are named, as the numbers here keep them on

    @property
    def shown_position(self) -> int: ...

    def top_next(self, position: int | None = None, k: int = 5) -> list[tuple[str, int, float]]: ...


_EDGE = re.compile(r"^\s*(-?\d+)\s*(?:→|->|>|:)\s*(-?\d+)\s*$")


def short(text: str, n: int = 48) -> str:
    """``text`` cut to ``n`` characters with an ellipsis, quoted."""
    return f"“{text if len(text) <= n else text[:n - 1] + '…'}”"


def parse_edges(text: str, length: int) -> list[tuple[int, int]]:
    """"q→k, q→k" (also "q->k", "q>k" or "q:k"; negative positions count from the end) as (query, key) pairs
    within ``length`` tokens; ValueError with the reason."""
    cells: list[tuple[int, int]] = []
    for part in (p for p in re.split(r"[,;]", str(text)) if p.strip()):
        m = _EDGE.match(part)
        if m is None:
            raise ValueError(f"{part.strip()!r} is not a query→key cell (write e.g. 5→1, 5→2)")
        q, k = (int(g) for g in m.groups())
        for name, v in (("query", q), ("key", k)):
            if not -length <= v < length:
                raise ValueError(f"{name} {v} is outside the text's {length} tokens (0 to {length - 1})")
        cells.append((q % length, k % length))
    if not cells:
        raise ValueError("name at least one query→key cell (e.g. 5→1)")
    return cells


def parse_layers(text: str, layers: int, heads: int) -> list[Any] | None:
    """"all" (or empty): None (every layer); else layers "0, 1" and/or heads "1.2"; ValueError with the reason."""
    s = str(text).strip().lower()
    if s in ("", "all"):
        return None
    out: list[Any] = []
    for part in (p.strip() for p in re.split(r"[,;\s]+", s) if p.strip()):
        try:
            nums = [int(x) for x in part.split(".")]
        except ValueError:
            raise ValueError(f"{part!r} is neither a layer (1) nor a head (1.2)") from None
        if len(nums) > 2 or not 0 <= nums[0] < layers or (len(nums) == 2 and not 0 <= nums[1] < heads):
            raise ValueError(f"{part!r}: the model has layers 0 to {layers - 1} and heads 0 to {heads - 1}")
        out.append(nums[0] if len(nums) == 1 else (nums[0], nums[1]))
    return out


def position_text(tokens: Sequence[str], p: int) -> str:
    return f"position {p} ({tokens[p]!r})" if 0 <= p < len(tokens) else f"position {p}"


def lens_caption(model: str, text: str, lens: Any) -> str:
    what = "the masked token" if lens.prediction == "masked" else "the next token"
    return (f"Logit lens of {model} on {short(text)} at {position_text(lens.tokens, lens.position)}: each half-layer's "
            f"residual state through the final norm and unembedding, its top tokens for {what}; the last row is the "
            "model's own prediction.")


def attribution_caption(model: str, text: str, a: Any) -> str:
    metric = (f"logit({a.target_token!r}) − logit({a.foil_token!r})" if a.foil is not None
              else f"logit({a.target_token!r})")
    return (f"Direct logit attribution of {metric} in {model} on {short(text)} at "
            f"{position_text(a.tokens, a.position)}: each head's and MLP's share (final norm frozen at its clean "
            f"scale). embed {a.embed:+.3f} + heads {float(a.heads.sum()):+.3f} + MLPs {float(a.mlps.sum()):+.3f} + "
            f"biases {a.biases:+.3f} = {a.total:+.4f}; the model's own: {a.actual:+.4f}.")


def patch_axes(p: Any) -> tuple[np.ndarray, list[str], list[str], str, str]:
    """(restored map (rows, cols), row labels, column labels, row title, column title) of a ``Patching``; a
    ``heads_by_position`` result (L, H, T) is shown as one row per head ("L.h") over the positions."""
    r = np.asarray(p.restored, dtype=np.float64)
    if p.sweep == "heads_by_position":
        layers, heads, t = r.shape
        rows = [f"{li}.{h}" for li in range(layers) for h in range(heads)]
        return r.reshape(layers * heads, t), rows, list(p.tokens), "head", "position"
    rows = [str(li) for li in range(r.shape[0])]
    if p.axes[-1] == "position":
        return r, rows, list(p.tokens), "layer", "position"
    name = "kv head" if p.axes[-1] == "kv_head" else "head"
    return r, rows, [str(h) for h in range(r.shape[1])], "layer", name


def patch_caption(model: str, clean: str, corrupted: str, p: Any, tokens_of: Any) -> str:
    target, foil = tokens_of(p.target), (tokens_of(p.foil) if p.foil is not None else None)
    metric = f"logit({target!r}) − logit({foil!r})" if foil is not None else f"logit({target!r})"
    done = "" if p.completed else " Cancelled: the cells not reached are hatched."
    warn = f" ⚠ {p.warning}." if p.warning else ""
    return (f"Activation patching ({p.sweep}: {SWEEP_HELP[p.sweep]}) in {model}: the corrupted text "
            f"{short(corrupted, 36)} run with one clean activation from {short(clean, 36)} put back; the colour is "
            f"the restored fraction of {metric} at {position_text(p.tokens, p.position)} (1: the clean answer back, "
            f"0: no change). clean {p.clean:+.3f}, corrupted {p.corrupted:+.3f}.{done}{warn}")


def knockout_caption(model: str, text: str, k: Any, tokens: Sequence[str]) -> str:
    cells = ", ".join(f"{q}→{key}" for q, key in k.edges)
    layers = sorted({li for li, _ in k.heads})
    return (f"Knockout in {model} on {short(text)}: cells {cells} blocked (−∞ before the softmax) in "
            f"{len(k.heads)} heads of layer{'s' if len(layers) > 1 else ''} {', '.join(map(str, layers))}; the "
            f"next-token distribution at {position_text(tokens, k.position)} before and after. "
            f"KL(before ‖ after) = {k.kl:.4g} nats.")
