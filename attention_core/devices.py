"""Device discovery and validation. torch is imported lazily so that listing ``cpu`` costs nothing."""

from __future__ import annotations

from typing import Any


def _cuda_count() -> int:
    import torch

    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # a broken driver must not crash the app
        return 0


def available_devices() -> list[str]:
    """``["cpu", "cuda:0", ...]``: CPU first, then each visible GPU."""
    return ["cpu"] + [f"cuda:{i}" for i in range(_cuda_count())]


def resolve_device(device: Any = "cpu") -> str:
    """Normalise ``"cpu"``, ``"cuda"``, ``"cuda:N"`` (or a torch.device); refuse a GPU that is not there."""
    name = str(device).strip().lower() if device is not None else "cpu"
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        index = 0
        if name != "cuda":
            try:
                index = int(name.split(":", 1)[1])
            except ValueError:
                raise ValueError(f"device {device!r}: expected 'cuda:N' with an integer N") from None
        count = _cuda_count()
        if index >= count or index < 0:
            raise ValueError(
                f"device {device!r} is not available; available devices: {', '.join(available_devices())}"
            )
        return f"cuda:{index}"
    raise ValueError(
        f"unknown device {device!r}; expected 'cpu', 'cuda' or 'cuda:N' "
        f"(available: {', '.join(available_devices())})"
    )
