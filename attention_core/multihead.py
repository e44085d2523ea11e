"""Multi-head attention: the torch module the transformer trains (its step-by-step twin lives in ``heads``).

Shapes: B batch, H heads, L sequence, d_model = H * d_k.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn

from ._validate import to_bool_mask, to_numpy
from .multihead_steps import MultiHeadSteps, check_heads, multi_head_steps, split_heads
from .steps import default_scale


def mask_to_torch(mask: Any, device: torch.device | str) -> torch.Tensor | None:
    """Any accepted mask (numpy/torch, bool or 0/1; True = may attend) as a torch bool tensor."""
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool:
        return mask.to(device)
    return torch.as_tensor(to_bool_mask(mask), device=device)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over keys with blocked keys at zero; a row with every key blocked is all zeros, not NaN."""
    # Written out rather than torch.softmax: on this CPU kind torch's kernel is ~3.5x slower for short rows
    # (12 keys), and the explicit form gives the all-blocked row its zeros for free (0 / tiny = 0).
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    row_max = torch.nan_to_num(scores.amax(dim=-1, keepdim=True).detach(), neginf=0.0)
    e = (scores - row_max).exp()
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(e.dtype).tiny)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``W_q``, ``W_k``, ``W_v``, ``W_o`` as ``nn.Linear`` (lesson 2.3).

    ``forward(query, key, value, mask=None) -> (output (B, Lq, d_model), weights (B, H, Lq, Lk))``.
    ``mask``: bool or 0/1, numpy or torch, broadcastable to (B, H, Lq, Lk); True = may attend.
    ``head_mask`` (H,), not saved with the weights: 0 switches a head's output off (ablation).
    ``rotary``: rotate q and k by their positions (``positions.apply_rotary``) before the scores.
    ``dropout``: drop attention weights while training (as in the report; ``eval()`` turns it off); the returned
    weights are those before dropout, the ones the model's attention *is*.
    """

    head_mask: torch.Tensor  # a non-persistent buffer (register_buffer below)

    def __init__(self, d_model: int, num_heads: int, bias: bool = True, *, rotary: bool = False,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.d_k = check_heads(d_model, num_heads)
        if rotary and self.d_k % 2:
            raise ValueError(f"rotary positions need an even head width d_k, got {self.d_k}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"attention dropout must be in [0, 1), got {dropout}")
        self.rotary = rotary
        self.dropout = nn.Dropout(dropout)
        self.d_model = d_model
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.register_buffer("head_mask", torch.ones(num_heads), persistent=False)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, length, _ = x.shape
        return x.view(b, length, self.num_heads, self.d_k).transpose(1, 2)  # (B, H, L, d_k)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        if query.dim() != 3 or key.dim() != 3 or value.dim() != 3:
            raise ValueError(
                f"query/key/value must be (B, L, d_model): got {tuple(query.shape)}, {tuple(key.shape)}, "
                f"{tuple(value.shape)}"
            )
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.shape[-1] != self.d_model:
                raise ValueError(f"{name}: last dim must be d_model={self.d_model}, got shape {tuple(t.shape)}")
        b, lq, _ = query.shape
        q = self._split(self.W_q(query))
        k = self._split(self.W_k(key))
        v = self._split(self.W_v(value))
        if self.rotary:
            from .positions import apply_rotary, rotary_angles

            q = apply_rotary(q, rotary_angles(q.shape[-2], self.d_k, device=q.device))
            k = apply_rotary(k, rotary_angles(k.shape[-2], self.d_k, device=k.device))
        scores = (q @ k.transpose(-1, -2)) * default_scale(self.d_k)  # (B, H, Lq, Lk)
        m = mask_to_torch(mask, scores.device)
        if m is not None:
            try:
                extra = m.dim() - scores.dim()  # leading dims of size 1 beyond (B, H, Lq, Lk) change nothing
                if extra > 0 and all(n == 1 for n in m.shape[:extra]):
                    m = m.reshape(m.shape[extra:])
                if m.dim() > scores.dim():
                    raise RuntimeError
                m = m.expand_as(scores)
            except RuntimeError:
                raise ValueError(
                    f"mask of shape {tuple(m.shape)} does not broadcast to scores {tuple(scores.shape)}"
                ) from None
        weights = masked_softmax(scores, m)
        heads = self.dropout(weights) @ v  # (B, H, Lq, d_k); dropout is the identity in eval()
        heads = heads * self.head_mask.view(1, -1, 1, 1)
        concat = heads.transpose(1, 2).reshape(b, lq, self.d_model)
        return self.W_o(concat), weights

    @torch.no_grad()
    def explain(self, query: Any, key: Any = None, value: Any = None, mask: Any = None) -> MultiHeadSteps:
        """The per-head steps for one sequence (L, d_model), in float64, equal to ``forward``'s numbers."""
        key = query if key is None else key
        value = key if value is None else value

        def proj(lin: nn.Linear, x: Any, name: str) -> np.ndarray:
            xa = to_numpy(x, name)
            w = lin.weight.detach().cpu().double().numpy()
            out = xa.astype(np.float64) @ w.T
            if lin.bias is not None:
                out = out + lin.bias.detach().cpu().double().numpy()
            return out

        q, k, v = proj(self.W_q, query, "query"), proj(self.W_k, key, "key"), proj(self.W_v, value, "value")
        if self.rotary:  # the same rotation as forward, in float64, head by head
            from .positions import apply_rotary, rotary_angles

            def rot(a: np.ndarray) -> np.ndarray:
                heads_ = torch.from_numpy(split_heads(a, self.num_heads)).double()
                turned = apply_rotary(heads_, rotary_angles(a.shape[0], self.d_k).double()).numpy()
                return np.swapaxes(turned, 0, 1).reshape(a.shape)

            q, k = rot(q), rot(k)
        gate = self.head_mask.detach().cpu().double().numpy()
        wo = self.W_o.weight.detach().cpu().double().numpy().T
        bo = None if self.W_o.bias is None else self.W_o.bias.detach().cpu().double().numpy()
        steps = multi_head_steps(q, k, v, self.num_heads, mask=mask)
        if np.any(gate != 1):
            concat = np.swapaxes(steps.heads.output * gate[:, None, None], 0, 1).reshape(q.shape[0], -1)
        else:
            concat = steps.concat
        output = concat @ wo + (bo if bo is not None else 0.0)
        return MultiHeadSteps(self.num_heads, steps.q_heads, steps.k_heads, steps.v_heads, steps.heads,
                              concat, wo, bo, output)
