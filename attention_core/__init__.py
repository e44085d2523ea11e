"""attention_core: scaled dot-product attention made visible, on CPU or CUDA. No Qt, ever.

Public contract (used by the GUI, the CLI and users' scripts; names are stable):

- ``attention_steps(q, k, v, *, mask=None, scale=None, device="cpu") -> AttentionSteps``
  (fields ``scores``, ``scaled``, ``masked``, ``weights``, ``output``); ``attention`` (fused bulk path)
- ``default_scale(d_k)`` (1/√d_k), ``STEP_NAMES`` and ``STEP_TITLES`` (the five steps, their plain titles)
- ``causal_mask(n)``, ``padding_mask(lengths, max_len)``; **mask convention: True = may attend**
- ``attention_entropy(weights)``, ``focus_score(weights)``
- ``MultiHeadAttention``, ``multi_head_steps``, ``parameter_count``, ``TinyTransformer``
- ``generate_reversal_data``, ``TrainConfig``, ``ReversalTrainer``, ``TrainingControl``, ``train_reversal``,
  ``reversal_accuracy``, ``sequence_accuracy``, ``greedy_reverse``, ``head_reversal_scores``
- tasks (``TASK_NAMES``: reversal, copy, sort, induction): ``generate_task_data``, ``make_task_example``,
  ``ideal_pattern``, ``head_task_scores``, ``evaluate_task``, ``TaskTrainer``, ``train_task``, ``task_recipe``;
  positions (``POSITIONAL_KINDS``): ``sinusoidal_table``, ``rotary_angles``, ``apply_rotary``
- experiments: ``EXPERIMENT_PRESETS``, ``build_runs``, ``load_runs_file``, ``Experiment``, ``write_summary_csv``
- ``available_devices()``, ``save_checkpoint``, ``load_checkpoint``, presets
- real models (``pretrained``): ``load_pretrained(path, *, device, dtype) -> PretrainedModel``, ``.trace(text) ->
  Trace``, ``PretrainedError``; phenomena: ``head_scores``, ``repeated_tokens``, ``ablate``, ``ablation_scan``

torch-backed names load lazily, so ``import attention_core`` for the numpy step path stays fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .devices import available_devices, resolve_device
from .masks import causal_mask, padding_mask
from .metrics import attention_entropy, focus_score
from .steps import STEP_NAMES, STEP_TITLES, AttentionSteps, attention, attention_steps, default_scale

_LAZY = {
    "MultiHeadAttention": "multihead", "MultiHeadSteps": "heads", "multi_head_steps": "heads",
    "parameter_count": "heads", "split_heads": "heads", "check_heads": "heads",
    "TinyTransformer": "model", "ModelConfig": "model",
    "generate_reversal_data": "tasks", "make_reversal_example": "tasks", "token_labels": "vocab",
    "SEP": "vocab", "PAD": "vocab",
    "TrainConfig": "train_config", "TrainingReport": "training", "ReversalTrainer": "training",
    "TrainingControl": "training", "train_reversal": "training", "write_history_csv": "training",
    "reversal_accuracy": "analysis", "sequence_accuracy": "analysis", "greedy_reverse": "analysis",
    "head_reversal_scores": "analysis", "probe_attention": "analysis",
    "evaluate_reversal": "evaluation", "evaluation_due": "evaluation", "greedy_sequence_correct": "evaluation",
    "save_checkpoint": "checkpoint", "load_checkpoint": "checkpoint", "CheckpointError": "checkpoint",
    "atomic_write": "fileio",
    "Preset": "presets", "PRESET_NAMES": "presets", "get_preset": "presets", "random_preset": "presets",
    "ScalingConfig": "scaling", "PointResult": "scaling", "MatmulLimit": "scaling", "ScalingRun": "scaling",
    "iter_scaling": "scaling", "run_scaling": "scaling", "fit_slope": "scaling", "IMPLEMENTATIONS": "scaling",
    "Projection": "projection", "pca_2d": "projection",
    "TASK_NAMES": "task_shapes", "TASKS": "tasks", "Task": "tasks", "POSITIONAL_KINDS": "task_shapes",
    "generate_task_data": "tasks",
    "make_task_example": "tasks", "ideal_pattern": "tasks", "head_task_scores": "analysis",
    "greedy_generate": "analysis", "evaluate_task": "evaluation", "TaskTrainer": "training",
    "train_task": "training",
    "sinusoidal_table": "positions", "apply_rotary": "positions", "rotary_angles": "positions",
    "Experiment": "experiments", "ExperimentRun": "experiments", "EXPERIMENT_PRESETS": "experiments",
    "EXPERIMENT_NAMES": "experiments", "TASK_RECIPES": "experiments", "task_recipe": "experiments",
    "build_runs": "experiments", "load_runs_file": "experiments", "write_summary_csv": "experiments",
    "CausalityProbe": "probe", "probe_model_causality": "probe", "probe_attention_causality": "probe",
    "probe_preset_causality": "probe", "probe_checkpoint": "probe",
    "load_pretrained": "pretrained", "PretrainedModel": "pretrained", "PretrainedError": "pretrained",
    "Trace": "pretrained", "ModelInfo": "pretrained",
    "head_scores": "phenomena", "HeadScores": "phenomena", "repeated_tokens": "phenomena", "ablate": "phenomena",
    "ablation_scan": "phenomena",
}

__all__ = [
    "AttentionSteps", "attention", "attention_steps", "default_scale", "STEP_NAMES", "STEP_TITLES",
    "available_devices", "resolve_device", "causal_mask",
    "padding_mask", "attention_entropy", "focus_score", *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attention_core' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
