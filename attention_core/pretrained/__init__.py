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
``PretrainedModel.generate(prompt, ...) -> Generation`` writes token by token over a key/value cache (policies
``CACHE_POLICIES``); ``PretrainedModel.decoder(prompt, ...) -> Decoder`` does it one ``step()`` at a time.
"""

from __future__ import annotations

from .cache_policy import CACHE_POLICIES
from .errors import PretrainedError
from .generate import Decoder, Generation, GenerationStep
from .model import PretrainedModel, load_pretrained, token_losses
from .trace import LONG_TRACE_TOKENS, LongTraceError, ModelInfo, NotKept, Overview, Trace

__all__ = ["PretrainedError", "PretrainedModel", "load_pretrained", "Trace", "ModelInfo", "token_losses", "Decoder",
           "Generation", "GenerationStep", "CACHE_POLICIES", "LongTraceError", "LONG_TRACE_TOKENS", "NotKept",
           "Overview"]
