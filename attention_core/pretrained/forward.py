"""Our own forward pass: every family through one loop, attention written out so each head can be read or changed.

Attention is computed explicitly (q·kᵀ, scale, mask, softmax, ·v), never through a fused kernel: the point is to show
the numbers, and the fused kernels do not return them. What a question needs from the pass is read or written at the
named sites of ``sites`` (``Hooks``): the trace reads ``pattern`` and ``z``, ablation writes zeros or a mean into
``z`` before the output projection (where a head's contribution is still separate), a restart reads ``resid_pre``.
What is not a site stays a record of the attention itself: q and k after rotation (a trace keeps those, so a long
trace can recompute any head's map), the raw scores, a long text's block-pooled overview.

Precision: scores, softmax and the weights are always float32 (a bfloat16 model's q and k are upcast first), so the
weights shown are accurate whatever the model's dtype; the head outputs go back to the model's dtype before the
output projection. In float32 the results equal Hugging Face's eager attention to ~1e-6.

Decoding: ``run(ids, positions=..., cache=KVCache)`` runs new tokens at the positions given against the keys and
values kept from earlier runs. Keys are cached after rotation, so a kept key keeps the position it was computed at
however many others are dropped; each layer's mask is built from the query and key positions (causal, and the
layer's own window), so a cache that skips positions is masked as the positions say, not as the row indices would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .cache_policy import KVCache
from .config import ArchSpec
from .layers import (
    LayerWeights,
    ModelWeights,
    activation,
    attention_weights,
    layer_masks,
    overview_attention,
    position_mask,
    rope_inv_freq,
    rope_tables,
    rotate_half_rope,
    wide,
)
from .sites import Hooks, Writer, head_results

RECORDABLE = frozenset({"weights", "qkv", "scores", "head_out", "resid", "overview", "final"})
"""What ``forward(record=...)`` can keep per layer: attention weights; q, k, v; raw scores; head outputs; the
residual stream entering the layer (which lets a later run restart there); ``overview``: instead of the weights, a
long text's reduced record (``pooled_max``, ``pooled_mean`` (B, heads, P, P) block-pooled maps, ``best_key`` and
``best_weight`` (B, heads, T): each query's largest weight), attention computed a block of queries at a time so no
(heads, T, T) array is ever held; ``final``: the last layer's output (the logits' input), once."""
SITE_RECORDS = {"weights": "pattern", "head_out": "z", "resid": "resid_pre"}
"""The records that are sites, read through ``Hooks`` (the others are the attention's own: rotated q and k, scores,
the overview)."""


@dataclass
class ForwardOutput:
    """``logits`` (B, T, vocab) float32 or None; per layer, what was recorded (each (B, heads, T, ...), float32):
    ``weights``, ``q``, ``k``, ``v`` (k and v per key/value head), ``scores``, ``head_out``; ``resid`` (B, T, d)."""

    logits: torch.Tensor | None
    records: dict[str, list[torch.Tensor]] = field(default_factory=dict)


Ablation = Mapping[tuple[int, int], Any]
"""(layer, head) → "zero" or a vector (d_head,) (or (T, d_head)) that replaces that head's output."""


def ablation_writers(ablate: Ablation | None) -> dict[str, Writer]:
    """``ablate`` as constant writers on ``z.L.h``: zeros, or the value given (broadcast over batch and positions)."""
    out: dict[str, Writer] = {}
    for (li, head), how in (ablate or {}).items():
        value = torch.zeros(()) if isinstance(how, str) else (
            how if isinstance(how, torch.Tensor) else torch.as_tensor(np.asarray(how, dtype=np.float32)))
        out[f"z.{int(li)}.{int(head)}"] = value
    return out


def _split(x: torch.Tensor, heads: int, d_head: int) -> torch.Tensor:
    b, t, _ = x.shape
    return x.view(b, t, heads, d_head).transpose(1, 2)  # (B, heads, T, d_head)


def _qkv(spec: ArchSpec, lw: LayerWeights, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q (B, H, T, d_head), k and v (B, KV, T, d_head) before rotation, after a q/k norm where the family has one."""
    H, KV, dh = spec.n_heads, spec.n_kv_heads, spec.d_head
    if lw.qkv is not None:
        fused = lw.qkv(h)
        if lw.qkv_layout == "neox":  # per head: [q_h | k_h | v_h]
            b, t, _ = fused.shape
            parts = fused.view(b, t, H, 3 * dh).transpose(1, 2).chunk(3, dim=-1)
            return parts[0], parts[1], parts[2]
        q, k, v = fused.split(H * dh, dim=-1)  # gpt2: [q | k | v]
        return _split(q, H, dh), _split(k, H, dh), _split(v, H, dh)
    assert lw.q is not None and lw.k is not None and lw.v is not None
    q, k, v = lw.q(h), lw.k(h), lw.v(h)
    if lw.q_norm is not None and lw.k_norm is not None and spec.qk_norm == "proj":  # OLMo-2: the whole projection
        q, k = lw.q_norm(q), lw.k_norm(k)
    q, k, v = _split(q, H, dh), _split(k, KV, dh), _split(v, KV, dh)
    if lw.q_norm is not None and lw.k_norm is not None and spec.qk_norm == "head":  # Qwen3, Gemma 3: each head
        q, k = lw.q_norm(q), lw.k_norm(k)
    return q, k, v


class ForwardPass:
    """The forward pass of one model (its spec and weights); rotary tables are built once and grown as needed."""

    def __init__(self, spec: ArchSpec, weights: ModelWeights) -> None:
        self.spec = spec
        self.w = weights
        self.dtype = weights.embed.dtype
        self.device = weights.embed.device
        self._inv_freqs: list[torch.Tensor | None] = []  # per layer; None: no rotary there (NoPE, interleaved)
        shared: dict[str, torch.Tensor] = {}
        for li in range(spec.n_layers):
            rope = spec.rope_of(li) if spec.rotary_style == "half" else None
            if rope is not None:
                key = repr((rope[0], sorted(rope[1].items())))
                if key not in shared:
                    shared[key] = rope_inv_freq(spec.rotary_dim, rope[0], rope[1])
                self._inv_freqs.append(shared[key])
            else:
                self._inv_freqs.append(None)
        self._masks: dict[int, list[torch.Tensor | None]] = {}
        self._tables: dict[int, tuple[torch.Tensor, ...]] = {}  # per rope: a table for positions (see _rotate_at)

    def _rotate_at(self, x: torch.Tensor, positions: torch.Tensor, li: int) -> torch.Tensor:
        """Rotate x (..., T, d_head) for the given positions (T,): rows of one table (per rope: Gemma 3's local
        layers have their own) built for 0..n-1 and indexed, so a position gets the same numbers whichever call
        computes it. Grown by doubling, replaced whole (a reader on another thread sees the old table or the new
        one, never a half-built one)."""
        inv = self._inv_freqs[li]
        if inv is None and self.spec.rotary_style != "interleaved":  # a layer without positions (NoPE)
            return x
        key = -1 if inv is None else id(inv)
        need = int(positions.max()) + 1 if positions.numel() else 1
        table = self._tables.get(key, ())
        if not table or table[0].shape[0] < need:
            n = max(need, 2 * (table[0].shape[0] if table else 32))
            if inv is None:
                from ..positions import rotary_angles

                table = (rotary_angles(n, self.spec.d_head, device=x.device),)
            else:
                table = rope_tables(n, inv, x.dtype, x.device)
            self._tables[key] = table
        if self.spec.rotary_style == "interleaved":
            from ..positions import apply_rotary

            return apply_rotary(x, table[0][positions])
        cos, sin = table
        return rotate_half_rope(x, cos[positions].to(x.dtype), sin[positions].to(x.dtype), self.spec.rotary_dim)

    def masks(self, length: int) -> list[torch.Tensor | None]:
        """The layers' masks for ``length`` (the last length's kept; read once, so two threads running the model
        on different lengths, as the Model tab's trace and scan do, never find the other's in its place)."""
        masks = self._masks.get(length)
        if masks is None:
            masks = layer_masks(self.spec, length, self.device)
            self._masks = {length: masks}
        return masks

    def embed(self, ids: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        x = self.w.embed[ids]
        spec = self.spec
        if spec.embed_scale != 1.0:  # Gemma: √d_model, as a number of the model's dtype
            x = x * torch.tensor(spec.embed_scale, dtype=x.dtype, device=x.device)
        if self.w.token_type is not None:
            x = x + self.w.token_type
        if self.w.pos_embed is not None:
            off = spec.position_offset  # RoBERTa: its positions start after the padding index
            table = self.w.pos_embed
            x = x + (table[off: off + ids.shape[1]] if positions is None else table[positions + off])
        return x if self.w.embed_norm is None else self.w.embed_norm(x)

    def _layer_mask(self, li: int, t: int, positions: torch.Tensor | None, k_positions: torch.Tensor | None,
                    extra: torch.Tensor | None) -> torch.Tensor | None:
        if positions is None or k_positions is None:
            mask = self.masks(t)[li]
        else:
            mask = position_mask(self.spec, li, positions, k_positions)
        if extra is None:
            return mask
        return extra if mask is None else mask & extra

    def _attention(self, li: int, lw: LayerWeights, h: torch.Tensor, hk: Hooks | None,
                   rec: dict[str, list[torch.Tensor]], positions: torch.Tensor | None = None,
                   cache: KVCache | None = None, extra_mask: torch.Tensor | None = None,
                   rows: slice | None = None, span: slice | None = None) -> torch.Tensor:
        """The attention sublayer's output before any post norm. ``rows``: only these queries' outputs (keys and
        values from every position); ``span``: the positions z's rows are (cuts a constant's position axis);
        ``rec``: the attention's own records (rotated q/k/v, scores, overview)."""
        spec = self.spec
        if hk and cache is None and not rec and hk.constant_z(li):  # every head's output given: no attention
            t = len(range(h.shape[1])[rows or slice(None)])
            heads = torch.empty(h.shape[0], spec.n_heads, t, spec.d_head, dtype=self.dtype, device=h.device)
            return self._out(li, lw, hk("z", li, heads, span), hk)
        q, k, v = _qkv(spec, lw, h)
        if hk:
            q, k, v = hk("q", li, q), hk("k", li, k), hk("v", li, v)
        if spec.positions == "rotary":
            at = torch.arange(q.shape[-2], device=q.device) if positions is None else positions
            q, k = self._rotate_at(q, at, li), self._rotate_at(k, at, li)
        k_positions = positions
        if cache is not None:
            assert positions is not None
            old_k, old_v, old_pos = cache.keys[li], cache.values[li], cache.positions[li]
            if old_k is not None and old_v is not None and old_pos is not None:
                k, v = torch.cat((old_k, k), dim=-2), torch.cat((old_v, v), dim=-2)
                k_positions = torch.cat((old_pos, positions))
            cache.keys[li], cache.values[li], cache.positions[li] = k, v, k_positions
        kf, vv = wide(k), v
        if spec.kv_group > 1:  # grouped-query attention: each key/value head serves kv_group query heads
            kf, vv = kf.repeat_interleave(spec.kv_group, dim=1), v.repeat_interleave(spec.kv_group, dim=1)
        mask = self._layer_mask(li, q.shape[-2], positions, k_positions, extra_mask)
        qs = q if rows is None else q[:, :, rows]
        mask = mask if rows is None or mask is None else mask[rows]
        if "pooled_max" in rec:
            heads = overview_attention(wide(q), kf, vv, spec.scales[li], spec.softcap, mask, rec)
        else:  # a reader's own arrays (``Hooks.into``: a trace's) are computed into, nothing copied after
            weights = attention_weights(wide(qs), kf, spec.scales[li], spec.softcap, mask,
                                        hk.buffer("pattern", li) if hk else None)
            if hk:
                weights = hk("pattern", li, weights)
            heads = torch.matmul(weights.to(vv.dtype), vv, out=hk.buffer("z", li) if hk else None)  # (B, H, T, d_head)
        if hk:
            heads = hk("z", li, heads, span)
        if "q" in rec:
            rec["q"].append(wide(q))
            rec["k"].append(wide(k))
            rec["v"].append(wide(v))
        if "scores" in rec:
            rec["scores"].append(wide(q) @ kf.transpose(-1, -2))
        return self._out(li, lw, heads, hk)

    def _out(self, li: int, lw: LayerWeights, heads: torch.Tensor, hk: Hooks | None) -> torch.Tensor:
        """Heads (B, H, T, d_head) through W_O; when ``result`` is named, head by head (the sum is then the
        attention's output: a replaced head's result is what the layer adds)."""
        if hk and hk.touches("result", li):
            result = hk("result", li, head_results(lw.o.weight, lw.o.in_out, heads))
            out = result.sum(dim=1)
            return out if lw.o.bias is None else out + lw.o.bias
        b, _, t, _ = heads.shape
        return lw.o(heads.transpose(1, 2).reshape(b, t, -1))

    def _mlp(self, lw: LayerWeights, h: torch.Tensor) -> torch.Tensor:
        if lw.mlp_gate is not None:  # the activation's input and output are temporaries: in place
            return lw.mlp_out(activation(self.spec.act, lw.mlp_gate(h), fresh=True).mul_(lw.mlp_in(h)))
        return lw.mlp_out(activation(self.spec.act, lw.mlp_in(h), fresh=True))

    def _block(self, li: int, lw: LayerWeights, x: torch.Tensor, hk: Hooks | None,
               rec: dict[str, list[torch.Tensor]], pos: torch.Tensor | None, cache: KVCache | None,
               mask: torch.Tensor | None, rows: slice | None = None, span: slice | None = None) -> torch.Tensor:
        """One layer: where its norms sit is the family's (``ArchSpec.norm_place``). ``rows``: the outputs of
        those positions only (a pre-norm decoder's last layer, when only they get logits)."""
        if hk:
            x = hk("resid_pre", li, x)
        if self.spec.norm_place == "after":  # BERT's post-LN: the norm follows each residual add
            assert lw.ln1 is not None and lw.ln2 is not None
            attn = self._attention(li, lw, x, hk, rec, pos, cache, mask, None, span)
            x = lw.ln1(x + (hk("attn_out", li, attn) if hk else attn))
            mlp = self._mlp(lw, x)
            x = lw.ln2(x + (hk("mlp_out", li, mlp) if hk else mlp))
            return hk("resid_post", li, x) if hk else x
        attn = self._attention(li, lw, x if lw.ln1 is None else lw.ln1(x), hk, rec, pos, cache, mask, rows,
                               span)
        x = x if rows is None else x[:, rows]
        if lw.post1 is not None:  # OLMo-2, Gemma: the sublayer's output is normalised before it is added
            attn = lw.post1(attn)
        if hk:
            attn = hk("attn_out", li, attn)
        if self.spec.parallel_residual:  # GPT-NeoX: attention and MLP both read the layer's input
            assert lw.ln2 is not None
            mlp = self._mlp(lw, lw.ln2(x))
            x = x + attn + (hk("mlp_out", li, mlp) if hk else mlp)
        else:
            x = x + attn
            mlp = self._mlp(lw, x if lw.ln2 is None else lw.ln2(x))
            mlp = mlp if lw.post2 is None else lw.post2(mlp)
            x = x + (hk("mlp_out", li, mlp) if hk else mlp)
        return hk("resid_post", li, x) if hk else x

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """float32 logits of the last layer's output: final norm, a masked-LM head's transform, the unembedding,
        Gemma 2's soft-cap."""
        w = self.w
        if w.final_norm is not None:
            x = w.final_norm(x)
        if w.head_transform is not None and w.head_norm is not None:  # RoBERTa's head uses exact GELU always
            x = w.head_norm(activation("gelu" if self.spec.family == "roberta" else self.spec.act,
                                       w.head_transform(x)))
        out = wide(w.lm_head(x))
        cap = self.spec.final_softcap
        return out if cap is None else torch.tanh(out / cap) * cap

    @torch.no_grad()
    def run(self, ids: torch.Tensor, *, ablate: Ablation | None = None, record: frozenset[str] | set[str] = frozenset(),
            logits: bool = True, start_layer: int = 0, resid: torch.Tensor | None = None,
            stop_after: int | None = None, logit_positions: slice | None = None,
            positions: Any = None, cache: KVCache | None = None, mask: torch.Tensor | None = None,
            into: Mapping[str, torch.Tensor] | None = None, hooks: Hooks | None = None) -> ForwardOutput:
        """ids (B, T) long. ``start_layer`` + ``resid`` (the residual stream entering that layer, recorded by an
        earlier run) skip the layers before it; ``stop_after`` ends after that layer (no logits);
        ``logit_positions`` computes the logits of those positions only (a loss over part of a sequence).

        ``hooks``: the sites read and replaced (``sites.Hooks``; its ``values`` filled with the sites of the layers
        run: a restart's earlier layers are not met); ``ablate`` is a shorthand for constant writers on ``z.L.h``
        (a hook's own writer of the same head wins).

        ``positions`` (T,) ints: the tokens' positions (default 0..T-1, or after the cache's last position when a
        ``cache`` is given). ``cache``: the keys and values of earlier tokens, which these tokens attend to as well;
        their keys and values are appended to it (the k and v sites are the new tokens' only). ``mask`` (T, keys)
        bool, True = may attend: AND-ed with each layer's own mask (keys = the cached ones, in the cache's order,
        then these tokens). ``into``: float32 (layers, B, heads, T, ...) tensors the ``weights`` (and
        ``head_out``) records are computed into (``Hooks.into`` of each layer's ``pattern`` and ``z``: a trace's
        numpy arrays, nothing copied after the run).

        Only what the logits need is computed: with ``logit_positions`` (a slice), nothing recorded and nothing
        replaced but constant z values, a causal model runs the positions up to the last of them only and its last
        layer those positions' outputs only; a layer whose every head's z is a constant skips its attention."""
        unknown = set(record) - RECORDABLE
        if unknown:
            raise ValueError(f"record: unknown {sorted(unknown)}; choose from {sorted(RECORDABLE)}")
        if "overview" in record and ("weights" in record or "scores" in record):
            raise ValueError("record: 'overview' replaces 'weights' and 'scores' (a long text's maps)")
        last = self.spec.n_layers - 1 if stop_after is None else stop_after
        layers = range(start_layer, last + 1)
        reads = [f"{SITE_RECORDS[r]}.{li}" for r in sorted(set(record) & SITE_RECORDS.keys()) for li in layers]
        writes = {**ablation_writers(ablate), **(hooks.write if hooks is not None else {})}
        buffers = {**(hooks.into if hooks is not None else {}),
                   **{f"{SITE_RECORDS[r]}.{li}": arrays[li] for r, arrays in (into or {}).items()
                      if r in SITE_RECORDS for li in layers}}
        bound = Hooks([*reads, *(hooks.read if hooks is not None else ())], writes, buffers).bind(self.spec)
        hk = bound if bound else None
        rec: dict[str, list[torch.Tensor]] = {}  # the attention's own records
        if "qkv" in record:
            rec.update(q=[], k=[], v=[])
        if "scores" in record:
            rec["scores"] = []
        if "overview" in record:
            if hk is not None and any(hk.touches("pattern", li) for li in layers):
                raise ValueError("pattern sites cannot be read or replaced with record 'overview' (no full maps)")
            rec.update(pooled_max=[], pooled_mean=[], best_key=[], best_weight=[])
        pos: torch.Tensor | None = None
        if positions is not None:
            pos = torch.as_tensor(np.asarray(positions), dtype=torch.long, device=self.device).reshape(-1)
            if pos.shape[0] != ids.shape[1]:
                raise ValueError(f"positions: {pos.shape[0]} given for {ids.shape[1]} tokens")
        elif cache is not None:
            start = max((int(p.max()) + 1 for p in cache.positions if p is not None and p.numel()), default=0)
            pos = torch.arange(start, start + ids.shape[1], device=self.device)
        if pos is not None and pos.numel() and (int(pos.min()) < 0 or int(pos.max()) >= self.spec.max_positions):
            raise ValueError(f"positions must lie in 0..{self.spec.max_positions - 1} (the model's max positions)")
        x = self.embed(ids, pos) if resid is None else resid.to(self.dtype)
        rows = span = None  # the last layer's rows: a causal model's later positions feed none of the logits
        if (logit_positions is not None and logits and last == self.spec.n_layers - 1 and not record
                and (hk is None or hk.only_constants()) and cache is None and pos is None and mask is None
                and self.spec.causal and self.spec.norm_place != "after"):
            r0, r1, step = logit_positions.indices(x.shape[1])
            if step == 1 and r1 > r0:
                x, rows, span = x[:, :r1], slice(r0, r1), slice(0, r1)
        for li in layers:
            x = self._block(li, self.w.layers[li], x, hk, rec, pos, cache, mask,
                            rows if li == last else None, rows if li == last and rows else span)
        out = None
        if logits and last == self.spec.n_layers - 1:
            if logit_positions is not None and rows is None:
                out = self.logits(x[:, logit_positions])
            else:
                out = self.logits(x)
        if hk is not None:
            for r in set(record) & SITE_RECORDS.keys():
                rec[r] = [hk.values[f"{SITE_RECORDS[r]}.{li}"] for li in layers]
            if hooks is not None:
                hooks.values = {name: hk.values[name] for name in hooks.read if name in hk.values}
        if "final" in record:
            rec["final"] = [x]
        return ForwardOutput(out, rec)
