"""The titles that say what an exported figure shows, as plain text and as HTML. Qt-free.

A figure that leaves the app loses the window around it (the preset picker, the mask box, the scale slider, the
training status), so its title carries that context (``ExportContext``). The plain one-line title is also written
into the file (PNG text chunk "Title", SVG ``<title>``, PDF document title), where scripts and tests read it back
without OCR. The CLI builds the same titles without importing Qt.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

from attention_core.steps import STEP_TITLES, default_scale

_CIRCLED = re.compile("[\u2460-\u2473\u24ea-\u24ff\u2776-\u2793]\\s*")
_TAG = re.compile(r"<[^>]+>")


def plain_title(text: str) -> str:
    """A title as plain text for a file: no HTML tags or entities, no "①"-style step numbers (they mean something
    only next to the other steps of the window), single spaces."""
    text = html.unescape(_TAG.sub(" ", text.replace("<br>", " — ")))
    return " ".join(_CIRCLED.sub("", text).split())


def scale_text(scale: float | None, d_k: int | None = None) -> str:
    """The scale in words: "1 (unscaled)", "0.5 = 1/√4", "1/√4 = 0.5" (the default), "0.3"."""
    if scale is None:
        if d_k is None:
            return "default 1/√d_k"
        return f"1/√{d_k} = {default_scale(d_k):.3g}"
    if scale == 1.0:
        return "1 (unscaled)"
    if d_k and math.isclose(scale, default_scale(d_k)):
        return f"{scale:.3g} = 1/√{d_k}"
    return f"{scale:.3g}"


def step_title(view: str, scale: float | None = None) -> str:
    """A step's title for an export: ``STEP_TITLES``, except that a scale of exactly 1 never calls the map
    "scaled" (nothing was scaled: the map equals the raw scores)."""
    if view == "scaled" and scale == 1.0:
        return "Scores Q·Kᵀ × 1 (unscaled)"
    return STEP_TITLES.get(view, view)


def colorbar_label(view: str, scale: float | None = None) -> str:
    """What one unit of colour stands for in a step's map ("score", "weight", …); with a scale of exactly 1 the
    second map is the raw scores, so it is labelled "score", not "scaled score"."""
    if view == "scaled" and scale == 1.0:
        return "score"
    return STEP_COLORBAR_LABELS.get(view, "value")


STEP_COLORBAR_LABELS = {"scores": "score", "scaled": "scaled score", "masked": "masked score", "weights": "weight",
                        "output": "output value"}
MASK_WORDS = {"none": "no mask", "causal": "causal mask", "padding": "padding mask", "custom": "custom mask",
              "sliding": "sliding-window mask"}


@dataclass(frozen=True)
class ExportContext:
    """What the window shows around a map and a file would lose: for the playground the preset ("edited" once
    the matrices were changed), the mask and the scale (the value used; ``d_k`` lets it say "= 1/√d_k"); for
    training the task, the step and the accuracy. Fields left None are not mentioned."""

    preset: str | None = None
    mask: str | None = None
    scale: float | None = None
    d_k: int | None = None
    task: str | None = None
    step: int | None = None
    total_steps: int | None = None
    accuracy: float | None = None
    accuracy_step: int | None = None
    """The step the accuracy was measured at, when older than ``step`` (evaluation runs every few steps)."""
    causal: bool | None = None
    positional: str | None = None
    """The run's position encoding: named unless it is the default (learned)."""
    attention_dropout: float | None = None
    """Dropout on the attention weights in training: named when above 0."""
    mode: str | None = None
    """The Playground's input mode in words ("Q, K, V given", "projection …"): named in a CSV's ``#`` lines
    (``app.common.heatmap_files.context_comments``), not in an image's title."""
    rotary_base: float | None = None
    """The modern options, each named only while on: rotary positions (base, and how many columns rotate when not
    all of ``d_k``), ALiBi, the soft-cap, the sliding window and its sinks (with ``mask`` "sliding"), the K/V heads
    of ``heads`` query heads, and FlashAttention's block sizes (the Tiles view's)."""
    rotary_dims: int | None = None
    alibi: bool = False
    softcap: float | None = None
    window: int | None = None
    sinks: int = 0
    heads: int | None = None
    kv_heads: int | None = None
    blocks: tuple[int, int] | None = None

    def parts(self) -> list[str]:
        out = []
        if self.preset is not None:
            out.append(f"preset {self.preset}" if self.preset != "edited" else "edited matrices")
        if self.mask is not None and not (self.mask == "sliding" and self.window is not None):
            out.append(MASK_WORDS.get(self.mask, f"{self.mask} mask"))
        if self.scale is not None:
            out.append(f"scale {scale_text(self.scale, self.d_k)}")
        out += [words for _key, words in self.options()]
        if self.task is not None:
            out.append(f"{self.task} task")
        if self.step is not None:
            out.append(f"step {self.step}" + (f" / {self.total_steps}" if self.total_steps is not None else ""))
        if self.accuracy is not None and math.isfinite(self.accuracy):
            when = (f" (at step {self.accuracy_step})" if self.accuracy_step is not None
                    and self.accuracy_step != self.step else "")
            out.append(f"test sequence accuracy {self.accuracy:.0%}{when}")
        if self.causal is False:
            out.append("no causal mask")
        if self.positional is not None and self.positional != "learned":
            out.append("no positions" if self.positional == "none" else f"{self.positional} positions")
        if self.attention_dropout:
            out.append(f"attention dropout {self.attention_dropout:g}")
        return out

    def options(self) -> list[tuple[str, str]]:
        """The modern options that are on, each as (CSV key, words): ("rotary", "rotary base 10000"), ("window",
        "window 3 + 1 sink"), ("softcap", "soft-cap 20"), …; the title's parts and a CSV's ``#`` lines."""
        out = []
        if self.rotary_base is not None:
            cols = f" on {self.rotary_dims} of {self.d_k} columns" if self.rotary_dims and self.d_k else ""
            out.append(("rotary", f"rotary base {self.rotary_base:g}{cols}"))
        if self.alibi:
            out.append(("alibi", "ALiBi bias"))
        if self.mask == "sliding" and self.window is not None:
            sinks = f" + {self.sinks} sink{'s' if self.sinks != 1 else ''}" if self.sinks else ""
            out.append(("window", f"window {self.window}{sinks}"))
        if self.softcap is not None:
            out.append(("softcap", f"soft-cap {self.softcap:g}"))
        if self.kv_heads is not None and self.heads is not None and self.kv_heads != self.heads:
            kind = " (multi-query)" if self.kv_heads == 1 else " (grouped-query)"
            out.append(("kv heads", f"{self.kv_heads} K/V head{'s' if self.kv_heads != 1 else ''} for "
                                    f"{self.heads} heads{kind}"))
        if self.blocks is not None:
            out.append(("blocks", f"blocks {self.blocks[0]}×{self.blocks[1]}"))
        return out

    def line(self) -> str:
        """The context as one line: "preset cat-sat-mat · causal mask · scale 1 (unscaled)"."""
        return " · ".join(self.parts())


def full_title(title: str, context: ExportContext | str | None = None) -> str:
    """The one-line plain title written into a file: "Weights = softmax — preset cat-sat-mat · causal mask · …"."""
    line = context.line() if isinstance(context, ExportContext) else (context or "")
    head = plain_title(title)
    line = plain_title(line)
    return f"{head} — {line}" if head and line else head or line


def title_html(title: str, context: ExportContext | str | None = None, *, size_pt: float = 9.0,
               color: str = "#444444") -> str:
    """The shown title: the (plain) title, then the context on a second, smaller line (HTML for pyqtgraph and
    QLabel), so a long context never widens the figure the way one long line would."""
    line = context.line() if isinstance(context, ExportContext) else (context or "")
    head = html.escape(plain_title(title))
    if not line:
        return head
    return f"{head}<br><span style='font-size:{size_pt:g}pt; color:{color}'>{html.escape(plain_title(line))}</span>"
