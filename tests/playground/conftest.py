"""The Playground's tests: a real model to open heads from (the Model tab's "Open this head in the Playground")."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """An app-trained reversal model (2 layers × 4 heads), saved as ``attention-playground train`` saves a run."""
    from app.training.cli import write_run_folder
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.training import ReversalTrainer

    trainer = ReversalTrainer(TrainConfig(steps=2, seed=0))
    trainer.run(lambda _r: None)
    out = tmp_path_factory.mktemp("tiny-run")
    write_run_folder(out, trainer)
    return out
