"""Real transformers (the families of ``config.FAMILIES``: GPT-2, Llama / Mistral / Qwen2 / Qwen3 / SmolLM, Phi-3,
OLMo-2, Gemma 2 and 3, Pythia, GPT-Neo, and the encoders BERT / RoBERTa / DistilBERT) and this app's own models,
head by head.

``load_pretrained(path, *, device="cpu", dtype=None, memory_limit=None) -> PretrainedModel`` reads a Hugging Face
folder (``config.json``, ``model.safetensors`` or an index with shards, ``tokenizer.json``) or a model this app
trained; ``PretrainedModel.trace(text_or_ids, truncate=False) -> Trace`` runs our own forward pass (attention written
out, never a fused kernel) and keeps every layer's and head's q, k, v, scores, weights and outputs.
``PretrainedModel.forward(ids, ablate={(layer, head): "zero" | mean vector})`` switches heads off. Bad input raises
``PretrainedError`` (a ``ValueError``) naming the file and the reason. ``transformers`` is never imported: it is the
tests' reference only. Layers and heads are numbered from 0 in this library.
Named sites (``sites``): ``PretrainedModel.sites`` lists every place an activation can be read or replaced
(``resid_pre.L``, ``q.L``, ``k.L``, ``v.L``, ``pattern.L``, ``z.L``, ``result.L``, ``attn_out.L``, ``mlp_out.L``,
``resid_post.L``; ``"z.L.h"`` one head); ``PretrainedModel.run_with(text, read=..., replace=...) -> Run``, and
batched inside the pass ``forward(ids, hooks=Hooks(read, write))``.
Modules: ``model`` (loading, ``PretrainedModel``), ``config`` (configs to ``ArchSpec``), ``families`` (weight names
per family), ``weights`` (safetensors, no pickle), ``memory``, ``own`` (this app's checkpoints), ``tokenizer``,
``layers`` (linear maps, norms, the weights' dataclasses, rotary, masks, attention weights), ``forward`` (the pass),
``sites`` (its named sites, ``Hooks``, ``run_with``), ``trace``, ``generate``, ``cache_policy``, ``sampling``,
``errors``, ``download/`` (fetching a model into the cache), ``cause/`` (``PretrainedModel.logit_lens`` ->
``LogitLens``, ``PretrainedModel.attribute`` -> ``Attribution``: what each half-layer predicts, which component
wrote a logit).
``PretrainedModel.generate(prompt, ...) -> Generation`` writes token by token over a key/value cache (policies
``CACHE_POLICIES``); ``PretrainedModel.decoder(prompt, ...) -> Decoder`` does it one ``step()`` at a time.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cache_policy import CACHE_POLICIES
    from .cause.attribution import Attribution
    from .cause.knockout import Knockout
    from .cause.lens import LogitLens
    from .cause.patching import Patching, PathPatching
    from .cause.qk import QKPair, QKTerms
    from .errors import PretrainedError
    from .generate import Decoder, Generation, GenerationStep
    from .model import PretrainedModel, load_pretrained, token_losses
    from .sites import SITE_KINDS, Hooks, Run, Site, parse_site, site_names, site_shape
    from .trace import LONG_TRACE_TOKENS, LongTraceError, ModelInfo, NotKept, Overview, Trace

_HOME = {name: module for module, names in (
    (".cache_policy", ("CACHE_POLICIES",)), (".cause.attribution", ("Attribution",)),
    (".cause.knockout", ("Knockout",)), (".cause.lens", ("LogitLens",)),
    (".cause.patching", ("Patching", "PathPatching")),
    (".cause.qk", ("QKPair", "QKTerms")), (".errors", ("PretrainedError",)),
    (".generate", ("Decoder", "Generation", "GenerationStep")),
    (".model", ("PretrainedModel", "load_pretrained", "token_losses")),
    (".sites", ("SITE_KINDS", "Hooks", "Run", "Site", "parse_site", "site_names", "site_shape")),
    (".trace", ("LONG_TRACE_TOKENS", "LongTraceError", "ModelInfo", "NotKept", "Overview", "Trace")),
) for name in names}
"""Each public name's module, imported on first use (PEP 562): importing this package, or a torch-free part of it
(``config``, ``errors``, ``download``), loads no torch, so a command refuses a bad config.json, an unknown
model_type or a malformed repository id before torch's import (1-2 s)."""


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOME[name], __name__), name)
    globals()[name] = value
    return value


__all__ = ["PretrainedError", "PretrainedModel", "load_pretrained", "Trace", "ModelInfo", "token_losses", "Decoder",
           "Generation", "GenerationStep", "CACHE_POLICIES", "LongTraceError", "LONG_TRACE_TOKENS", "NotKept",
           "Overview", "SITE_KINDS", "Hooks", "Run", "Site", "parse_site", "site_names", "site_shape", "LogitLens",
           "Attribution", "Patching", "PathPatching", "Knockout", "QKTerms", "QKPair"]
