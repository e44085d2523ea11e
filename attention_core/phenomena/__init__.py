"""Known attention phenomena on a loaded model (``attention_core.pretrained``; this app's own models too).

- ``head_scores(model, kind, *, seq_len=None, seed=0, batch=4) -> HeadScores`` for ``KINDS``: previous-token,
  duplicate-token, induction, first-token (definitions and how they relate to TransformerLens in ``detect``);
  ``all_head_scores`` (every kind from one run); ``score_attention`` (the formulas alone, on any attention array).
- ``repeated_tokens(model, seq_len, seed) -> RepeatTrace``: next-token loss on random tokens repeated twice.
- ``ablate(model, text_or_ids, heads, how="zero" | "mean") -> AblationResult`` and
  ``ablation_scan(model, text_or_ids, ..., progress=, cancel=) -> AblationScan``: loss changes with heads off.

Qt-free; layers and heads count from 0.
"""

from __future__ import annotations

from .ablation import AblationResult, AblationScan, RepeatTrace, ablate, ablation_scan, repeated_tokens
from .detect import KINDS, THRESHOLD, HeadScores, all_head_scores, head_scores, score_attention

__all__ = ["KINDS", "THRESHOLD", "HeadScores", "head_scores", "all_head_scores", "score_attention", "RepeatTrace",
           "repeated_tokens", "AblationResult", "AblationScan", "ablate", "ablation_scan"]
