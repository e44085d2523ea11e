"""The building blocks a loaded model is made of: linear maps, norms, the weights of a block and of the whole model,
activations, rotary positions, masks, attention weights.

Plain dataclasses over tensors that stay where the loader put them (memory-mapped from the safetensors file when the
dtype matches): no ``nn.Module``, no parameter copies, no autograd. A GPT-2 ``Conv1D`` weight is used as stored,
[in, out], rather than transposed into a copy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .config import ArchSpec


@dataclass
class Linear:
    """y = x W (+ b). ``in_out``: the weight is stored [in, out] (GPT-2's Conv1D); otherwise [out, in] (nn.Linear)."""

    weight: torch.Tensor
    bias: torch.Tensor | None = None
    in_out: bool = False

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.in_out:
            flat = x.reshape(-1, x.shape[-1])
            y = flat @ self.weight if self.bias is None else torch.addmm(self.bias, flat, self.weight)
            return y.view(*x.shape[:-1], y.shape[-1])
        return F.linear(x, self.weight, self.bias)

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[1] if self.in_out else self.weight.shape[0])


@dataclass
class Norm:
    """LayerNorm (weight and bias) or an RMSNorm (weight only, normalised in float32), whose weight is applied as
    Llama does (``rms``: w · h cast back), OLMo-2 does (``olmo``: w · h in float32, then cast) or Gemma does
    (``gemma``: h · (1 + w) in float32, then cast: its stored weight is the offset from 1)."""

    weight: torch.Tensor
    bias: torch.Tensor | None
    eps: float
    kind: str = "layer"

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "layer":
            return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
        dtype = x.dtype
        h = wide(x)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.kind == "gemma":
            return (h * (1.0 + wide(self.weight))).to(dtype)
        if self.kind == "olmo":
            return (self.weight * h).to(dtype)
        return self.weight * h.to(dtype)


@dataclass
class LayerWeights:
    """One block. Q, K, V come from ``qkv`` (fused: ``qkv_layout`` "gpt2" = [q | k | v] columns, "neox" = per head
    [q_h k_h v_h]) or from ``q``, ``k``, ``v``. ``mlp_gate`` set = SwiGLU."""

    ln1: Norm | None  # before attention (None: OLMo-2 has none; BERT: after the residual add)
    ln2: Norm | None  # before the MLP (as ln1)
    o: Linear
    mlp_in: Linear
    mlp_out: Linear
    qkv: Linear | None = None
    qkv_layout: str = ""
    q: Linear | None = None
    k: Linear | None = None
    v: Linear | None = None
    mlp_gate: Linear | None = None
    q_norm: Norm | None = None  # Qwen3 / Gemma 3: over each head; OLMo-2: over the whole projection
    k_norm: Norm | None = None
    post1: Norm | None = None  # on the attention's output before the residual add (OLMo-2, Gemma)
    post2: Norm | None = None  # on the MLP's output before the residual add


@dataclass
class ModelWeights:
    """The whole model: embeddings, blocks, final norm, unembedding (``lm_head``, tied = the embedding itself)."""

    embed: torch.Tensor
    layers: list[LayerWeights]
    final_norm: Norm | None  # None: BERT's post-LN blocks end normalised
    lm_head: Linear
    pos_embed: torch.Tensor | None = None  # learned (or this app's sinusoidal table), added to the embeddings
    embed_norm: Norm | None = None  # BERT: LayerNorm of token + position (+ type) embeddings
    token_type: torch.Tensor | None = None  # BERT: token type 0's row, added to every token
    head_transform: Linear | None = None  # a masked-LM head's dense layer (then the activation and head_norm)
    head_norm: Norm | None = None

    def tensors(self) -> list[torch.Tensor]:
        """Every distinct tensor once (a tied head counted once): parameter counts and byte totals use this."""
        seen: dict[int, torch.Tensor] = {}

        def add(*ts: Any) -> None:
            for t in ts:
                if isinstance(t, torch.Tensor):
                    seen.setdefault(id(t), t)
                elif isinstance(t, Linear):
                    add(t.weight, t.bias)
                elif isinstance(t, Norm):
                    add(t.weight, t.bias)

        add(self.embed, self.pos_embed, self.final_norm, self.lm_head, self.embed_norm, self.token_type,
            self.head_transform, self.head_norm)
        for lw in self.layers:
            add(lw.ln1, lw.ln2, lw.o, lw.mlp_in, lw.mlp_out, lw.qkv, lw.q, lw.k, lw.v, lw.mlp_gate, lw.q_norm,
                lw.k_norm, lw.post1, lw.post2)
        return list(seen.values())


def wide(x: torch.Tensor) -> torch.Tensor:
    """x in at least float32: a bfloat16 or float16 value upcast, a float64 one (a float64 model, for exact
    comparisons) kept as it is, so no step of a float64 pass rounds to float32."""
    return x if x.dtype == torch.float64 else x.float()


def activation(name: str, x: torch.Tensor, fresh: bool = False) -> torch.Tensor:
    """The activations the supported configs name, as Hugging Face defines them (gelu_new: the tanh form).
    ``fresh``: x is a temporary the caller no longer needs (silu then runs in place over it)."""
    if name in ("gelu_new", "gelu_fast", "gelu_pytorch_tanh"):
        if name == "gelu_new":  # GPT-2's 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), op for op (the last bit
            # of agreement), its temporaries overwritten in place: each op is the same, a·b = b·a exactly
            t = torch.pow(x, 3.0).mul_(0.044715).add_(x).mul_(math.sqrt(2.0 / math.pi)).tanh_().add_(1.0)
            return (0.5 * x).mul_(t)
        return F.gelu(x, approximate="tanh")
    if name == "gelu":
        return F.gelu(x)
    if name == "relu":
        return F.relu(x)
    if name == "quick_gelu":
        return x * torch.sigmoid(1.702 * x)
    return F.silu(x, inplace=fresh)  # silu / swish


def rope_inv_freq(dim: int, theta: float, scaling: dict[str, object]) -> torch.Tensor:
    """(dim/2,) float32 inverse frequencies theta^(-2i/dim), rescaled for ``linear`` and ``llama3`` rope types.

    ``dynamic`` (NTK) rope changes the frequencies only beyond the trained length, which the loader refuses, so it
    is the default rope here. llama3: wavelengths shorter than ``original_max / high_freq_factor`` are kept, longer
    than ``original_max / low_freq_factor`` divided by ``factor``, in between blended linearly in the inverse.
    """
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    kind = scaling.get("rope_type", "default")
    if kind == "linear":
        return inv / float(scaling["factor"])  # type: ignore[arg-type]
    if kind == "llama3":
        factor = float(scaling["factor"])  # type: ignore[arg-type]
        low = float(scaling.get("low_freq_factor", 1.0))  # type: ignore[arg-type]
        high = float(scaling.get("high_freq_factor", 4.0))  # type: ignore[arg-type]
        old = float(scaling["original_max_position_embeddings"])  # type: ignore[arg-type]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        middle = (wavelen >= old / high) & (wavelen <= old / low)
        return torch.where(middle, blended, scaled)
    return inv


def rotate_half_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, dim: int) -> torch.Tensor:
    """Hugging Face's layout: the first ``dim`` features of each head turned as halves (i, i + dim/2), the rest
    passed through (GPT-NeoX's partial rotary). cos/sin: (T, dim), the frequencies repeated twice."""
    rot, rest = x[..., :dim], x[..., dim:]
    half = dim // 2
    turned = torch.cat((-rot[..., half:], rot[..., :half]), dim=-1)
    out = rot * cos + turned * sin
    return out if rest.shape[-1] == 0 else torch.cat((out, rest), dim=-1)


def rope_tables(positions: int | torch.Tensor, inv_freq: torch.Tensor, dtype: torch.dtype,
                device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (T, 2 · len(inv_freq)), computed in float32 and cast to ``dtype`` as transformers does.
    ``positions``: T (positions 0 … T−1) or the (T,) positions themselves."""
    pos = torch.arange(positions, device=device) if isinstance(positions, int) else positions.to(device)
    freqs = pos.float()[:, None] * inv_freq.to(device)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def unrotate_half_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, dim: int) -> torch.Tensor:
    """The inverse of ``rotate_half_rope`` (each pair turned back by its angle): q or k as they were before the
    rotation, from the rotated ones and the same tables."""
    return rotate_half_rope(x, cos, -sin, dim)


def layer_masks(spec: ArchSpec, length: int, device: torch.device | str = "cpu") -> list[torch.Tensor | None]:
    """Per layer the (T, T) bool mask, True = may attend: causal, and within the window for windowed layers;
    None for a model that attends everywhere (this app's models trained without the causal mask)."""
    i = torch.arange(length, device=device)
    causal = i[None, :] <= i[:, None]
    cache: dict[int | None, torch.Tensor | None] = {}
    out = []
    for w in spec.windows:
        if w not in cache:
            if not spec.causal:
                cache[w] = None
            else:
                cache[w] = causal if w is None else causal & (i[None, :] > i[:, None] - w)
        out.append(cache[w])
    return out


def position_mask(spec: ArchSpec, layer: int, q_positions: torch.Tensor, k_positions: torch.Tensor
                  ) -> torch.Tensor | None:
    """(Tq, Tk) bool, True = may attend, from the queries' and keys' positions: a key at or before the query, and
    within the layer's window; None for a model that attends everywhere. Equals ``layer_masks`` for 0..T-1."""
    if not spec.causal:
        return None
    q, k = q_positions[:, None], k_positions[None, :]
    w = spec.windows[layer]
    return (k <= q) if w is None else (k <= q) & (k > q - w)


OVERVIEW_SIDE = 128
"""The longest side of a long trace's pooled maps (``overview``): blocks of ceil(T / 128) positions (a mosaic of
24 x 14 heads at 256 a side took ~1 s to colour, and each map is ~70 px wide on screen)."""
OVERVIEW_ROWS = 256
"""Queries per chunk when attention runs in chunks (``overview``): (heads, 256, T) floats at a time."""


def overview_block(length: int) -> int:
    """The pooling block of a ``length``-token overview: the side of P × P is ceil(length / block) <= 128."""
    return max(1, -(-length // OVERVIEW_SIDE))


def attention_weights(q: torch.Tensor, k: torch.Tensor, scale: float, softcap: float | None,
                      mask: torch.Tensor | None, out: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(cap(q·kᵀ · scale), masked) over the keys, float32: q (..., Tq, d), k (..., Tk, d), mask (Tq, Tk)
    True = may attend. One function for the whole pass, its chunks and a long trace's head maps, so they agree.
    Every step runs in place in one (..., Tq, Tk) array: ``out`` when given (a trace's own record), else a new one."""
    kt = k.transpose(-1, -2)
    scaled = (q @ kt if out is None else torch.matmul(q, kt, out=out)).mul_(scale)
    if softcap is not None:  # Gemma 2: c · tanh(s / c), after the scale, before the mask
        scaled = scaled.div_(softcap).tanh_().mul_(softcap)
    if mask is not None:
        scaled = scaled.masked_fill_(~mask, float("-inf"))
    return torch.softmax(scaled, dim=-1, out=scaled)


def overview_attention(q: torch.Tensor, kf: torch.Tensor, vv: torch.Tensor, scale: float, softcap: float | None,
                       mask: torch.Tensor | None, rec: dict[str, list[torch.Tensor]]) -> torch.Tensor:
    """Attention OVERVIEW_ROWS queries at a time (each row's softmax is whole, so the weights equal the full
    computation's), recording block-pooled maps and each query's best key instead of the weights."""
    b, h, t, _ = q.shape
    tk = kf.shape[-2]
    block = overview_block(max(t, tk))
    side_q, side_k = -(-t // block), -(-tk // block)
    pmax = torch.zeros(b, h, side_q, side_k, device=q.device)
    psum = torch.zeros(b, h, side_q, side_k, device=q.device)
    best_key = torch.empty(b, h, t, dtype=torch.int32, device=q.device)
    best_w = torch.empty(b, h, t, device=q.device)
    heads = torch.empty(b, h, t, vv.shape[-1], dtype=vv.dtype, device=vv.device)
    step = block * max(1, OVERVIEW_ROWS // block)
    for r0 in range(0, t, step):
        r1 = min(t, r0 + step)
        c0, c1 = 0, side_k  # the key blocks these queries may see (a causal chunk: none after its last query)
        if mask is not None:
            seen = torch.nonzero(mask[r0:r1].any(dim=0)).flatten()
            if seen.numel():
                c0, c1 = int(seen[0]) // block, -(-(int(seen[-1]) + 1) // block)
        k0, k1 = c0 * block, min(tk, c1 * block)
        w = attention_weights(q[:, :, r0:r1], kf[:, :, k0:k1], scale, softcap,
                              None if mask is None else mask[r0:r1, k0:k1])
        heads[:, :, r0:r1] = w.to(vv.dtype) @ vv[:, :, k0:k1]
        top = w.max(dim=-1)
        best_key[:, :, r0:r1], best_w[:, :, r0:r1] = top.indices.to(torch.int32) + k0, top.values
        rows = -(-(r1 - r0) // block)
        pad = (0, (c1 - c0) * block - (k1 - k0), 0, rows * block - (r1 - r0))
        tiles = (torch.nn.functional.pad(w, pad) if any(pad) else w).reshape(b, h, rows, block, c1 - c0, block)
        pmax[:, :, r0 // block: r0 // block + rows, c0:c1] = tiles.amax(dim=(3, 5))
        psum[:, :, r0 // block: r0 // block + rows, c0:c1] = tiles.sum(dim=(3, 5))
    counts = torch.full((side_q,), float(block), device=q.device)
    counts[-1] = t - (side_q - 1) * block
    counts_k = torch.full((side_k,), float(block), device=q.device)
    counts_k[-1] = tk - (side_k - 1) * block
    rec["pooled_max"].append(pmax)
    rec["pooled_mean"].append(psum / (counts[:, None] * counts_k[None, :]))
    rec["best_key"].append(best_key)
    rec["best_weight"].append(best_w)
    return heads


@contextmanager
def cpu_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads (None: as they are), then restore the previous number."""
    old = torch.get_num_threads()
    if n is None or n == old:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
