"""Scaled dot-product attention, one visible step at a time, plus a fused bulk path.

``attention_steps`` keeps every intermediate (what the playground draws); ``attention`` returns only the
output and uses torch's fused kernel, for large inputs and benchmarks.

CPU path: numpy. A live edit of a 16x64 matrix costs ~10-20 us in numpy float64 against 12-600 us for torch
on a loaded 2-core machine (see ``benchmarks/bench_attention.py``), so the playground stays well under 1 ms.
CUDA path: torch on the requested GPU, results copied back to numpy.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ._validate import check_finite, to_bool_mask, to_numpy
from .devices import resolve_device
from .positions import Options as _Options
from .positions import check_options, rotate

STEP_NAMES = ("scores", "scaled", "masked", "weights", "output")
"""The five steps in reading order: the ``AttentionSteps`` fields the views, the CLI and the models name."""
OPTIONAL_STEPS = ("rotated", "capped", "biased")
"""The steps that exist only when asked for (their ``AttentionSteps`` fields are None otherwise), in the order
computed: ``rotated`` (``q_rotated``, ``k_rotated``: rotary positions, before the scores), ``capped`` (c·tanh(x/c) of
the scaled scores: the soft-cap) and ``biased`` (+ bias: ALiBi, added to the capped scores when the soft-cap is on),
all before the mask. Soft-cap, then bias, then mask is the order of Gemma 2 in transformers, FlashAttention (kernel
and ``attention_ref``) and the ONNX Attention operator: a bias never passes through the tanh, so a large negative
bias used as a mask stays large instead of being squashed to −c (which would leak weight)."""
STEP_TITLES = {
    "scores": "Scores Q·Kᵀ",
    "scaled": "Scaled scores",
    "masked": "Masked scores",
    "weights": "Weights = softmax",
    "output": "Output = weights·V",
    "rotated": "Rotated q, k",
    "capped": "Soft-capped scores c·tanh(x/c)",
    "biased": "Biased scores (+ bias)",
}
"""Plain-text title of each step, the five then the optional ones (no numbering); views add their own decoration."""


def default_scale(d_k: int) -> float:
    """The standard scale 1/√d_k (1.0 for an empty key width, so nothing divides by zero)."""
    return 1.0 / math.sqrt(d_k) if d_k > 0 else 1.0


class _Shaped(Protocol):
    """Anything with a numpy-like shape: numpy arrays and torch tensors."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def ndim(self) -> int: ...


_Parts = dict[str, Any]  # field name -> numpy array (or None for a step that is off)


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate of ``softmax(mask(q @ k^T * scale)) @ v``, as numpy arrays.

    Shapes, with ``...`` the broadcast batch/head dims: ``scores``, ``scaled``, ``masked``, ``weights``
    (..., Lq, Lk); ``output`` (..., Lq, d_v); ``mask`` (..., Lq, Lk) bool or None (True = may attend);
    ``fully_masked`` (..., Lq) bool, True for queries whose keys are all blocked (their weights and output
    are zeros, never NaN).

    The optional steps (None when off), in the order computed: ``positions`` ((q_positions, k_positions), int64,
    whenever positions were given or rotary is on), ``rotary_base``, ``rotary_dims``, ``q_rotated``/``k_rotated``
    (q and k after ``rotate``; ``scores`` is then q_rotated·k_rotatedᵀ while ``q``/``k`` stay as given),
    ``softcap`` and ``capped`` = c·tanh(scaled/c), ``bias`` (broadcast to the scores' shape) and ``biased`` = the
    last of (scaled, capped) + bias. ``masked`` masks the last of (scaled, capped, biased): soft-cap, then bias,
    then mask (see ``OPTIONAL_STEPS`` for why this order).
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None
    scale: float
    scores: np.ndarray
    scaled: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    fully_masked: np.ndarray
    device: str
    seconds: float
    positions: tuple[np.ndarray, np.ndarray] | None = None
    rotary_base: float | None = None
    rotary_dims: int | None = None
    q_rotated: np.ndarray | None = None
    k_rotated: np.ndarray | None = None
    bias: np.ndarray | None = None
    biased: np.ndarray | None = None
    softcap: float | None = None
    capped: np.ndarray | None = None

    @property
    def d_k(self) -> int:
        return int(self.q.shape[-1])

    def _repr_html_(self) -> str:  # Jupyter draws the five maps (attention_core.notebook; draw() names tokens)
        from .notebook import html_block, steps_svg

        return html_block(steps_svg(self))


def _check_shapes(q: _Shaped, k: _Shaped, v: _Shaped) -> tuple[int, ...]:
    for name, arr in (("q", q), ("k", k), ("v", v)):
        if arr.ndim < 2:
            raise ValueError(f"{name}: expected rank >= 2 (..., L, d), got shape {arr.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k (last dim): q {q.shape}, k {k.shape}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys (dim -2): k {k.shape}, v {v.shape}"
        )
    try:
        return np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dims of q {q.shape}, k {k.shape}, v {v.shape} do not broadcast"
        ) from None


def _prepare(q: Any, k: Any, v: Any, mask: Any, scale: Any, bias_shape: tuple[int, ...] | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, float]:
    qa, ka, va = to_numpy(q, "q"), to_numpy(k, "k"), to_numpy(v, "v")
    batch = _check_shapes(qa, ka, va)
    for name, arr in (("q", qa), ("k", ka), ("v", va)):
        check_finite(arr, name)
    dtype = np.result_type(qa, ka, va)
    qa, ka, va = qa.astype(dtype, copy=False), ka.astype(dtype, copy=False), va.astype(dtype, copy=False)
    lq, lk = qa.shape[-2], ka.shape[-2]
    target = (*batch, lq, lk)
    if bias_shape is not None:  # a bias may add leading dims (ALiBi's heads): the mask broadcasts to those too
        try:
            target = tuple(np.broadcast_shapes(bias_shape, target))
        except ValueError:
            pass  # refused by name with the other options
    mask_b = None
    if mask is not None:
        m = to_bool_mask(mask, "mask")
        try:
            full = np.broadcast_shapes(m.shape, target)
            if full[-2:] != (lq, lk):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"mask of shape {m.shape} does not broadcast to scores of shape {target}"
            ) from None
        mask_b = np.broadcast_to(m, full)
    return qa, ka, va, mask_b, _check_scale(scale, qa.shape[-1])


def _check_scale(scale: Any, d_k: int) -> float:
    if scale is None:
        return default_scale(d_k)
    try:
        scale_f = float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"scale: expected a number, got {scale!r}") from None
    if not math.isfinite(scale_f):
        raise ValueError(f"scale: must be finite, got {scale_f}")
    return scale_f


def _softmax_masked_np(masked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    row_max = masked.max(axis=-1, keepdims=True) if masked.shape[-1] else np.zeros((*masked.shape[:-1], 1))
    fully = ~np.isfinite(row_max)  # every key blocked (-inf)
    row_max = np.where(fully, 0.0, row_max)
    e = np.exp(masked - row_max)
    total = e.sum(axis=-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return weights, fully[..., 0]


def _steps_numpy(qa: np.ndarray, ka: np.ndarray, va: np.ndarray, mask_b: np.ndarray | None,
                 scale_f: float, opts: _Options | None = None) -> _Parts:
    o = opts or _Options()
    parts: _Parts = {"q_rotated": None, "k_rotated": None, "capped": None, "biased": None}
    if o.rotary_base is not None and o.positions is not None:
        qa = parts["q_rotated"] = rotate(qa, o.positions[0], base=o.rotary_base, dims=o.rotary_dims)
        ka = parts["k_rotated"] = rotate(ka, o.positions[1], base=o.rotary_base, dims=o.rotary_dims)
    scores = qa @ np.swapaxes(ka, -1, -2)
    last = scaled = scores * scale_f
    if o.softcap is not None:  # soft-cap, then bias, then mask (see OPTIONAL_STEPS)
        last = parts["capped"] = o.softcap * np.tanh(scaled / o.softcap)
    if o.bias is not None:
        last = parts["biased"] = last + o.bias
    masked = last if mask_b is None else np.where(mask_b, last, -np.inf).astype(last.dtype, copy=False)
    weights, fully = _softmax_masked_np(masked)
    parts.update(scores=scores, scaled=scaled, masked=masked, weights=weights, output=weights @ va,
                 fully_masked=fully)
    return parts


def _steps_torch(qa: np.ndarray, ka: np.ndarray, va: np.ndarray, mask_b: np.ndarray | None, scale_f: float,
                 device: str, opts: _Options | None = None) -> _Parts:
    import torch

    o = opts or _Options()
    with torch.no_grad():
        q = torch.as_tensor(qa, device=device)
        k = torch.as_tensor(ka, device=device)
        v = torch.as_tensor(va, device=device)
        kept: dict[str, Any] = {"q_rotated": None, "k_rotated": None, "capped": None, "biased": None}
        if o.rotary_base is not None and o.positions is not None:
            q = kept["q_rotated"] = rotate(q, o.positions[0], base=o.rotary_base, dims=o.rotary_dims)
            k = kept["k_rotated"] = rotate(k, o.positions[1], base=o.rotary_base, dims=o.rotary_dims)
        scores = q @ k.transpose(-1, -2)
        last = scaled = scores * scale_f
        if o.softcap is not None:  # soft-cap, then bias, then mask (see OPTIONAL_STEPS)
            last = kept["capped"] = o.softcap * torch.tanh(scaled / o.softcap)
        if o.bias is not None:
            last = kept["biased"] = last + torch.as_tensor(np.array(o.bias), device=device)
        if mask_b is None:
            masked = last
            allowed_any = torch.ones(last.shape[:-1] + (1,), dtype=torch.bool, device=device)
        else:
            m = torch.as_tensor(np.ascontiguousarray(mask_b), device=device)
            masked = last.masked_fill(~m, float("-inf"))
            allowed_any = m.any(dim=-1, keepdim=True)
        weights = torch.softmax(masked, dim=-1)
        weights = torch.where(allowed_any, weights, torch.zeros((), dtype=weights.dtype, device=device))
        output = weights @ v
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        kept.update(scores=scores, scaled=scaled, masked=masked, weights=weights, output=output)
        parts: _Parts = {name: None if t is None else t.cpu().numpy() for name, t in kept.items()}
        fully = (~allowed_any[..., 0]).cpu().numpy()
    parts["fully_masked"] = np.broadcast_to(fully, parts["weights"].shape[:-1])
    return parts


def attention_steps(
    q: Any, k: Any, v: Any, *, mask: Any = None, scale: float | None = None, device: Any = "cpu",
    positions: Any = None, rotary_base: float | None = None, rotary_dims: int | None = None, bias: Any = None,
    softcap: float | None = None,
) -> AttentionSteps:
    """Compute scaled dot-product attention and keep every step.

    q (..., Lq, d_k), k (..., Lk, d_k), v (..., Lk, d_v): numpy arrays, torch tensors or nested lists; leading
    dims broadcast. ``mask``: bool or 0/1, broadcastable to (..., Lq, Lk), **True = may attend**. ``scale``
    multiplies the scores (default 1/sqrt(d_k); 1.0 = unscaled). ``device``: "cpu", "cuda" or "cuda:N".
    float32 input stays float32; lists, integers and float64 give float64.

    Optional steps, in this order (each off by default; see ``AttentionSteps``): ``rotary_base`` (and
    ``rotary_dims``, default d_k) rotates q and k with ``positions.rotate`` first; ``positions`` is one (L,) array
    when Lq = Lk, or ``(q_positions, k_positions)``, non-negative integers, default 0..Lq−1 and 0..Lk−1 (give
    ``(np.array([L - 1]), np.arange(L))`` for one decoding row). ``softcap`` c > 0 maps the scaled scores to
    c·tanh(x/c); ``bias`` (broadcastable to the scores, finite, e.g. ``alibi_bias``) is added after it; then the
    mask: c·tanh(s/c) + bias, as Gemma 2 (transformers), FlashAttention and the ONNX Attention operator compute.
    """
    dev = resolve_device(device)
    qa, ka, va, mask_b, scale_f = _prepare(q, k, v, mask, scale, None if bias is None else _shape_of(bias))
    opts = check_options(qa, ka, positions, rotary_base, rotary_dims, bias, softcap)
    t0 = time.perf_counter()
    if dev == "cpu":
        parts = _steps_numpy(qa, ka, va, mask_b, scale_f, opts)
    else:
        parts = _steps_torch(qa, ka, va, mask_b, scale_f, dev, opts)
    seconds = time.perf_counter() - t0
    return AttentionSteps(
        q=qa, k=ka, v=va, mask=mask_b, scale=scale_f, scores=parts["scores"], scaled=parts["scaled"],
        masked=parts["masked"], weights=parts["weights"], output=parts["output"],
        fully_masked=np.asarray(parts["fully_masked"]), device=dev, seconds=seconds,
        positions=opts.positions, rotary_base=opts.rotary_base, rotary_dims=opts.rotary_dims,
        q_rotated=parts["q_rotated"], k_rotated=parts["k_rotated"], bias=opts.bias, biased=parts["biased"],
        softcap=opts.softcap, capped=parts["capped"],
    )


def _shape_of(x: Any) -> tuple[int, ...] | None:
    """The shape of an array, tensor or nested list (None when ragged: refused by name later)."""
    if hasattr(x, "shape"):
        return tuple(int(n) for n in x.shape)
    try:
        return tuple(np.shape(x))
    except ValueError:
        return None


def _bulk_tensor(x: Any, name: str) -> Any:
    """A torch tensor for the fused kernel: numpy and lists as ``to_numpy`` reads them; integer and bool
    tensors become float64 (as in ``attention_steps``); complex is refused by name."""
    import torch

    if not isinstance(x, torch.Tensor):
        return torch.as_tensor(to_numpy(x, name))
    if x.is_complex():
        raise ValueError(f"{name}: expected real numbers, got dtype {x.dtype} (shape {tuple(x.shape)})")
    return x if x.is_floating_point() else x.to(torch.float64)


def _bulk_mask(mask: Any, device: str) -> Any:
    import torch

    if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool:
        return mask.to(device)
    return torch.as_tensor(to_bool_mask(mask), device=device)


def attention(q: Any, k: Any, v: Any, *, mask: Any = None, scale: float | None = None,
              device: Any = "cpu") -> Any:
    """Bulk path: only the output, through torch's fused ``scaled_dot_product_attention``.

    Takes and returns torch tensors (numpy or lists are converted; the result is then numpy). The same shape and
    mask contract as ``attention_steps``: leading dims of q, k, v and the mask broadcast together, a mask of any
    rank (0 up) that broadcasts to (..., Lq, Lk), True = may attend; a fully masked row gives zeros, not NaN.
    """
    import torch
    import torch.nn.functional as F

    dev = resolve_device(device)
    as_numpy = not isinstance(q, torch.Tensor)
    tq, tk, tv = (_bulk_tensor(x, n) for x, n in ((q, "q"), (k, "k"), (v, "v")))
    batch = _check_shapes(tq, tk, tv)
    scale_f = _check_scale(scale, int(tq.shape[-1]))
    dtype = torch.promote_types(torch.promote_types(tq.dtype, tk.dtype), tv.dtype)
    tq, tk, tv = (t.to(device=dev, dtype=dtype) for t in (tq, tk, tv))
    lq, lk = int(tq.shape[-2]), int(tk.shape[-2])
    lead = tuple(batch)
    m = None
    if mask is not None:
        m = _bulk_mask(mask, dev)
        target = (*batch, lq, lk)
        try:
            full = tuple(torch.broadcast_shapes(tuple(m.shape), target))
        except (RuntimeError, ValueError):
            full = ()
        if full[-2:] != (lq, lk):
            raise ValueError(f"mask of shape {tuple(m.shape)} does not broadcast to scores of shape {target}")
        lead = full[:-2]  # a mask may add leading dims (or widen ones of size 1): they become the result's
        # The fused kernels index the mask as (..., Lq, Lk) with q's rank: a rank-0/1 mask, or a (Lq, Lk) one
        # under 4-D queries, fails inside them (IndexError) unless it is given its full shape (a view, no copy).
        m = m.expand(full)
    # Nor do the fused kernels broadcast q, k, v against each other: each gets the full leading shape (views).
    tq, tk, tv = (t.expand(*lead, *t.shape[-2:]) for t in (tq, tk, tv))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=m, scale=scale_f)
    if m is not None:
        blocked_rows = ~m.any(dim=-1, keepdim=True)
        if bool(blocked_rows.any()):
            out = out.masked_fill(blocked_rows, 0.0)
    return out.detach().cpu().numpy() if as_numpy else out
