"""``load_pretrained`` and ``PretrainedModel``: a model folder in, traces out.

Loading checks everything it can before reading weights (files present, no pickle, a supported ``model_type``,
every tensor's name and shape against the config, the memory needed against the memory free) and raises
``PretrainedError`` naming the file and the reason; only then are tensors mapped in. ``dtype``: float32 (the default;
a bfloat16 or float16 file is converted), bfloat16 (half the memory; attention weights are still computed in
float32, see ``forward``) or float64 (twice the memory, every step in float64: for claims of exact equality).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .config import ArchSpec, parse_config
from .errors import PretrainedError
from .forward import Ablation, ForwardOutput, ForwardPass
from .layers import ModelWeights, cpu_threads, overview_block
from .sites import Hooks, Run, run_with, site_names
from .tokenizer import HFTokenizer, OwnVocab
from .trace import LONG_TRACE_TOKENS, TOP_KEPT, ModelInfo, NotKept, Overview, Trace

if TYPE_CHECKING:
    from .cause.attribution import Attribution
    from .cause.knockout import Knockout
    from .cause.lens import LogitLens
    from .cause.patching import Patching, PathPatching
    from .cause.qk import QKTerms
    from .generate import Decoder, Generation

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64}
TRACE_RECORD = frozenset({"weights", "qkv", "head_out"})
LONG_TRACE_RECORD = frozenset({"overview", "qkv", "final"})  # head outputs: one head from head_map and v
LOGIT_ROWS = 256
"""A long trace's logits are computed this many positions at a time and only their top tokens kept."""
MASK_TOKENS = ("[MASK]", "<mask>")
"""The mask token of BERT / DistilBERT and of RoBERTa: an encoder's trace predicts the token each one hides."""


def _dtype(dtype: Any) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    raise PretrainedError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")


class PretrainedModel:
    """A loaded model: ``name``, ``info``, ``spec``, ``tokenizer``; ``encode``, ``forward``, ``trace``, ``losses``.

    ``forward`` is our own pass (``forward.ForwardPass``): explicit attention, optional per-head records and ablation.
    ``threads``: torch's intra-op CPU threads while this model runs (set and restored around each call; None leaves
    torch's setting). On a busy machine 1 is the fast choice: a parallel kernel waits for its slowest thread, and
    a GPT-2-small trace took 3 s with 2 threads against 0.4 s with 1 on this project's shared 2-core machine.
    """

    def __init__(self, name: str, spec: ArchSpec, weights: ModelWeights, tokenizer: HFTokenizer | OwnVocab,
                 path: Path, threads: int | None = None) -> None:
        self.name = name
        self.threads = threads
        self.spec = spec
        self.weights = weights
        self.tokenizer = tokenizer
        self.path = path
        self.forward_pass = ForwardPass(spec, weights)
        tensors = weights.tensors()
        dtype = str(weights.embed.dtype).replace("torch.", "")
        self.info = ModelInfo(spec.family, spec.model_type, spec.n_layers, spec.n_heads, spec.n_kv_heads,
                              spec.d_model, spec.d_head, spec.vocab_size, sum(t.numel() for t in tensors),
                              spec.max_positions, dtype, sum(t.numel() * t.element_size() for t in tensors))

    def __repr__(self) -> str:
        i = self.info
        return (f"PretrainedModel({self.name!r}, {i.family}, {i.layers} layers × {i.heads} heads, d_model {i.d_model}, "
                f"{i.parameters:,} parameters, {i.dtype})")

    @property
    def family(self) -> str:
        return self.spec.family

    @property
    def device(self) -> torch.device:
        return self.forward_pass.device

    # --- tokens ---------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """Display strings (spaces as ␣, see ``tokenizer``)."""
        return self.tokenizer.display(ids)

    def ids_of(self, text_or_ids: Any, *, truncate: bool = False) -> tuple[np.ndarray, str | None]:
        """(ids (T,) int64, note): text is encoded, ids are checked against the vocabulary; longer than the
        model's max positions is refused, or cut with ``truncate=True`` (the note says so). The refusal names
        ``ids_of(text, truncate=True)``: every function that reads a text through here takes the ids it returns,
        while only some (``trace``, ``ablate``) take ``truncate`` themselves."""
        if isinstance(text_or_ids, str):
            ids = np.asarray(self.encode(text_or_ids), dtype=np.int64)
            what = "text"
        else:
            try:
                ids = np.asarray(text_or_ids.tolist() if hasattr(text_or_ids, "tolist") else list(text_or_ids))
            except TypeError:
                raise PretrainedError(f"{self.name}: expected text or a list of token ids, got "
                                      f"{type(text_or_ids).__name__}") from None
            if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
                raise PretrainedError(f"{self.name}: token ids must be a flat list of integers, got shape "
                                      f"{ids.shape} of {ids.dtype}")
            ids = ids.astype(np.int64)
            what = "input"
        if ids.size == 0:
            raise PretrainedError(f"{self.name}: the {what} has no tokens")
        bad = ids[(ids < 0) | (ids >= self.spec.vocab_size)]
        if bad.size:
            raise PretrainedError(f"{self.name}: token id {int(bad[0])} is outside the vocabulary "
                                  f"(0 to {self.spec.vocab_size - 1})")
        limit = self.spec.max_positions
        if ids.size > limit:
            if not truncate:
                raise PretrainedError(f"{self.name}: the {what} is {ids.size} tokens, longer than the model's "
                                      f"{limit} positions; shorten it, or keep the first {limit} with "
                                      "model.ids_of(text, truncate=True)[0] and pass those ids (trace and ablate "
                                      "also take truncate=True)")
            return ids[:limit], f"cut to the first {limit:,} of {ids.size:,} tokens, the model's max positions"
        return ids, None

    # --- running ----------------------------------------------------------------------------------------
    def forward(self, ids: Any, *, ablate: Ablation | None = None, record: Any = (), logits: bool = True,
                hooks: Hooks | None = None, **kwargs: Any) -> ForwardOutput:
        """Our forward pass on ids (T,) or (B, T); see ``forward.ForwardPass.run`` for ``record`` and the rest.
        ``ablate``: {(layer, head): "zero" | mean vector (d_head,)}, applied before the output projection;
        ``hooks``: sites read and replaced, batched (``sites.Hooks``; its ``values`` filled)."""
        t = torch.as_tensor(np.asarray(ids), dtype=torch.long, device=self.device)
        if t.dim() == 1:
            t = t[None]
        if ablate:
            for (layer, head), how in ablate.items():
                if not (0 <= layer < self.spec.n_layers and 0 <= head < self.spec.n_heads):
                    raise ValueError(f"ablate: no layer {layer} head {head} (0-based; {self.spec.n_layers} layers × "
                                     f"{self.spec.n_heads} heads)")
                if isinstance(how, str) and how != "zero":
                    raise ValueError(f"ablate: {how!r} is not 'zero' or a mean vector")
        with cpu_threads(self.threads if self.device.type == "cpu" else None):
            return self.forward_pass.run(t, ablate=ablate, record=frozenset(record), logits=logits, hooks=hooks,
                                         **kwargs)

    @property
    def sites(self) -> tuple[str, ...]:
        """Every site's name in the order the forward pass meets them (``sites.site_names``): ``resid_pre.0``,
        ``q.0`` … ``resid_post.{layers - 1}``; a head index narrows a headed one (``"z.3.1"``)."""
        return site_names(self.spec.n_layers)

    def run_with(self, text_or_ids: Any, *, read: Any = (), replace: Any = None) -> Run:
        """One text (or ids) through the model with sites read and replaced; see ``sites.run_with``."""
        return run_with(self, text_or_ids, read=read, replace=replace)

    def losses(self, ids: Any, *, ablate: Ablation | None = None) -> np.ndarray:
        """Per-position next-token loss (nats), (T - 1,) or (B, T - 1): entry t is −log p(ids[t + 1] | ids[≤ t])."""
        t = torch.as_tensor(np.asarray(ids), dtype=torch.long, device=self.device)
        single = t.dim() == 1
        t = t[None] if single else t
        logits = self.forward(t, ablate=ablate).logits
        assert logits is not None
        out = token_losses(logits, t).cpu().numpy()
        return out[0] if single else out

    def trace(self, text_or_ids: Any, *, truncate: bool = False, ablate: Ablation | None = None) -> Trace:
        """Run one text (or ids) and keep everything: logits, attentions, q/k/v, scores, head outputs. ``ablate``
        as in ``forward`` (those heads' outputs replaced; the trace's ``ablated`` names them, sorted)."""
        from .cause.importance import o_weights

        ids, note = self.ids_of(text_or_ids, truncate=truncate)
        long = len(ids) > LONG_TRACE_TOKENS
        kept = {} if long or self.device.type != "cpu" or self.info.dtype == "float64" else self._trace_arrays(len(ids))
        out = self.forward(ids, record=LONG_TRACE_RECORD if long else TRACE_RECORD, ablate=ablate, logits=not long,
                           into=kept)
        r = out.records

        def stack(name: str, dtype: Any = np.float32) -> np.ndarray:  # layer by layer, each record dropped once copied
            if name in kept:  # written there by the forward pass itself
                r[name].clear()
                return kept[name][:, 0].numpy()
            layers = r[name]
            arr = np.empty((len(layers), *layers[0].shape[1:]), dtype=dtype)
            for i in range(len(layers)):
                arr[i] = layers[i][0].cpu().numpy()
                layers[i] = torch.empty(0)
            return arr

        arrays: dict[int, np.ndarray] = {}  # layers sharing a mask share its array (one per distinct window)
        masks = tuple(None if m is None else arrays.setdefault(id(m), m.cpu().numpy())
                      for m in self.forward_pass.masks(len(ids)))
        tokens = self.token_strings(ids.tolist())
        special: set[int] = getattr(self.tokenizer, "special_ids", set())
        masked = tuple(i for i, (t, s) in enumerate(zip(ids.tolist(), tokens)) if t in special and s in MASK_TOKENS)
        long_parts: dict[str, Any] = {}
        if long:
            t, layers, heads = len(ids), self.spec.n_layers, self.spec.n_heads
            long_parts = {"pooled": Overview(overview_block(t), stack("pooled_max"), stack("pooled_mean"),
                                             stack("best_key", np.int32), stack("best_weight")),
                          "top_kept": self._top_tokens(r["final"][0][0])}
            logits: Any = NotKept("logits", (t, self.spec.vocab_size), f"top_next(k) (k <= {TOP_KEPT})", t)
            weights: Any = NotKept("attentions", (layers, heads, t, t),
                                   "head_map(layer, head[, rows]) for one head's exact map, overview for every head", t)
            head_out: Any = NotKept("head outputs", (layers, heads, t, self.spec.d_head),
                                    "head_map(layer, head) @ v[layer, kv_head(head)] for one head", t)
        else:
            assert out.logits is not None
            logits, weights, head_out = out.logits[0].cpu().numpy(), stack("weights"), stack("head_out")
        return Trace(self.name, ids, tokens, logits, weights,
                     self.info, note, q=stack("q"), k=stack("k"), v=stack("v"),
                     head_outputs=head_out, scales=self.spec.scales, masks=masks,
                     display=self.token_strings, ablated=tuple(sorted((int(li), int(h)) for li, h in ablate or ())),
                     prediction="masked" if self.spec.masked_lm else "next",
                     masked_positions=masked if self.spec.masked_lm else (), spec=self.spec,
                     o_weight=o_weights(self.weights, self.spec), **long_parts)

    def _trace_arrays(self, t: int) -> dict[str, torch.Tensor]:
        """The arrays a short trace's weights (and, in float32, head outputs) are written into while it runs
        (layers, 1, heads, T, ...): the (layers, heads, T, T) maps are never copied (at 1,024 tokens over 24 layers
        × 14 heads, a 1.4 GB copy with its page faults was a fifth of the trace)."""
        s = self.spec  # torch's memory, not numpy's: numpy asks for huge pages, whose faults took 1.2 s per GB here
        out = {"weights": torch.empty((s.n_layers, 1, s.n_heads, t, t))}
        if self.forward_pass.dtype == torch.float32:
            out["head_out"] = torch.empty((s.n_layers, 1, s.n_heads, t, s.d_head))
        return out

    def _top_tokens(self, final: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """The TOP_KEPT likeliest tokens of every position and their log-probabilities, LOGIT_ROWS positions at a
        time (a 151,936-token vocabulary's logits at 4,096 positions would be 2.5 GB)."""
        t = final.shape[0]
        k = min(TOP_KEPT, self.spec.vocab_size)
        ids, logp = np.empty((t, k), dtype=np.int64), np.empty((t, k), dtype=np.float32)
        with torch.no_grad(), cpu_threads(self.threads if self.device.type == "cpu" else None):
            for r0 in range(0, t, LOGIT_ROWS):
                lp = torch.log_softmax(self.forward_pass.logits(final[None, r0:r0 + LOGIT_ROWS])[0], dim=-1)
                top = torch.topk(lp, k, dim=-1)
                ids[r0:r0 + LOGIT_ROWS], logp[r0:r0 + LOGIT_ROWS] = top.indices.cpu().numpy(), top.values.cpu().numpy()
        return ids, logp

    # --- writing --------------------------------------------------------------------------------------
    def generate(self, prompt: Any, *, max_new_tokens: int = 20, temperature: float = 0.0, top_k: int | None = None,
                 top_p: float | None = None, seed: int = 0, cache: str = "full", window: int | None = None,
                 sinks: int = 4, stop_at_eos: bool = True) -> Generation:
        """Write up to ``max_new_tokens`` after ``prompt`` (text or ids) over a key/value cache; see ``generate``."""
        from .generate import generate

        return generate(self, prompt, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
                        top_p=top_p, seed=seed, cache=cache, window=window, sinks=sinks, stop_at_eos=stop_at_eos)

    def decoder(self, prompt: Any, *, temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None,
                seed: int = 0, cache: str = "full", window: int | None = None, sinks: int = 4,
                stop_at_eos: bool = True) -> Decoder:
        """A stepper over the same decoding as ``generate``: ``step()``, ``undo()``, ``set_sampling``, ``set_cache``."""
        from .generate import Decoder

        return Decoder(self, prompt, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed, cache=cache,
                       window=window, sinks=sinks, stop_at_eos=stop_at_eos)

    # --- cause: patching, knockout, why this key (``cause``) ------------------------------------------------
    def patch(self, clean: Any, corrupted: Any, *, target: Any, foil: Any = None, position: Any = -1, sweep: str,
              progress: Any = None, cancel: Any = None) -> Patching:
        """Activation patching (denoising) over ``sweep``; see ``cause.patching.patch``."""
        from .cause.patching import patch
        return patch(self, clean, corrupted, target=target, foil=foil, position=position, sweep=sweep,
                     progress=progress, cancel=cancel)

    def path_patch(self, clean: Any, corrupted: Any, *, senders: Any, receivers: Any, target: Any, foil: Any = None,
                   position: Any = -1, through_mlps: bool = False) -> PathPatching:
        """The senders' clean output reaching only the receivers' q/k/v; see ``cause.patching.path_patch``."""
        from .cause.patching import path_patch
        return path_patch(self, clean, corrupted, senders=senders, receivers=receivers, target=target, foil=foil,
                          position=position, through_mlps=through_mlps)

    def knockout(self, text_or_ids: Any, edges: Any, *, layers: Any = None, position: Any = -1,
                 top_k: int = 10) -> Knockout:
        """Query → key cells blocked before the softmax in ``layers``; see ``cause.knockout.knockout``."""
        from .cause.knockout import knockout
        return knockout(self, text_or_ids, edges, layers=layers, position=position, top_k=top_k)

    def qk_attribution(self, text_or_ids: Any, layer: int, head: int, query: Any, key: Any) -> QKTerms:
        """One score split into query-source × key-source terms; see ``cause.qk.qk_attribution``."""
        from .cause.qk import qk_attribution
        return qk_attribution(self, text_or_ids, layer, head, query, key)

    def logit_lens(self, text_or_ids: Any, *, position: int = -1, top_k: int = 10) -> LogitLens:
        """Each half-layer's state at ``position`` unembedded (on GPT-NeoX's parallel residual "attn L" is the layer's
        input plus its attention's output, a state the model never holds); see ``cause.lens``."""
        from .cause.lens import logit_lens

        return logit_lens(self, text_or_ids, position=position, top_k=top_k)

    def attribute(self, text_or_ids: Any, *, target: Any, foil: Any = None, position: int = -1) -> Attribution:
        """logit(target) − logit(foil) split into embed, heads, MLPs, biases (norms frozen); ``cause.attribution``."""
        from .cause.attribution import attribute

        return attribute(self, text_or_ids, target=target, foil=foil, position=position)


def token_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(B, T - 1) cross-entropy of each next token, from logits (B, T, vocab)."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    return -logp.gather(-1, ids[:, 1:, None])[..., 0]


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PretrainedError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise PretrainedError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise PretrainedError(f"{path}: expected a JSON object")
    return data


def load_pretrained(path: str | Path, *, device: str = "cpu", dtype: Any = None, memory_limit: int | None = None,
                    threads: int | None = None) -> PretrainedModel:
    """Load a Hugging Face model folder (``config.json``, ``model.safetensors`` or an index + shards,
    ``tokenizer.json``) or a model this app trained (its folder or ``.safetensors`` file).

    ``memory_limit``: bytes to assume free instead of ``MemAvailable`` (tests simulate a small machine with it).
    ``threads``: CPU threads while the model runs (``PretrainedModel.threads``; None = torch's setting).
    Raises ``PretrainedError`` (a ``ValueError``) naming the file and the reason.
    """
    from ..devices import resolve_device
    from . import families
    from .memory import check_fits
    from .own import own_checkpoint, own_config_json
    from .weights import PICKLE_SUFFIXES, WeightSet, match, pickle_refusal, sniff_pickle, weight_bytes, weight_files

    p = Path(path).expanduser()
    torch_dtype = _dtype(dtype)
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise PretrainedError(f"threads must be a positive integer or None, got {threads!r}")
    try:
        dev = resolve_device(device)
    except ValueError as exc:
        raise PretrainedError(f"device: {exc}") from None
    if not p.exists():
        raise PretrainedError(f"{p}: no such file or folder")
    if p.is_file():
        if p.suffix in PICKLE_SUFFIXES or sniff_pickle(p):
            raise pickle_refusal(p)
        if own_checkpoint(p):
            return PretrainedModel(*_own(p, torch_dtype, dev), threads=threads)
        if (p.parent / "config.json").is_file():  # model.safetensors, config.json, an index…: its folder
            p = p.parent
        else:
            WeightSet([p], None)  # a damaged file is refused with the reason
            raise PretrainedError(f"{p}: a safetensors file not saved by this app, and no config.json beside it: "
                                  "give a folder with config.json, model.safetensors and tokenizer.json")
    single = p / "model.safetensors"
    if own_checkpoint(single) or (single.is_file() and own_config_json(p)):
        return PretrainedModel(*_own(single, torch_dtype, dev), threads=threads)
    config_path = p / "config.json"
    if not config_path.is_file():
        raise PretrainedError(f"{p}: no config.json in the folder (a model folder holds config.json, "
                              "model.safetensors and tokenizer.json)")
    cfg = _read_config(config_path)
    spec = parse_config(cfg, config_path)
    files, weight_map = weight_files(p)
    tok_path = p / "tokenizer.json"
    if not tok_path.is_file():
        raise PretrainedError(f"{p}: no tokenizer.json in the folder (needed to turn text into tokens; "
                              "save the tokenizer with the model)")
    where = files[0] if len(files) == 1 else p / "model.safetensors.index.json"
    ws = WeightSet(files, weight_map)
    shapes = families.expected(spec)
    head = families.HEADS[spec.family]
    found = match(ws.entries, shapes, lambda n: families.canonical(n, spec.family), families.IGNORED, head,
                  families.head_optional(spec), where, config_path)
    have_head = head in found and not spec.tie_embeddings
    params, nbytes = weight_bytes(found, torch_dtype, None if have_head else head)
    if dev.startswith("cuda"):
        free, _ = torch.cuda.mem_get_info(torch.device(dev))
        memory_limit = min(memory_limit, free) if memory_limit is not None else free
    check_fits(where, nbytes, params, str(torch_dtype).replace("torch.", ""), memory_limit)
    tokenizer = HFTokenizer(tok_path)
    weights = families.build(spec, lambda key: ws.tensor(found[key], torch_dtype, dev), have_head)
    from .download.hub import hub_repo_id

    name = hub_repo_id(p.absolute()) or spec.name_or_path or p.resolve().name  # not a hub snapshot's commit hash
    return PretrainedModel(name, spec, weights, tokenizer, p, threads)


def _own(path: Path, dtype: torch.dtype, device: str) -> tuple[str, ArchSpec, ModelWeights, OwnVocab, Path]:
    from .own import load_own

    spec, weights, vocab, name = load_own(path, dtype, device)
    return name, spec, weights, vocab, path
