"""Saving and loading a training session's model with its recorded history (safetensors + JSON/CSV, never pickle).

Files for ``NAME.safetensors``: the model of the latest step (weights; training config, step and probe in its
metadata) and ``NAME.json`` (``attention_core.tiny.checkpoint.save_model_files``, the CLI's format too), plus
``NAME.history.safetensors`` (every recorded step: report, probe, maps, parameters) and ``NAME.history.csv``
(the metrics, for people and spreadsheets). A file saved without the history (older versions, the CLI) loads
too; then only two points are known (step 0, rebuilt from the seed, and the saved step) and the session says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from app.training.model.driver import Factory
from app.training.model.history import Snapshot, TrainingHistory, snapshot_options

if TYPE_CHECKING:
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.training import ReversalTrainer

NO_HISTORY = ("Its training history was not saved with it: the plots show only the two known points (step 0, "
              "rebuilt from the seed, and the saved step), not the path between them.")


def save_session_files(path: str | Path, config: TrainConfig, history: TrainingHistory) -> Path:
    """Write the model of the latest step and the history; returns the model's path."""
    from app.training.model.tools import model_from_params
    from attention_core.tiny.checkpoint import history_path, save_history, save_model_files
    from attention_core.tiny.report import write_history_csv

    path = Path(path)
    latest = history.latest
    if latest is None or latest.params is None:
        raise RuntimeError("no model yet: Start, Step or Load first")
    model = model_from_params(config, latest.params)
    save_model_files(path, model, config.to_dict(), step=latest.step, probe=list(latest.probe[: config.seq_len]),
                     extra={"history_complete": history.complete})
    save_history(history_path(path), [(s.report, list(s.probe), s.params) for s in history])
    write_history_csv(path.with_name(path.stem + ".history.csv"), history.reports())
    return path


def load_session_files(path: str | Path) -> tuple[Factory, str]:
    """Validate ``path`` now (``CheckpointError`` with the reason) and return (a factory that builds the trainer
    and the snapshots to show, a note for the status line: "" when the full history came with it)."""
    from app.training.model.tools import checkpoint_train_config
    from attention_core.tiny.checkpoint import CheckpointError, history_path, load_checkpoint, load_history

    model, meta = load_checkpoint(path)
    extra = meta.get("extra") or {}
    try:  # what the trainer is built from is checked here: a refusal must come before the session changes
        train_config = checkpoint_train_config(model.config, meta)
        int(extra.get("step", 0) or 0)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: its training config does not fit the model ({exc})") from None
    hp = history_path(path)
    entries = load_history(hp) if hp.is_file() else None
    if entries and int(entries[-1][0].step) != int(extra.get("step", -1)):
        entries = None  # a history of another save of that name: do not pair them
    why = history_misfit(entries or [], model, train_config.seq_len, train_config.task)
    if why:
        raise CheckpointError(f"{hp}: damaged training history ({why})")
    complete = bool(entries) and bool(extra.get("history_complete", True))
    note = "" if complete else NO_HISTORY

    def factory() -> tuple[ReversalTrainer, list[Snapshot]]:
        import torch

        from app.training.model.history import params_of
        from app.training.model.tools import initial_params, trainer_from_checkpoint

        trainer = trainer_from_checkpoint(model, meta)
        cfg = trainer.config
        if entries:
            snaps = [Snapshot.from_report(r, probe, cfg.seq_len, cfg.causal, params, **snapshot_options(cfg))
                     for r, probe, params in entries]
            trainer.history = [r for r, _, _ in entries]
            trainer.probe = torch.tensor(entries[-1][1], dtype=torch.long)
            return trainer, snaps
        probe = [int(t) for t in trainer.probe.tolist()]
        first, last = trainer.history
        return trainer, [
            Snapshot.from_report(first, probe, cfg.seq_len, cfg.causal, initial_params(cfg), **snapshot_options(cfg)),
            Snapshot.from_report(last, probe, cfg.seq_len, cfg.causal, params_of(trainer.model),
                                 **snapshot_options(cfg))]

    return factory, note


def history_misfit(entries: list, model: object, seq_len: int, task: str = "reversal") -> str:
    """"" when every recorded step fits the model (parameters, maps, head scores, probe), else the first misfit: a
    history that passed ``load_history`` can still hold tensors of another shape or name, which would fail only
    later, when Try it or Ablate rebuilds that step's model or a view draws its maps."""
    import numpy as np

    from attention_core.tiny.tasks import sequence_length

    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}  # type: ignore[attr-defined]
    mc = model.config  # type: ignore[attr-defined]
    length = sequence_length(task, seq_len)
    maps = (mc.num_heads, length - 1, length - 1)
    for report, probe, params in entries:
        step = report.step
        if params is not None and {k: tuple(np.shape(v)) for k, v in params.items()} != shapes:
            return f"the parameters of step {step} do not fit the model"
        if len(report.probe_weights) != mc.num_layers or any(np.shape(w) != maps for w in report.probe_weights):
            return f"the attention maps of step {step} do not fit the model"
        if any(scores is not None and np.shape(scores) != (mc.num_layers, mc.num_heads) for scores in
               (report.head_reversal_scores, report.head_task_scores, report.head_entropy)):
            return f"the head scores of step {step} do not fit the model"
        if len(probe) != length:
            return f"the probe of step {step} does not fit the model"
    return ""
