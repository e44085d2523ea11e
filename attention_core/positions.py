"""Position information for the TinyTransformer (lesson 2.3): learned embeddings, the fixed sinusoidal table of
"Attention Is All You Need", rotary embeddings (RoFormer), or none.

Without positions, attention is permutation-equivariant: shuffle the input tokens and every output row shuffles
with them, so a task whose answer depends on *where* a token sits (reversal) cannot be learned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
