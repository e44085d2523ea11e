"""attention_core: scaled dot-product attention made visible, on CPU or CUDA. No Qt, ever.

Every public name below imports from ``attention_core`` itself (this module's lazy map): that is the one public
path; the modules named here say where a name's code lives.

The map, by subject (read the top first):

- the attention a learner reads first (numpy; torch only where said):
  ``steps`` (``attention_steps`` -> ``AttentionSteps``: scores, scaled, masked, weights, output; ``attention``, the
  fused bulk path; ``default_scale``, ``STEP_NAMES``, ``STEP_TITLES``), ``masks`` (``causal_mask``,
  ``padding_mask``; **mask convention: True = may attend**), ``metrics`` (``attention_entropy``, ``focus_score``),
  ``multihead_steps`` (the multi-head split made visible: ``multi_head_steps``, ``parameter_count``),
  ``multihead`` (``MultiHeadAttention``, the torch module the transformer trains), ``positions`` (``POSITIONAL_KINDS``,
  ``sinusoidal_table``, ``rotary_angles``, ``apply_rotary``; ``rotate``, ``alibi_bias``: attention_steps' options),
  ``tiled`` (``flash_steps``: FlashAttention's tiles), ``presets`` (the worked examples), ``projection``
  (``pca_2d``); and what they share: ``_validate``, ``devices`` (``available_devices``, ``resolve_device``),
  ``fileio`` (``atomic_write``); ``notebook`` (how results draw themselves in Jupyter: SVG from numpy).
- ``tiny/``: the tiny transformer this app trains and what is measured on it: ``model`` (``TinyTransformer``,
  ``ModelConfig``), ``config`` (``TrainConfig``, torch-free), ``tasks`` (``TASKS``, ``TASK_NAMES``: reversal, copy,
  sort, induction; their data and ideal patterns), ``vocab`` (``PAD``, ``SEP``, ``token_labels``), ``optim``,
  ``training`` (``ReversalTrainer``/``TaskTrainer``, ``train_reversal``, ``train_task``), ``report``
  (``TrainingReport``, ``write_history_csv``), ``control`` (``TrainingControl``), ``analysis`` (accuracies, head
  scores on a batch), ``evaluation`` (the held-out test set, exact and cheap), ``probe`` (the causality probe),
  ``checkpoint`` (``save_checkpoint``, ``load_checkpoint``: safetensors), ``experiments`` (``Experiment``,
  ``EXPERIMENT_PRESETS``, ``build_runs``, ``load_runs_file``, ``write_summary_csv``).
- ``scaling/``: the cost lab: ``measure`` (``iter_scaling``, ``run_scaling``), ``results`` (``ScalingConfig``,
  ``PointResult``, ``ScalingRun``, ``fit_slope``; no torch), ``memory`` (a device's peak memory of one call).
- ``pretrained/``: real transformers (``load_pretrained(path, *, device, dtype) -> PretrainedModel``,
  ``.trace(text) -> Trace``, ``PretrainedError``); ``phenomena/``: ``head_scores``, ``repeated_tokens``, ``ablate``,
  ``ablation_scan`` on a loaded model.

Where the next things go: position schemes in ``positions`` (the real models' rotary tables in
``pretrained/layers``); other tiled passes in ``tiled``, checked against ``steps``; decoding (sampling, a KV cache)
in ``pretrained/`` for real models (the tiny model's greedy decoding is in
``tiny/analysis``); a model family as one entry of ``pretrained/families``. A subject past ~15 modules becomes
its own subpackage.

torch-backed names load lazily, so ``import attention_core`` for the numpy step path stays fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .devices import available_devices, resolve_device
from .masks import causal_mask, padding_mask
from .metrics import attention_entropy, focus_score
from .steps import STEP_NAMES, STEP_TITLES, AttentionSteps, attention, attention_steps, default_scale

# public name -> the module (relative to this package) that defines it
_LAZY = {
    "MultiHeadAttention": "multihead",
    "MultiHeadSteps": "multihead_steps", "multi_head_steps": "multihead_steps", "parameter_count": "multihead_steps",
    "split_heads": "multihead_steps", "check_heads": "multihead_steps",
    "TinyTransformer": "tiny.model", "ModelConfig": "tiny.model",
    "generate_reversal_data": "tiny.tasks", "make_reversal_example": "tiny.tasks", "TASK_NAMES": "tiny.tasks",
    "TASKS": "tiny.tasks", "Task": "tiny.tasks", "generate_task_data": "tiny.tasks",
    "make_task_example": "tiny.tasks", "ideal_pattern": "tiny.tasks",
    "token_labels": "tiny.vocab", "SEP": "tiny.vocab", "PAD": "tiny.vocab",
    "TrainConfig": "tiny.config",
    "TrainingReport": "tiny.report", "write_history_csv": "tiny.report",
    "ReversalTrainer": "tiny.training", "train_reversal": "tiny.training", "TaskTrainer": "tiny.training",
    "train_task": "tiny.training",
    "TrainingControl": "tiny.control",
    "reversal_accuracy": "tiny.analysis", "sequence_accuracy": "tiny.analysis", "greedy_reverse": "tiny.analysis",
    "head_reversal_scores": "tiny.analysis", "probe_attention": "tiny.analysis", "head_task_scores": "tiny.analysis",
    "greedy_generate": "tiny.analysis",
    "evaluate_reversal": "tiny.evaluation", "evaluation_due": "tiny.evaluation",
    "greedy_sequence_correct": "tiny.evaluation", "evaluate_task": "tiny.evaluation",
    "save_checkpoint": "tiny.checkpoint", "load_checkpoint": "tiny.checkpoint", "CheckpointError": "tiny.checkpoint",
    "atomic_write": "fileio",
    "Preset": "presets", "PRESET_NAMES": "presets", "get_preset": "presets", "random_preset": "presets",
    "ScalingConfig": "scaling.results", "PointResult": "scaling.results", "MatmulLimit": "scaling.results",
    "ScalingRun": "scaling.results", "fit_slope": "scaling.results", "IMPLEMENTATIONS": "scaling.results",
    "iter_scaling": "scaling.measure", "run_scaling": "scaling.measure",
    "Projection": "projection", "pca_2d": "projection",
    "POSITIONAL_KINDS": "positions", "sinusoidal_table": "positions", "apply_rotary": "positions",
    "rotary_angles": "positions",
    "rotate": "positions", "alibi_bias": "positions", "alibi_slopes": "positions", "rotary_pair_angles": "positions",
    "sliding_window_mask": "masks", "OPTIONAL_STEPS": "steps",
    "flash_steps": "tiled", "FlashSteps": "tiled", "FlashTile": "tiled",
    "kv_cache_bytes_per_token": "multihead_steps", "check_kv_heads": "multihead_steps",
    "Experiment": "tiny.experiments", "ExperimentRun": "tiny.experiments", "EXPERIMENT_PRESETS": "tiny.experiments",
    "EXPERIMENT_NAMES": "tiny.experiments", "TASK_RECIPES": "tiny.experiments", "task_recipe": "tiny.experiments",
    "build_runs": "tiny.experiments", "load_runs_file": "tiny.experiments", "write_summary_csv": "tiny.experiments",
    "CausalityProbe": "tiny.probe", "probe_model_causality": "tiny.probe", "probe_attention_causality": "tiny.probe",
    "probe_preset_causality": "tiny.probe", "probe_checkpoint": "tiny.probe",
    "load_pretrained": "pretrained", "PretrainedModel": "pretrained", "PretrainedError": "pretrained",
    "Trace": "pretrained", "ModelInfo": "pretrained",
    "Generation": "pretrained", "GenerationStep": "pretrained", "Decoder": "pretrained",
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
