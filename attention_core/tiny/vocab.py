"""The reversal task's reserved tokens and their labels, without torch (the GUI's Qt-free state uses them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PAD = 0
SEP = 1


def token_labels(sequence: Iterable[Any]) -> list[str]:
    """Readable labels for a token sequence (list, numpy or torch): SEP and PAD by name, others as numbers."""
    names = {SEP: "SEP", PAD: "PAD"}
    flat = sequence.reshape(-1).tolist() if hasattr(sequence, "reshape") else list(sequence)
    return [names.get(int(t), str(int(t))) for t in flat]
