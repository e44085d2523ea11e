"""The Model tab's tests: an induction model trained here once per session (this app's recipe, seeded, ~3 s), and
the Detect view's tiny Llama with 4,096 positions (``detect_long_model``), built once and opened once per module."""

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


@pytest.fixture(scope="session")
def long_llama(tmp_path_factory) -> Path:
    """``detect_long_model.build_long_model``'s folder (2 layers × 2 heads, 4,096 positions), built once."""
    from tests.model_tab.detect_long_model import build_long_model

    return build_long_model(tmp_path_factory.mktemp("detect-long") / "llama-4k")


@pytest.fixture(scope="module")
def long_session(long_llama):
    """An ``InspectSession`` with ``long_llama`` open: one per module (its tests change its probe)."""
    from app.model_tab.model.session import InspectSession

    s = InspectSession()
    s.load(long_llama)
    assert s.wait_idle(120) and s.model is not None
    yield s
    s.shutdown()
