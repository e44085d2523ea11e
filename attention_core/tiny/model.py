"""TinyTransformer of lesson 2.3: token + learned position embeddings, pre-norm blocks, GELU FFN, LM head."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, cast

import torch
import torch.nn as nn

from ..multihead import MultiHeadAttention, mask_to_torch
from ..multihead_steps import check_heads


@dataclass(frozen=True)
class ModelConfig:
    """Everything needed to rebuild a TinyTransformer (saved beside its weights)."""

    vocab_size: int
    d_model: int = 32
    num_heads: int = 4
    num_layers: int = 2
    max_seq_len: int = 64
    positional: str = "learned"
    attention_dropout: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Read a saved config; a checkpoint written before ``positional``/``attention_dropout`` existed gets
        the old behaviour (learned positions, no dropout)."""
        fields = {"vocab_size", "d_model", "num_heads", "num_layers", "max_seq_len"}
        missing = {"vocab_size"} - set(data)
        if missing:
            raise ValueError(f"model config lacks {sorted(missing)}")
        values: dict[str, Any] = {k: int(data[k]) for k in fields if k in data}
        if "positional" in data:
            values["positional"] = str(data["positional"])
        if "attention_dropout" in data:
            values["attention_dropout"] = float(data["attention_dropout"])
        return cls(**values)


class TransformerBlock(nn.Module):
    """x + attn(norm1(x)), then x + ffn(norm2(x)) (pre-norm, as in the lesson)."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int | None = None, *, rotary: bool = False,
                 attention_dropout: float = 0.0) -> None:
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.attention = MultiHeadAttention(d_model, num_heads, rotary=rotary, dropout=attention_dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.norm1(x)
        attn_out, weights = self.attention(h, h, h, mask)
        x = x + attn_out
        x = x + self.ffn(self.norm2(x))
        return x, weights


class TinyTransformer(nn.Module):
    """``forward(tokens (B, L), mask=None) -> (logits (B, L, vocab), [weights (B, H, L, L) per layer])``.

    ``mask``: bool or 0/1, numpy or torch, broadcastable to (B, H, L, L); True = may attend. Pass
    ``causal_mask(L)`` for next-token training.

    ``positional``: ``"learned"`` (an embedding per position, lesson 2.3), ``"sinusoidal"`` (the fixed table, a
    buffer not saved with the weights), ``"rotary"`` (q and k rotated per head, nothing added to x) or ``"none"``.
    ``attention_dropout``: dropout on the attention weights while training (off in ``eval()``).
    """

    pos_table: torch.Tensor  # sinusoidal only: a non-persistent buffer

    def __init__(self, vocab_size: int, d_model: int = 32, num_heads: int = 4, num_layers: int = 2,
                 max_seq_len: int = 64, positional: str = "learned", attention_dropout: float = 0.0) -> None:
        super().__init__()
        from ..positions import check_positional, sinusoidal_table
        from .tasks import MAX_ATTENTION_DROPOUT

        check_heads(d_model, num_heads)
        if vocab_size < 2 or num_layers < 1 or max_seq_len < 1:
            raise ValueError(
                f"vocab_size ({vocab_size}) must be >= 2, num_layers ({num_layers}) and max_seq_len "
                f"({max_seq_len}) >= 1"
            )
        check_positional(positional, d_model, num_heads)
        if not 0.0 <= attention_dropout <= MAX_ATTENTION_DROPOUT:
            raise ValueError(f"attention dropout must be in [0, {MAX_ATTENTION_DROPOUT}], got {attention_dropout}")
        self.config = ModelConfig(vocab_size, d_model, num_heads, num_layers, max_seq_len, positional,
                                  float(attention_dropout))
        self.token_emb = nn.Embedding(vocab_size, d_model)
        if positional == "learned":
            self.pos_emb = nn.Embedding(max_seq_len, d_model)
        elif positional == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_table(max_seq_len, d_model), persistent=False)
        self.layers = nn.ModuleList([
            TransformerBlock(d_model, num_heads, rotary=positional == "rotary", attention_dropout=attention_dropout)
            for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    @classmethod
    def from_config(cls, config: ModelConfig) -> TinyTransformer:
        return cls(config.vocab_size, config.d_model, config.num_heads, config.num_layers, config.max_seq_len,
                   config.positional, config.attention_dropout)

    def forward(self, tokens: torch.Tensor, mask: Any = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if tokens.dim() != 2:
            raise ValueError(f"tokens: expected (B, L), got shape {tuple(tokens.shape)}")
        length = tokens.shape[1]
        if length > self.config.max_seq_len:
            raise ValueError(f"tokens: length {length} exceeds max_seq_len {self.config.max_seq_len}")
        x = self.token_emb(tokens)
        if self.config.positional == "learned":
            x = x + self.pos_emb(torch.arange(length, device=tokens.device).unsqueeze(0))
        elif self.config.positional == "sinusoidal":
            x = x + self.pos_table[:length].unsqueeze(0)
        m = mask_to_torch(mask, tokens.device)
        all_weights = []
        for layer in self.layers:
            x, w = layer(x, m)
            all_weights.append(w)
        return self.head(self.norm(x)), all_weights

    # --- ablation -------------------------------------------------------------------------------------
    def _attention(self, layer: int) -> MultiHeadAttention:
        return cast(TransformerBlock, self.layers[layer]).attention  # ModuleList items are typed as Module

    def set_head_enabled(self, layer: int, head: int, enabled: bool) -> None:
        """Switch one head's output on or off (its contribution before W_o is zeroed)."""
        self._attention(layer).head_mask[head] = 1.0 if enabled else 0.0

    def head_enabled(self, layer: int, head: int) -> bool:
        return bool(self._attention(layer).head_mask[head] != 0)

    def disabled_heads(self) -> list[tuple[int, int]]:
        return [(li, h) for li in range(len(self.layers))
                for h in range(self._attention(li).num_heads) if not self.head_enabled(li, h)]
