"""A real head as Playground inputs: its q, k and v for the text (the first 32 tokens at most), the model's own
scale and mask, and a title naming model, layer, head and text. Qt-free.

Cutting is exact for a causal head: query t only reads keys 0..t, so the first N rows of the head's weights are the
same whether the text goes on or not (the note says when the text was cut). A head wider than the Playground's 64
columns is refused with the reason. Layers and heads are numbered from 0, as the library and the literature do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attention_core.presets import Preset

if TYPE_CHECKING:
    from attention_core.pretrained import Trace

MAX_TOKENS = 32
"""The Playground's largest matrix side (``app.playground.model.state.MAX_TOKENS``)."""
MAX_DIM = 64
"""The Playground's widest matrix (``app.playground.model.state.MAX_DIM``)."""
TEXT_IN_TITLE = 40


@dataclass(frozen=True)
class PlaygroundHead:
    """What the Playground receives: the inputs as a preset (q, k, v, the token names, and the head's own scale and
    mask, which ``load_preset`` applies), the scale and mask again for a reader ("causal", "none", or "custom" with
    ``allowed``: True = may attend) and a note ("" or what was cut)."""

    preset: Preset
    scale: float
    mask: str
    allowed: np.ndarray | None
    note: str

    @property
    def title(self) -> str:
        return self.preset.title


def quoted(text: str, limit: int = TEXT_IN_TITLE) -> str:
    """The text as a title quotes it: one line, at most ``limit`` characters (an ellipsis when cut)."""
    one = " ".join(text.split())
    return f"'{one if len(one) <= limit else one[:limit - 1] + '…'}'"


def playground_head(trace: Trace, layer: int, head: int, text: str = "") -> PlaygroundHead:
    """The head (0-based ``layer``, ``head``) of ``trace`` as Playground inputs; ValueError when it cannot be shown
    there (a head wider than 64 columns)."""
    steps = trace.head_steps(layer, head)  # validates layer and head
    d_head = int(steps.q.shape[1])
    if d_head > MAX_DIM:
        raise ValueError(f"this model's heads are {d_head} wide; the Playground shows at most {MAX_DIM} columns")
    n = min(len(trace), MAX_TOKENS)
    mask = trace.mask(layer)
    note = (f"the first {MAX_TOKENS} of {len(trace)} tokens: exact, since a causal head's first rows never see "
            "later tokens") if len(trace) > MAX_TOKENS else ""
    if len(trace) > MAX_TOKENS and mask is None:
        raise ValueError(f"this head reads every token (no causal mask): it cannot be cut to the Playground's "
                         f"{MAX_TOKENS} tokens; use a text of at most {MAX_TOKENS} tokens")
    names = unique_names(trace.tokens[:n])
    q, k, v = (np.asarray(a[:n], dtype=np.float64) for a in (steps.q, steps.k, steps.v))
    allowed = None if mask is None else np.asarray(mask[:n, :n], dtype=bool)
    if allowed is None:
        mode = "none"
    elif np.array_equal(allowed, np.tril(np.ones((n, n), dtype=bool))):
        mode, allowed = "causal", None
    else:
        mode = "custom"  # a local (sliding-window) layer: causal and within the window
    name = f"{trace.name} L{layer}H{head}"
    title = f"{trace.name} · layer {layer} head {head} · {quoted(text or ''.join(trace.tokens))}"
    story = (f"{title}: the real q, k and v of this head for your text (d_head {d_head}, scale {steps.scale:.4g}, "
             f"{'causal' if mode == 'causal' else mode} mask). Every step below is this head's own computation.")
    preset = Preset(name=name, title=title, story=story, query_tokens=tuple(names), key_tokens=tuple(names),
                    q=q, k=k, v=v, source=f"{trace.name}, layer {layer}, head {head}", scale=float(steps.scale),
                    allowed=None if mask is None else np.asarray(mask[:n, :n], dtype=bool))
    return PlaygroundHead(preset, float(steps.scale), mode, allowed, note)


def unique_names(tokens: list[str]) -> list[str]:
    """Token names the Playground accepts (one per position, distinct): a repeated token gets its position."""
    names = [t.strip() or "␣" for t in tokens]
    seen: dict[str, int] = {}
    for name in names:  # counted as shown: a token shown as "␣" is told apart from a real "␣" by its position
        seen[name] = seen.get(name, 0) + 1
    return [name if seen[name] == 1 else f"{name}@{i}" for i, name in enumerate(names)]
