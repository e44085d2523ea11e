"""Qt-free, evented models: one per tab. Views subscribe to their ``events``; undo commands call their methods.

``PlaygroundModel`` (the Playground tab) and ``TrainingSession`` (the Training tab). Neither imports Qt or
pyqtgraph (import-linter checks it); torch is imported only where a model must run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .playground import PlaygroundModel
    from .training_session import TrainingSession

__all__ = ["PlaygroundModel", "TrainingSession"]


def __getattr__(name: str) -> Any:
    if name == "PlaygroundModel":
        from .playground import PlaygroundModel

        return PlaygroundModel
    if name == "TrainingSession":
        from .training_session import TrainingSession

        return TrainingSession
    raise AttributeError(f"module 'app.models' has no attribute {name!r}")
