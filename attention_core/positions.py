"""Position information for the TinyTransformer (lesson 2.3): learned embeddings, the fixed sinusoidal table of
"Attention Is All You Need", rotary embeddings (RoFormer), or none; and for ``attention_steps``: ``rotate`` (rotary
positions in the rotate-half layout real checkpoints use) and ``alibi_bias`` (ALiBi's linear distance bias).

Without positions, attention is permutation-equivariant: shuffle the input tokens and every output row shuffles
with them, so a task whose answer depends on *where* a token sits (reversal) cannot be learned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validate import check_finite, to_numpy

if TYPE_CHECKING:
    import torch

POSITIONAL_KINDS: tuple[str, ...] = ("learned", "sinusoidal", "rotary", "none")
ROTARY_BASE = 10000.0


def sinusoidal_table(length: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """(length, d_model) float32: PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d))."""
    import torch

    pos = torch.arange(length, dtype=torch.float64)[:, None]
    i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / base ** (i / d_model)
    table = torch.zeros((length, d_model), dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


def rotary_angles(length: int, d_k: int, base: float = ROTARY_BASE, device: torch.device | str = "cpu"
                  ) -> torch.Tensor:
    """(length, d_k / 2): the angle pos * base^(-2i/d_k) by which pair i = (2i, 2i+1) turns at position pos."""
    import torch

    if d_k % 2:
        raise ValueError(f"rotary positions need an even head width d_k, got {d_k}")
    inv = base ** (-torch.arange(0, d_k, 2, dtype=torch.float32, device=device) / d_k)
    return torch.arange(length, dtype=torch.float32, device=device)[:, None] * inv[None, :]


def apply_rotary(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x[2i], x[2i+1]) of ``x`` (..., L, d_k) by ``angles`` (L, d_k/2). Then
    (R_m q)·(R_n k) depends only on q, k and the offset n - m: attention sees relative positions."""
    import torch

    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def check_positional(kind: str, d_model: int, num_heads: int) -> None:
    if kind not in POSITIONAL_KINDS:
        raise ValueError(f"positional must be one of {', '.join(POSITIONAL_KINDS)}, got {kind!r}")
    if kind == "rotary" and (d_model // max(num_heads, 1)) % 2:
        raise ValueError(f"rotary positions need an even head width: d_model / heads = {d_model / num_heads:g}")
    if kind == "sinusoidal" and d_model % 2:
        raise ValueError(f"sinusoidal positions need an even d_model, got {d_model}")


# --- Rotary positions and ALiBi for attention_steps (numpy, exact in float64; torch tensors accepted) ---------
#
# The layout here is the "rotate-half" one of Hugging Face's Llama / GPT-NeoX code, not the interleaved pairs of
# ``apply_rotary`` above (the TinyTransformer's, kept as it is so its checkpoints still load): column c and column
# c + dims/2 form pair c, turned by the angle position · base^(-2c/dims). The real checkpoints the Model tab opens
# were trained in this layout, so a head's q and k rotate here exactly as in the model.


def rotary_inverse_frequencies(dims: int, base: float = ROTARY_BASE) -> Any:
    """(dims/2,) float64: base^(-2c/dims) for pair c = (column c, column c + dims/2)."""
    return 1.0 / (float(base) ** (np.arange(0, dims, 2, dtype=np.float64) / dims))


def rotary_pair_angles(positions: Any, dims: int, *, base: float = ROTARY_BASE) -> Any:
    """(..., L, dims/2) float64: the angle (radians) by which pair c turns at each position (positions (..., L))."""
    dims, base = _check_rotary(dims, None, base)
    pos = np.asarray(positions, dtype=np.float64)
    return pos[..., None] * rotary_inverse_frequencies(dims, base)


def _check_rotary(dims: Any, width: int | None, base: Any) -> tuple[int, float]:
    try:
        base_f = float(base)
    except (TypeError, ValueError):
        raise ValueError(f"rotary base: expected a number, got {base!r}") from None
    if not math.isfinite(base_f) or base_f <= 0.0:
        raise ValueError(f"rotary base: must be a positive finite number, got {base!r}")
    if dims is None:
        dims = width
    if isinstance(dims, bool) or not isinstance(dims, (int, np.integer)):
        raise ValueError(f"rotary dims: expected an integer, got {dims!r}")
    dims = int(dims)
    if dims < 2 or dims % 2:
        raise ValueError(f"rotary dims: must be an even number of columns >= 2, got {dims}")
    if width is not None and dims > width:
        raise ValueError(f"rotary dims: {dims} is wider than the head ({width} columns)")
    return dims, base_f


def check_positions(positions: Any, length: int, name: str = "positions") -> Any:
    """``positions`` as a 1-D int64 array of ``length`` non-negative integers, or ValueError naming what is wrong."""
    if type(positions).__module__.startswith("torch") and hasattr(positions, "detach"):
        positions = positions.detach().cpu().numpy()
    try:
        arr = np.asarray(positions)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not a rectangular array of integers ({exc})") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf" or arr.dtype == bool:
        raise ValueError(f"{name}: expected integers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != length:
        raise ValueError(f"{name}: expected shape ({length},) (one position per row), got {arr.shape}")
    if arr.dtype.kind == "f" and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise ValueError(f"{name}: expected whole numbers, got {arr.tolist()}")
    if np.any(arr < 0):
        raise ValueError(f"{name}: positions count from 0, got {arr.tolist()}")
    return arr.astype(np.int64)


def _whole_positions(positions: Any) -> Any:
    """``rotate``'s positions as float64, refused (ValueError) unless whole numbers >= 0: a position is a token's
    index. A negative, fractional or NaN one would turn q and k by an angle no token has (NaN: every number NaN),
    and the scores would look valid."""
    try:
        arr = np.asarray(positions)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rotate: positions are not a rectangular array of numbers ({exc})") from None
    if arr.dtype == object or arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise ValueError(f"rotate: positions must be whole numbers >= 0, got dtype {arr.dtype}")
    pos = arr.astype(np.float64)
    bad = ~np.isfinite(pos) | (pos != np.round(pos)) | (pos < 0)
    if np.any(bad):
        raise ValueError(f"rotate: positions must be whole numbers >= 0 (a token's index), got "
                         f"{pos[bad].ravel()[:5].tolist()}")
    return pos


def rotate(x: Any, positions: Any, *, base: float = ROTARY_BASE, dims: int | None = None) -> Any:
    """Rotary position embedding (RoFormer) in the rotate-half layout of Hugging Face's Llama/NeoX code.

    ``x`` (..., L, d): numpy array, nested lists or a torch tensor (a tensor comes back as a tensor of its dtype and
    device; anything else as numpy, float64 unless it was float32). ``positions`` (L,) or broadcastable to
    ``x.shape[:-1]``: the position of each row, a whole number >= 0 (else ValueError). ``dims`` (even, <= d;
    default d): only the first ``dims`` columns turn (partial rotary, as Pythia's / GPT-NeoX's ``rotary_pct``);
    the rest pass through unchanged.

    With h = dims/2 and θ_c = base^(-2c/dims), pair c = (x[c], x[c+h]) at position p becomes
    (x[c]·cos pθ_c − x[c+h]·sin pθ_c, x[c+h]·cos pθ_c + x[c]·sin pθ_c). A rotation keeps lengths, and
    rotate(q, m)·rotate(k, n) depends on m − n only: the scores see relative positions.
    """
    is_torch = type(x).__module__.startswith("torch") and hasattr(x, "detach")
    if is_torch:
        shape = tuple(x.shape)
    else:
        x = to_numpy(x, "x")
        shape = x.shape
    if len(shape) < 2:
        raise ValueError(f"rotate: x must be (..., L, d), got shape {shape}")
    dims, base_f = _check_rotary(dims, shape[-1], base)
    if type(positions).__module__.startswith("torch") and hasattr(positions, "detach"):
        positions = positions.detach().cpu().numpy()
    pos = _whole_positions(positions)
    try:
        if np.broadcast_shapes(pos.shape, shape[:-1]) != shape[:-1]:
            raise ValueError
    except ValueError:
        raise ValueError(f"rotate: positions of shape {pos.shape} do not fit x of shape {shape} "
                         f"(one position per row: ({shape[-2]},))") from None
    angles = pos[..., None] * rotary_inverse_frequencies(dims, base_f)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)  # (..., L, dims): pair c's angle at columns c and c + h
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
    h = dims // 2
    if is_torch:
        import torch

        c = torch.as_tensor(cos, device=x.device).to(x.dtype)
        s = torch.as_tensor(sin, device=x.device).to(x.dtype)
        tpart = x[..., :dims]
        thalf = torch.cat((-tpart[..., h:], tpart[..., :h]), dim=-1)
        return torch.cat((tpart * c + thalf * s, x[..., dims:]), dim=-1)
    part = x[..., :dims]
    half = np.concatenate((-part[..., h:], part[..., :h]), axis=-1)
    rotated = (part * cos.astype(x.dtype, copy=False) + half * sin.astype(x.dtype, copy=False)).astype(x.dtype)
    return np.concatenate((rotated, x[..., dims:]), axis=-1)


def alibi_slopes(num_heads: int) -> Any:
    """(num_heads,) float64: Press et al.'s ALiBi slopes, the geometric sequence 2^(-8/n), 2^(-16/n), ... for a power
    of two n; otherwise those of the closest power of two below, then every other slope of twice that many (the
    paper's code and BLOOM's ``build_alibi_tensor``)."""
    if isinstance(num_heads, bool) or not isinstance(num_heads, (int, np.integer)) or num_heads < 1:
        raise ValueError(f"alibi: num_heads must be a positive integer, got {num_heads!r}")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    n = int(num_heads)
    closest = 2 ** int(math.floor(math.log2(n)))
    slopes = power_of_two(closest)
    if closest != n:
        slopes += power_of_two(2 * closest)[0::2][: n - closest]
    return np.asarray(slopes, dtype=np.float64)


def alibi_bias(num_heads: int, n_queries: int, n_keys: int | None = None) -> Any:
    """(num_heads, n_queries, n_keys) float64: ALiBi's additive bias, −slope_h · |i − j| (≤ 0, 0 where a query meets
    its own position), added to the scaled scores (``attention_steps(..., bias=...)``), after the soft-cap when one is
    on (c·tanh(s/c) + bias, as Gemma 2, FlashAttention and ONNX order them).

    Sign: distance costs, so every entry is ≤ 0. On the keys a causal mask lets through (j ≤ i) this is exactly the
    paper's m·(j − i); keys ahead of the query (no mask) cost the same by distance, as MPT's non-causal form.
    With ``n_keys`` > ``n_queries`` the queries sit at the *last* ``n_queries`` positions (query i at position
    n_keys − n_queries + i), as the rows being decoded after a prompt. ``n_keys`` < ``n_queries`` is refused.
    """
    slopes = alibi_slopes(num_heads)
    nq, nk = _check_counts(n_queries, n_keys, "alibi_bias")
    qpos = np.arange(nq, dtype=np.float64) + (nk - nq)
    distance = np.abs(qpos[:, None] - np.arange(nk, dtype=np.float64)[None, :])
    return -slopes[:, None, None] * distance[None]


def _check_counts(n_queries: Any, n_keys: Any, who: str) -> tuple[int, int]:
    for name, n in (("n_queries", n_queries), ("n_keys", n_keys)):
        if n is None and name == "n_keys":
            continue
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{who}: {name} must be a non-negative integer, got {n!r}")
    nq = int(n_queries)
    nk = nq if n_keys is None else int(n_keys)
    if nk < nq:
        raise ValueError(f"{who}: n_keys ({nk}) must be >= n_queries ({nq}): the queries are the last positions")
    return nq, nk


# --- attention_steps' options before its softmax, checked here beside the positions they mostly are -------------


@dataclass(frozen=True)
class Options:
    """The optional steps, checked: positions (q, k) int64 or None, rotary base/dims, bias (numpy, the scores'
    dtype), softcap."""

    positions: tuple[np.ndarray, np.ndarray] | None = None
    rotary_base: float | None = None
    rotary_dims: int | None = None
    bias: np.ndarray | None = None
    softcap: float | None = None


def check_options(qa: np.ndarray, ka: np.ndarray, positions: Any, rotary_base: Any, rotary_dims: Any,
                   bias: Any, softcap: Any) -> Options:
    """``attention_steps``' optional steps checked, each refused with a ValueError naming it."""
    lq, lk = qa.shape[-2], ka.shape[-2]
    pos = None
    if positions is not None:
        if isinstance(positions, tuple) and len(positions) == 2:
            pos = (check_positions(positions[0], lq, "q positions"), check_positions(positions[1], lk, "k positions"))
        elif lq == lk:  # one array serves queries and keys alike
            one = check_positions(positions, lq, "positions")
            pos = (one, one)
        else:
            raise ValueError(f"positions: with {lq} queries and {lk} keys, give (q_positions, k_positions)")
    base = dims = None
    if rotary_base is not None:
        dims, base = _check_rotary(rotary_dims, qa.shape[-1], rotary_base)
        if pos is None:  # each counts from 0, as a prompt's rows do
            pos = (np.arange(lq, dtype=np.int64), np.arange(lk, dtype=np.int64))
    elif rotary_dims is not None:
        raise ValueError("rotary_dims: give rotary_base too (rotary positions are off without a base)")
    bias_a = None
    if bias is not None:
        bias_a = to_numpy(bias, "bias")
        check_finite(bias_a, "bias")
        bias_a = bias_a.astype(np.result_type(qa, ka), copy=False)
        try:
            full = np.broadcast_shapes(bias_a.shape, (*np.broadcast_shapes(qa.shape[:-2], ka.shape[:-2]), lq, lk))
            if full[-2:] != (lq, lk):
                raise ValueError
        except ValueError:
            raise ValueError(f"bias of shape {bias_a.shape} does not broadcast to scores (..., {lq}, {lk})") from None
        bias_a = np.broadcast_to(bias_a, full)
    cap = None
    if softcap is not None:
        try:
            cap = float(softcap)
        except (TypeError, ValueError):
            raise ValueError(f"softcap: expected a number, got {softcap!r}") from None
        if not math.isfinite(cap) or cap <= 0:
            raise ValueError(f"softcap: must be a finite number > 0, got {softcap!r}")
    return Options(pos, base, dims, bias_a, cap)
