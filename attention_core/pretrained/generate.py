"""Writing with a model, one token at a time, over a key/value cache: ``generate`` and the stepper ``Decoder``.

Each step runs one token, the last one written (the last prompt token for step 0), at its position against the
cache of the tokens before it, records that query's attention row over the cache in every layer and head, and picks
the next token from its logits (``sampling``). The cache keeps what its policy names (``cache_policy``); keys are
kept after rotation, so a kept key keeps its own position. The prompt before its last token is run in one pass under
the policy's mask, which leaves the same cache as feeding it one token at a time would.

For ``window`` and ``sinks`` a full cache is kept alongside and run on the same tokens, so each step can say how far
the next-token distribution moved (``kl_from_full``, KL(full ‖ policy) in nats) and whether its top token changed.

Undo keeps, per step, only what taking that token back needs: each cache's length before it, the entries a window or
sinks policy evicted in it (one position's keys and values a step once the window is full), the random generator's
state when the step drew, and which lane (cache and policy) it ran on; never a copy of a cache, which made memory
grow with the square of the tokens. ``generate`` (and the command line) keep no undo history at all.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .cache_policy import CachePolicy, KVCache, Rewind, kl_divergence, kv_bytes, position_list
from .layers import cpu_threads
from .sampling import Sampling, top_list

PretrainedModel = Any
"""The model type (``model.PretrainedModel``), by name only: model.py imports this module, which does not import
it back (no import cycle, not even a type-only one)."""

TOP_N = 10
"""How many entries ``GenerationStep.top`` and ``top_raw`` list."""


@dataclass(frozen=True)
class GenerationStep:
    """One new token. ``index``: the step (0 = the first new token); ``query_position``: the position of the token
    that was run (the one before the new token); ``id``/``token``: the new token and its display string;
    ``probability``: the model's probability of it (softmax of the logits, before temperature/top-k/top-p);
    ``top``/``top_raw``: the ``TOP_N`` most likely (id, token, probability) after and before them; ``attentions``
    (layers, heads, kept positions) float32: the query's attention row over ``cache_positions``; ``cache_bytes``
    and ``full_cache_bytes`` (what a full cache would hold now); ``evicted``: positions dropped this step;
    ``kl_from_full``/``top_changed``: against the full cache (None for ``cache="full"``); ``seconds``: the step's
    time; ``logits`` (vocab,) float32: the raw next-token logits; ``drawn_probability``: the chosen token's
    probability under the distribution it was drawn from."""

    index: int
    query_position: int
    id: int
    token: str
    probability: float
    top: list[tuple[int, str, float]]
    top_raw: list[tuple[int, str, float]]
    attentions: np.ndarray
    cache_positions: list[int]
    cache_bytes: int
    full_cache_bytes: int
    evicted: list[int]
    kl_from_full: float | None
    top_changed: bool | None
    seconds: float
    logits: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.float32))
    drawn_probability: float = 0.0

    def to_dict(self, *, attentions: bool = True) -> dict[str, Any]:
        """JSON-ready (attentions as nested lists; logits left out)."""
        out: dict[str, Any] = {
            "index": self.index, "query_position": self.query_position, "id": self.id, "token": self.token,
            "probability": self.probability, "drawn_probability": self.drawn_probability,
            "top": [list(t) for t in self.top], "top_raw": [list(t) for t in self.top_raw],
            "cache_positions": self.cache_positions, "cache_bytes": self.cache_bytes,
            "full_cache_bytes": self.full_cache_bytes, "evicted": self.evicted, "kl_from_full": self.kl_from_full,
            "top_changed": self.top_changed, "seconds": self.seconds}
        if attentions:
            out["attentions"] = np.round(self.attentions.astype(np.float64), 7).tolist()
        return out


@dataclass(frozen=True)
class Generation:
    """What was written. ``prompt_ids``, ``new_ids`` (lists of ints); ``tokens``: display strings of the new tokens
    (``steps[i].token``); ``text``: the new tokens decoded; ``full_text``: the prompt and them; ``steps``: one
    ``GenerationStep`` per new token; ``stopped``: why it ended ("eos", "max_new_tokens", "context": the model's
    positions are used up, "" while a ``Decoder`` can go on); ``cache``, ``window``, ``sinks``: the policy last
    used."""

    prompt_ids: list[int]
    new_ids: list[int]
    tokens: list[str]
    text: str
    full_text: str
    steps: list[GenerationStep]
    prompt_tokens: list[str]
    stopped: str = ""
    cache: str = "full"
    window: int | None = None
    sinks: int = 0

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.new_ids

    @property
    def seconds(self) -> float:
        return float(sum(s.seconds for s in self.steps))

    @property
    def tokens_per_second(self) -> float:
        total = self.seconds
        return len(self.steps) / total if total > 0 else 0.0

    @property
    def cache_bytes(self) -> int:
        return self.steps[-1].cache_bytes if self.steps else 0

    def summary(self) -> dict[str, Any]:
        return {"text": self.text, "new_tokens": len(self.new_ids), "tokens_per_second": self.tokens_per_second,
                "cache_bytes": self.cache_bytes}

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_ids": self.prompt_ids, "prompt_tokens": self.prompt_tokens, "new_ids": self.new_ids,
                "tokens": self.tokens, "text": self.text, "full_text": self.full_text, "stopped": self.stopped,
                "cache": self.cache, "window": self.window, "sinks": self.sinks,
                "tokens_per_second": self.tokens_per_second, "cache_bytes": self.cache_bytes,
                "steps": [s.to_dict() for s in self.steps]}


def eos_ids(model: PretrainedModel) -> frozenset[int]:
    """The end-of-text ids of a Hugging Face folder (generation_config.json first, then config.json, as
    transformers reads them); none for this app's models."""
    folder = model.path if model.path.is_dir() else model.path.parent
    for name in ("generation_config.json", "config.json"):
        try:
            data = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "model_config" in data:
            continue
        eos = data.get("eos_token_id")
        if isinstance(eos, int) and not isinstance(eos, bool):
            return frozenset({eos})
        if isinstance(eos, list):
            return frozenset(int(e) for e in eos if isinstance(e, int) and not isinstance(e, bool))
    return frozenset()


def cannot_generate(model: PretrainedModel) -> str:
    """Why ``model`` cannot write one token at a time, or "" when it can. An encoder (BERT, RoBERTa, DistilBERT)
    reads the whole text at once, every token seeing the ones after it, and its head predicts the tokens hidden
    behind a mask, not the next one; a model trained without the causal mask likewise never learnt to continue."""
    spec = model.spec
    if spec.masked_lm:
        return (f"{model.name} is an encoder ({spec.family}) that predicts masked tokens: it reads the whole text "
                "at once and fills in each [MASK] (RoBERTa: <mask>) from the words on both sides, so it cannot write "
                "the next token. "
                "Open a decoder (GPT-2, Llama, Qwen, Gemma, ...) to generate")
    if not spec.causal:
        return (f"{model.name} was trained without the causal mask (each token sees the ones after it), so it "
                "cannot write one token at a time")
    return ""


class _Lane:
    """One cache and the policy it follows: holds keys for positions 0..n-2 of the sequence (n-1 is pending)."""

    def __init__(self, model: PretrainedModel, policy: CachePolicy) -> None:
        self.model = model
        self.policy = policy
        self.cache: KVCache | None = None

    def step(self, ids: list[int], *, record: bool, undo: bool = False
             ) -> tuple[torch.Tensor, list[torch.Tensor], list[int], list[int], Rewind | None]:
        """Run the pending last token: (logits (vocab,), weights per layer (heads, kept), kept, evicted, and with
        ``undo`` how to take the step back: the length before, None when the step built the cache)."""
        fp, n, dev = self.model.forward_pass, len(ids), self.model.device
        layers = self.model.spec.n_layers
        rewind = Rewind(None if self.cache is None else self.cache.length()) if undo else None
        if self.cache is None:  # (built from the tokens before: taking the step back drops it again)
            self.cache = KVCache.empty(layers)
            if n > 1:
                pos = torch.arange(n - 1, device=dev)
                fp.run(torch.tensor([ids[:-1]], device=dev), positions=pos, cache=self.cache,
                       mask=self.policy.mask(pos), logits=False)
        cache = self.cache
        before = cache.positions[0]
        evicted: list[int] = []
        if before is not None and not self.policy.full:
            keep = self.policy.sees(torch.tensor(n - 1, device=dev), before)
            if not bool(keep.all()):
                evicted = before[~keep].tolist()
                if rewind is not None and rewind.length is not None:  # a cache built this step needs none
                    rewind = Rewind(rewind.length, cache.evict(keep))
                else:
                    for layer in range(layers):
                        cache.keep(layer, keep)
        out = fp.run(torch.tensor([[ids[-1]]], device=dev), positions=torch.tensor([n - 1], device=dev),
                     cache=cache, record={"weights"} if record else set())
        assert out.logits is not None
        kept_pos = cache.positions[0]
        assert kept_pos is not None
        weights = [w[0, :, 0] for w in out.records.get("weights", [])]
        return out.logits[0, -1], weights, position_list(kept_pos), evicted, rewind

    def take_back(self, rewind: Rewind) -> None:
        """The cache as it was before the step ``rewind`` describes (the steps after it taken back already)."""
        if rewind.length is None or self.cache is None:
            self.cache = None
        else:
            self.cache.rewind(rewind.length, rewind.evicted)


@dataclass(frozen=True)
class _Undo:
    """One step's way back: the lanes it ran on (the very objects: after a policy switch and back, undo returns to
    them, as a restored snapshot did), how to rewind each, the random state before it (None: greedy drew nothing)."""

    lane: _Lane
    full: _Lane | None
    rewinds: tuple[Rewind | None, Rewind | None]
    rng: torch.Tensor | None

    def nbytes(self) -> int:  # what this record keeps alive (the lanes are the decoder's)
        rng = 0 if self.rng is None else self.rng.untyped_storage().nbytes()
        return sum(r.nbytes() for r in self.rewinds if r is not None) + rng


class Decoder:
    """A generation in progress: ``step()`` writes one token (None when done), ``undo()`` takes the last back,
    ``set_sampling``/``set_cache`` change how the next ones are written, ``generation`` is what was written so far.
    Made by ``PretrainedModel.decoder``; not thread-safe (one caller at a time). ``undo=False`` keeps no history
    (``undo()`` then has nothing to take back): what ``generate`` and the command line use."""

    def __init__(self, model: PretrainedModel, prompt: Any, *, temperature: Any = 0.0, top_k: Any = None,
                 top_p: Any = None, seed: Any = 0, cache: Any = "full", window: Any = None, sinks: Any = 4,
                 stop_at_eos: bool = True, undo: bool = True) -> None:
        refusal = cannot_generate(model)
        if refusal:
            raise ValueError(refusal)
        if isinstance(prompt, str) and not prompt:
            raise ValueError("the prompt is empty: give some text to continue")
        self.sampling = Sampling.make(temperature, top_k, top_p)
        self.policy = CachePolicy.make(cache, window, sinks)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        ids, _ = model.ids_of(prompt)  # an empty or too long prompt raises PretrainedError (a ValueError)
        self.model = model
        self.stop_at_eos = bool(stop_at_eos)
        self.eos = eos_ids(model) if stop_at_eos else frozenset()
        self.prompt_ids: list[int] = [int(i) for i in ids]
        self.new_ids: list[int] = []
        self.steps: list[GenerationStep] = []
        self.stopped = ""
        self._rng = torch.Generator().manual_seed(seed)
        self._lane = _Lane(model, self.policy)
        self._full: _Lane | None = None if self.policy.full else _Lane(model, CachePolicy())
        self._history: list[_Undo] | None = [] if undo else None

    # --- state ----------------------------------------------------------------------------------------
    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.new_ids

    @property
    def done(self) -> bool:
        return bool(self._stop_reason())

    def _stop_reason(self) -> str:
        if self.new_ids and self.new_ids[-1] in self.eos:
            return "eos"
        if len(self.ids) >= self.model.spec.max_positions:
            return "context"
        return ""

    @property
    def generation(self) -> Generation:
        tok = self.model.tokenizer
        pol = self.policy
        return Generation(list(self.prompt_ids), list(self.new_ids), [s.token for s in self.steps],
                          tok.decode(self.new_ids) if self.new_ids else "", tok.decode(self.ids), list(self.steps),
                          self.model.token_strings(self.prompt_ids), self.stopped or self._stop_reason(),
                          pol.cache, pol.window, pol.sinks)

    # --- changes --------------------------------------------------------------------------------------
    def set_sampling(self, temperature: Any = None, top_k: Any = ..., top_p: Any = ...) -> None:
        """Change sampling for the next steps (arguments left out keep their value); bad values raise ValueError
        and change nothing."""
        s = self.sampling
        self.sampling = Sampling.make(s.temperature if temperature is None else temperature,
                                      s.top_k if top_k is ... else top_k, s.top_p if top_p is ... else top_p)

    def set_cache(self, cache: Any, window: Any = None, sinks: Any = 4) -> None:
        """Switch the policy: the cache is rebuilt at the next step as if the policy had been on from the start
        (the tokens so far run once under its mask). Bad options raise ValueError and change nothing."""
        policy = CachePolicy.make(cache, window, sinks)
        if policy == self.policy:
            return
        self.policy = policy
        self._lane = _Lane(self.model, policy)
        self._full = None if policy.full else _Lane(self.model, CachePolicy())

    @property
    def history_bytes(self) -> int:
        """Bytes the undo history keeps alive (evicted entries and random states; no cache is ever copied)."""
        return sum(u.nbytes() for u in self._history or ())

    def undo(self) -> bool:
        """Take back the last token: its step, the cache and the random generator as they were before it. False
        when there is nothing to take back (or the decoder keeps no history)."""
        if not self.steps or not self._history:
            return False
        record = self._history.pop()
        self.steps.pop()
        self.new_ids.pop()
        self.stopped = ""
        if record.rng is not None:
            self._rng.set_state(record.rng)
        for lane, rewind in zip((record.lane, record.full), record.rewinds):
            if lane is not None and rewind is not None:
                lane.take_back(rewind)
        if record.lane.policy == self.policy:  # back on the lanes of that step (after a switch and back too)
            self._lane, self._full = record.lane, record.full
        else:  # the policy changed since: rebuild under today's policy at the next step
            self._lane.cache = None
            if self._full is not None:
                self._full.cache = None
        return True

    # --- writing --------------------------------------------------------------------------------------
    def step(self) -> GenerationStep | None:
        """Write one token; None when done (the last token was an end-of-text token, or the model has no
        position left for another)."""
        if self.done:
            return None
        model, ids = self.model, self.ids
        undo = self._history is not None
        rng = None if not undo or self.sampling.greedy else self._rng.get_state()
        lane, full = self._lane, self._full
        start = time.perf_counter()
        with cpu_threads(model.threads if model.device.type == "cpu" else None):
            logits, weights, kept, evicted, rewind = lane.step(ids, record=True, undo=undo)
            logits = logits.float().cpu()
            new_id, drawn = self.sampling.pick(logits, self._rng)
            raw = torch.softmax(logits.double(), dim=-1)
            attentions = torch.stack(weights).float().cpu().numpy() if weights else np.zeros((0, 0, 0), np.float32)
            seconds = time.perf_counter() - start
            kl = changed = None
            full_rewind = None
            if full is not None:
                full_logits, *_, full_rewind = full.step(ids, record=False, undo=undo)
                full_logits = full_logits.float().cpu()
                kl = kl_divergence(full_logits, logits)
                changed = int(torch.argmax(full_logits)) != int(torch.argmax(logits))
        spec = model.spec
        size = model.weights.embed.element_size()
        display = model.token_strings
        step = GenerationStep(
            len(self.steps), len(ids) - 1, new_id, display([new_id])[0], float(raw[new_id]),
            [(new_id, display([new_id])[0], 1.0)] if drawn is None else top_list(drawn, TOP_N, display),
            top_list(raw, TOP_N, display), attentions, kept,
            kv_bytes(spec.n_layers, spec.n_kv_heads, len(kept), spec.d_head, size),
            kv_bytes(spec.n_layers, spec.n_kv_heads, len(ids), spec.d_head, size), evicted, kl, changed,
            seconds, logits.numpy(), 1.0 if drawn is None else float(drawn[new_id]))
        if self._history is not None:
            self._history.append(_Undo(lane, full, (rewind, full_rewind), rng))
        self.steps.append(step)
        self.new_ids.append(new_id)
        return step

    def run(self, max_new_tokens: int) -> Generation:
        """Step until done or ``max_new_tokens`` more tokens are written."""
        for _ in range(max_new_tokens):
            if self.step() is None:
                break
        else:
            if not self.done:
                self.stopped = "max_new_tokens"
        return self.generation


def generate(model: PretrainedModel, prompt: Any, *, max_new_tokens: Any = 20, temperature: Any = 0.0,
             top_k: Any = None, top_p: Any = None, seed: Any = 0, cache: Any = "full", window: Any = None,
             sinks: Any = 4, stop_at_eos: bool = True) -> Generation:
    """``PretrainedModel.generate``: see ``Decoder``. Options are checked before any work (ValueError). No undo
    history is kept: memory holds the weights, the cache and each step's rows, nothing that grows faster."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
    decoder = Decoder(model, prompt, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed, cache=cache,
                      window=window, sinks=sinks, stop_at_eos=stop_at_eos, undo=False)
    return decoder.run(max_new_tokens)
