"""The sequence-reversal task of lesson 2.3: ``[a b c ... SEP ... c b a]``; 0 = PAD, 1 = SEP."""

from __future__ import annotations

import torch

from .vocab import PAD, SEP, token_labels  # noqa: F401  (part of this module's public names)


def generate_reversal_data(num_samples: int, seq_len: int, vocab_size: int, seed: int | None = None
                           ) -> torch.Tensor:
    """LongTensor (num_samples, 2*seq_len+1): tokens in [2, vocab_size), SEP at position seq_len, then the
    input reversed. Vectorised (the lesson's Python loop costs over a second for 5000 samples)."""
    if num_samples < 0 or seq_len < 1:
        raise ValueError(f"num_samples ({num_samples}) must be >= 0 and seq_len ({seq_len}) >= 1")
    if vocab_size < 3:
        raise ValueError(f"vocab_size must be >= 3 (0 = PAD, 1 = SEP, then real tokens), got {vocab_size}")
    gen = torch.Generator()
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    seq = torch.randint(2, vocab_size, (num_samples, seq_len), generator=gen, dtype=torch.long)
    sep = torch.full((num_samples, 1), SEP, dtype=torch.long)
    return torch.cat([seq, sep, seq.flip(1)], dim=1)


def make_reversal_example(tokens: list[int] | torch.Tensor) -> torch.Tensor:
    """One full sequence (2*L+1,) from an input of L tokens (each must be >= 2)."""
    t = torch.as_tensor(tokens, dtype=torch.long).reshape(-1)
    if t.numel() == 0 or bool((t < 2).any()):
        raise ValueError(f"input tokens must be non-empty and >= 2 (0 = PAD, 1 = SEP): {t.tolist()}")
    return torch.cat([t, torch.tensor([SEP]), t.flip(0)])
