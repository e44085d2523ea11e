"""Deprecated re-exports, kept so that scripts written against the old layout keep working.

The models now live with their feature: ``app.playground.model.playground.PlaygroundModel`` and
``app.training.model.session.TrainingSession`` (see docs/architecture.md's feature map). ``app.models.X`` still
imports them lazily; new code should import from the feature package. Nothing inside ``app`` imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.playground.model.playground import PlaygroundModel
    from app.training.model.session import TrainingSession

__all__ = ["PlaygroundModel", "TrainingSession"]


def __getattr__(name: str) -> Any:
    if name == "PlaygroundModel":
        from app.playground.model.playground import PlaygroundModel

        return PlaygroundModel
    if name == "TrainingSession":
        from app.training.model.session import TrainingSession

        return TrainingSession
    raise AttributeError(f"module 'app.models' has no attribute {name!r}")
