"""A real head as Playground inputs: its q, k and v for the text (the first 32 tokens at most), the model's own
scale and mask, its parts (q and k *before* rotation with the rotary base and width, so the Playground's rotate step
turns them as the model did; its sliding window; its soft-cap; which K/V head it reads), and a title naming model,
layer, head and text. Qt-free. The parts come from ``Trace.head_setting``.

Cutting is exact for a causal head: query t only reads keys 0..t, so the first N rows of the head's weights are the
same whether the text goes on or not (the note says when the text was cut). A head wider than the Playground's 128
columns is refused with the reason. Layers and heads are numbered from 0, as the library and the literature do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from attention_core.presets import Preset

if TYPE_CHECKING:
    from attention_core.pretrained import Trace

MAX_TOKENS = 32
"""The Playground's largest matrix side (``app.playground.model.state.MAX_TOKENS``)."""
MAX_DIM = 128
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
    options: dict[str, Any] = field(default_factory=dict)
    """The head's modern options for ``PlaygroundModel.load_preset(preset, options)``: ``rotary_base`` and
    ``rotary_dims``, ``softcap``, ``window`` (and ``sinks``); only those the head has."""
    kv_head: int = 0
    """The K/V head this query head reads, of ``kv_heads`` (grouped-query attention when fewer than ``heads``)."""
    kv_heads: int = 1
    heads: int = 1

    @property
    def title(self) -> str:
        return self.preset.title


def quoted(text: str, limit: int = TEXT_IN_TITLE) -> str:
    """The text as a title quotes it: one line, at most ``limit`` characters (an ellipsis when cut)."""
    one = " ".join(text.split())
    return f"'{one if len(one) <= limit else one[:limit - 1] + '…'}'"


def playground_head(trace: Trace, layer: int, head: int, text: str = "") -> PlaygroundHead:
    """The head (0-based ``layer``, ``head``) of ``trace`` as Playground inputs; ValueError when it cannot be shown
    there (a head wider than 128 columns)."""
    setting = trace.head_setting(layer, head)  # validates layer and head
    d_head = int(np.shape(setting["q"])[1])
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
    q, k, v = (np.asarray(setting[x][:n], dtype=np.float64) for x in ("q", "k", "v"))
    options, parts = head_options(setting, n)
    allowed = None if mask is None else np.asarray(mask[:n, :n], dtype=bool)
    if allowed is None:
        mode = "none"
    elif np.array_equal(allowed, np.tril(np.ones((n, n), dtype=bool))):
        mode, allowed = "causal", None
    else:
        mode = "custom"  # a local (sliding-window) layer: causal and within the window
    name = f"{trace.name} L{layer}H{head}"
    title = f"{trace.name} · layer {layer} head {head} · {quoted(text or ''.join(trace.tokens))}"
    scale = float(setting["scale"])
    kv_head, kv_heads, heads = (int(setting.get(x, d)) for x, d in (("kv_head", 0), ("kv_heads", 1), ("heads", 1)))
    if kv_heads < heads:
        group = heads // kv_heads
        parts.append(f"its K/V head {kv_head} of {kv_heads} (shared with query heads "
                     f"{kv_head * group}…{(kv_head + 1) * group - 1})")
    story = (f"{title}: the real q, k and v of this head for your text (d_head {d_head}, scale {scale:.4g}, "
             f"{'causal' if mode == 'causal' else mode} mask{''.join('; ' + p for p in parts)}). Every step below "
             "is this head's own computation." + (f" ({setting['note']}.)" if setting.get("note") else ""))
    preset = Preset(name=name, title=title, story=story, query_tokens=tuple(names), key_tokens=tuple(names),
                    q=q, k=k, v=v, source=f"{trace.name}, layer {layer}, head {head}", scale=scale,
                    allowed=None if mask is None else np.asarray(mask[:n, :n], dtype=bool))
    return PlaygroundHead(preset, scale, mode, allowed, note, options, kv_head, kv_heads, heads)


def head_options(setting: dict[str, Any], n: int) -> tuple[dict[str, Any], list[str]]:
    """The Playground options of a head's setting (``Trace.head_setting``) cut to ``n`` tokens, and the story's words
    for them. Its q and k come before rotation only at positions 0…n−1 (the Playground's): others are refused."""
    options: dict[str, Any] = {}
    parts = []
    if setting.get("rotary_base") is not None:
        positions = np.asarray(setting["positions"])[:n]
        if not np.array_equal(positions, np.arange(n)):
            raise ValueError("this head's positions do not count 0, 1, 2, …: the Playground rotates its q and k at "
                             "positions 0…L−1 only")
        dims = setting.get("rotary_dims")
        options.update(rotary_base=float(setting["rotary_base"]), rotary_dims=None if dims is None else int(dims))
        parts.append(f"rotary base {float(setting['rotary_base']):g}" + (f" on {dims} columns" if dims else ""))
    if setting.get("window") is not None:
        options["window"] = int(setting["window"])
        parts.append(f"a sliding window of {int(setting['window'])}")
    if setting.get("softcap") is not None:
        options["softcap"] = float(setting["softcap"])
        parts.append(f"soft-cap {float(setting['softcap']):g}")
    return options, parts


def unique_names(tokens: list[str]) -> list[str]:
    """Token names the Playground accepts (one per position, distinct): a repeated token gets its position."""
    names = [t.strip() or "␣" for t in tokens]
    seen: dict[str, int] = {}
    for name in names:  # counted as shown: a token shown as "␣" is told apart from a real "␣" by its position
        seen[name] = seen.get(name, 0) + 1
    return [name if seen[name] == 1 else f"{name}@{i}" for i, name in enumerate(names)]
