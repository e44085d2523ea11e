"""The Model tab's tests: an induction model trained here once per session (this app's recipe, seeded, ~3 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def induction_model(tmp_path_factory) -> Path:
    """``task_recipe("induction")`` trained and saved as ``attention-playground train`` saves a run (2 layers × 4
    heads; its layer-1 heads become induction heads, its layer-0 heads previous-token heads)."""
    from attention_core import save_checkpoint, task_recipe, train_task

    config = task_recipe("induction", seed=0, cpu_threads=1)
    trainer = train_task(config)
    out = tmp_path_factory.mktemp("induction") / "induction-run"
    out.mkdir()
    save_checkpoint(out / "model.safetensors", trainer.model, extra={"train_config": config.to_dict()})
    (out / "config.json").write_text(json.dumps({"model_config": config.model_config().to_dict(),
                                                 "train_config": config.to_dict()}, indent=2))
    return out


@pytest.fixture(scope="session")
def own_model(tmp_path_factory) -> Path:
    """A reversal model trained here for 30 steps and written as ``train --out`` writes it."""
    from app.training.cli import write_run_folder
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.training import ReversalTrainer

    trainer = ReversalTrainer(TrainConfig(steps=30, seed=0))
    trainer.run(lambda _r: None)
    out = tmp_path_factory.mktemp("own-run")
    write_run_folder(out, trainer)
    return out
