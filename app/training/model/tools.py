"""Helpers of the Training tab's session: speeds, ETA, typed tokens, and the torch-backed tools that run a model
(try-it generation with attention, accuracy, a model rebuilt from a recorded step's parameters, a step's maps
recomputed for another probe) or build a trainer (a fresh one from the settings, one rebuilt from a checkpoint).
torch is imported inside the functions that need it: importing this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from app.training.model.history import Params, Snapshot, params_of, snapshot_options
from attention_core.tiny.tasks import TASK_LAYOUTS, answer_length, prompt_length

if TYPE_CHECKING:
    import torch

    from app.training.model.driver import Factory
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.model import ModelConfig, TinyTransformer
    from attention_core.tiny.training import ReversalTrainer

SPEEDS: tuple[tuple[str, float | None], ...] = (
    ("1 step/s", 1.0),
    ("2 steps/s", 2.0),
    ("5 steps/s", 5.0),
    ("10 steps/s", 10.0),
    ("20 steps/s", 20.0),
    ("as fast as possible", None),
)
"""Playback speeds offered to the learner: (label, steps per second); None = as fast as the CPU allows
(live) or at the recorded pace (replay)."""

DEFAULT_SPEED_INDEX = 2  # 5 steps/s: the default run (79 steps) takes ~16 s, slow enough to watch


def eta_seconds(done: int, total: int, seconds_per_step: float | None) -> float | None:
    """Remaining time for ``total - done`` steps at the measured (or throttled) pace; None when unknown."""
    if seconds_per_step is None or not math.isfinite(seconds_per_step) or seconds_per_step <= 0:
        return None
    return max(0, total - done) * seconds_per_step


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA –"
    if seconds < 60:
        return f"ETA {seconds:.1f} s"
    return f"ETA {int(seconds // 60)} min {int(seconds % 60):02d} s"


TASK_VERBS = {"reversal": "reverses", "copy": "copies", "sort": "sorts", "induction": "continues"}
"""What a model of each task does to its input, for sentences like "the model sorts sequences of 6 tokens"."""


def parse_tokens(text: str, seq_len: int, vocab_size: int, task: str = "reversal") -> list[int]:
    """Tokens typed by the learner ("3 7 2", "3,7,2") -> ints; ValueError with a readable reason. Induction's
    input must be distinct tokens, or tokens that already repeat with one period (what ``make_task_example``
    continues)."""
    parts = [p for p in text.replace(",", " ").split() if p]
    example = ' '.join(str(2 + i % (vocab_size - 2)) for i in range(seq_len))
    try:
        tokens = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"type {seq_len} whole numbers separated by spaces, e.g. {example}") from None
    if len(tokens) != seq_len:
        raise ValueError(f"the {task} model {TASK_VERBS.get(task, 'reads')} sequences of exactly {seq_len} tokens "
                         f"(got {len(tokens)})")
    bad = [t for t in tokens if not 2 <= t < vocab_size]
    if bad:
        raise ValueError(f"tokens must be in 2..{vocab_size - 1} (0 = PAD and 1 = SEP are reserved); "
                         f"got {bad}")
    if task == "induction":
        period = next((i for i, v in enumerate(tokens) if v in tokens[:i]), len(tokens))
        if any(tokens[i] != tokens[i - period] for i in range(period, len(tokens))):
            raise ValueError(f"induction continues a repeating sequence ({TASK_LAYOUTS['induction']}): type "
                             f"{seq_len} distinct tokens, or tokens that repeat with one period (e.g. 3 5 7 3 5 7)")
    return tokens


# --- torch-backed helpers (lazy imports) ------------------------------------------------------------------
@dataclass(frozen=True)
class TryItResult:
    """Greedy answer of one input for the run's task, with the attention each output step used.

    ``prompt``: what the model was given (reversal, copy, sort: inputs + SEP; induction: the inputs and the first
    token of the repeat); ``expected``: the answer a model solving the task writes. ``step_weights[p]``: per layer
    (H, P+p) — the attention row of the last query when the model produced output token p (that query sits at
    position P-1+p, P = len(prompt)). ``sequence`` = prompt + generated.
    """

    inputs: tuple[int, ...]
    generated: tuple[int, ...]
    step_weights: list[list[np.ndarray]] = field(repr=False)
    task: str = "reversal"
    prompt: tuple[int, ...] = ()
    expected: tuple[int, ...] = ()

    @property
    def correct(self) -> list[bool]:
        return [g == e for g, e in zip(self.generated, self.expected)]

    @property
    def sequence(self) -> tuple[int, ...]:
        return (*self.prompt, *self.generated)

    @property
    def first_query(self) -> int:
        """The position of the query that produced output token 0."""
        return len(self.prompt) - 1

    def ideal_keys(self, step: int) -> list[int]:
        """The keys the task's ideal pattern names for the query that produced output ``step`` (on the expected
        sequence: ``attention_core.tiny.tasks.ideal_pattern``)."""
        ideal = ideal_rows(self.task, (*self.prompt, *self.expected), len(self.inputs))
        q = self.first_query + step
        return [int(k) for k in np.flatnonzero(ideal[q])] if ideal is not None and q < ideal.shape[0] else []

    def matrix(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """(weights (A, T-1), blocked (A, T-1)): row p = what output step p attended to; keys it could not
        see yet (not generated) are blocked."""
        A, width = len(self.generated), len(self.prompt) + len(self.generated) - 1
        vals = np.zeros((A, width))
        blocked = np.ones((A, width), dtype=bool)
        for p, per_layer in enumerate(self.step_weights):
            row = per_layer[layer][head]
            vals[p, : row.shape[0]] = row
            blocked[p, : row.shape[0]] = False
        return vals, blocked


def ideal_rows(task: str, full: Sequence[int], seq_len: int) -> np.ndarray | None:
    """``attention_core.tiny.tasks.ideal_pattern`` of one full sequence as a bool numpy array (None if it does not
    fit the task)."""
    import torch

    from attention_core.tiny.tasks import ideal_pattern

    try:
        return ideal_pattern(task, torch.tensor(list(full), dtype=torch.long), seq_len).numpy()
    except ValueError:
        return None


def greedy_with_attention(model: TinyTransformer, inputs: Sequence[int], causal: bool = True,
                          task: str = "reversal") -> TryItResult:
    """Greedy generation like ``attention_core.tiny.analysis.greedy_generate`` from ``task``'s prompt for one input
    (``make_task_example``), recording at every step the attention row of the query that produced the new token.
    Cheap (one tiny forward pass per answer token)."""
    import torch

    from attention_core.masks import causal_mask
    from attention_core.tiny.tasks import make_task_example

    L = len(inputs)
    full = [int(t) for t in make_task_example(task, list(inputs)).tolist()]
    P = prompt_length(task, L)
    seq = full[:P]
    dev = next(model.parameters()).device
    weights_per_step: list[list[np.ndarray]] = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(answer_length(task, L)):
                x = torch.tensor([seq], dtype=torch.long, device=dev)
                mask = torch.as_tensor(causal_mask(len(seq)), device=dev) if causal else None
                logits, weights = model(x, mask)
                seq.append(int(logits[0, -1].argmax()))
                weights_per_step.append([w[0, :, -1, :].double().cpu().numpy() for w in weights])
    finally:
        model.train(was_training)
    return TryItResult(tuple(int(t) for t in inputs), tuple(seq[P:]), weights_per_step, task, tuple(full[:P]),
                       tuple(full[P:]))


def model_accuracy(model: TinyTransformer, data: torch.Tensor, seq_len: int, causal: bool = True,
                   task: str = "reversal") -> tuple[float, float]:
    """(teacher-forced per-token accuracy, greedy exact-sequence accuracy) of ``task`` on ``data``, as the
    trainer's evaluation computes them (``evaluation.evaluate_task``) — ~80 ms on 500."""
    from attention_core.tiny.evaluation import evaluate_task

    was_training = model.training
    try:
        out = evaluate_task(model, task, data, data[:0], seq_len, causal)
        return float(out["reversal_accuracy"]), float(out["sequence_accuracy"])
    finally:
        model.train(was_training)


def model_from_params(config: TrainConfig, params: Params) -> TinyTransformer:
    """A fresh CPU model of ``config``'s shape holding ``params``, in eval mode: what try-it and ablation run, so
    they never touch the model that is training."""
    import torch

    from attention_core.tiny.model import TinyTransformer

    model = TinyTransformer.from_config(config.model_config())
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in params.items()})
    return model.eval()


def reprobed(config: TrainConfig, tokens: Sequence[int], snap: Snapshot) -> Snapshot:
    """``snap`` seen through the probe ``tokens`` (L inputs): its maps recomputed on the model of that step."""
    import torch

    from attention_core.tiny.analysis import probe_attention
    from attention_core.tiny.tasks import make_task_example

    if snap.params is None:
        raise ValueError(f"the parameters of step {snap.step} were not kept")
    full = make_task_example(config.task, torch.tensor(list(tokens)))
    weights = probe_attention(model_from_params(config, snap.params), full, config.causal)
    return snap.with_probe(full.tolist(), weights)


def initial_params(config: TrainConfig) -> Params:
    """The parameters a ``ReversalTrainer`` of ``config`` starts from (same seed = same initialisation)."""
    import torch

    from attention_core.tiny.model import TinyTransformer

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = TinyTransformer.from_config(config.model_config())
    return params_of(model)


@lru_cache(maxsize=4)
def test_data(config: TrainConfig) -> torch.Tensor:
    """The run's held-out test set (the trainer's own: same seed, same sequences), on the CPU."""
    from attention_core.tiny.tasks import generate_task_data

    return generate_task_data(config.task, config.test_size, config.seq_len, config.vocab_size,
                              seed=config.seed * 2 + 2)


test_data.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def extend_run(config: TrainConfig, length: TrainConfig | None = None) -> TrainConfig:
    """The same run, trained for one more ``length`` (default: its own; a finished 1-epoch run continues to 2
    epochs, 30 steps to 60), keeping the unit the learner chose."""
    length = length or config
    if config.steps is not None:
        return replace(config, steps=config.steps + (length.steps or length.total_steps))
    return replace(config, epochs=config.epochs + (length.epochs if length.steps is None else
                                                   math.ceil(length.total_steps / config.steps_per_epoch)))


def fresh_factory(config: TrainConfig, probe: Sequence[int] | None = None) -> Factory:
    """A run's factory for a new model from the settings (same seed = same initialisation), recording its step 0;
    ``probe`` (L inputs) is kept when it fits the config, else the trainer's default probe is used."""
    probe = list(probe) if probe is not None and len(probe) == config.seq_len else None

    def make() -> tuple[ReversalTrainer, list[Snapshot]]:
        from attention_core.tiny.training import ReversalTrainer

        try:
            trainer = ReversalTrainer(config, probe)
        except ValueError:  # a probe with tokens the new vocabulary lacks
            trainer = ReversalTrainer(config)
        p = [int(t) for t in trainer.probe.tolist()]
        return trainer, [Snapshot.from_report(trainer.history[0], p, config.seq_len, config.causal,
                                              params_of(trainer.model), **snapshot_options(config))]

    return make


def checkpoint_train_config(mc: ModelConfig, meta: dict[str, Any]) -> TrainConfig:
    """The run's validated config for a checkpoint's model: its ``extra["train_config"]`` (or defaults) fitted to
    the model's shape (positions and attention dropout included), on a device this machine has; ValueError when the
    file's config cannot train that model. A file written before tasks and positional options existed has none of
    those keys: it loads as what it was, reversal with learned positions and no dropout (the defaults)."""
    from attention_core.tiny.config import TrainConfig

    extra = meta.get("extra") or {}
    cfg_dict = dict(extra.get("train_config") or {})
    cfg_dict.update({"vocab_size": mc.vocab_size, "d_model": mc.d_model, "num_heads": mc.num_heads,
                     "num_layers": mc.num_layers, "positional": mc.positional,
                     "attention_dropout": mc.attention_dropout})
    if "seq_len" not in cfg_dict:  # the longest input whose example the model reads
        induction = cfg_dict.get("task") == "induction"
        cfg_dict["seq_len"] = mc.max_seq_len // 2 if induction else (mc.max_seq_len - 1) // 2
    try:  # a model trained on a GPU this machine lacks continues on the CPU
        from attention_core.devices import resolve_device

        cfg_dict["device"] = resolve_device(cfg_dict.get("device", "cpu"))
    except ValueError:
        cfg_dict["device"] = "cpu"
    try:
        config = TrainConfig.from_dict(cfg_dict).validate()
    except TypeError as exc:  # a value of the wrong type in the file
        raise ValueError(str(exc)) from None
    if config.sequence_length > mc.max_seq_len:
        raise ValueError(f"the checkpoint's model reads at most {mc.max_seq_len} positions, but its training "
                         f"config needs {config.sequence_length}")
    return config


def trainer_from_checkpoint(model: TinyTransformer, meta: dict[str, Any]) -> ReversalTrainer:
    """A ReversalTrainer holding a loaded model: the run's config comes from the checkpoint's
    ``extra["train_config"]`` (``checkpoint_train_config``), history[0] is that seed's untrained start (same seed =
    same initialisation) and history[1] is the loaded model at its recorded step. A model saved at the end of its
    run loads finished; ``extend_run`` continues it."""
    from attention_core.tiny.report import TrainingReport
    from attention_core.tiny.training import ReversalTrainer

    extra = meta.get("extra") or {}
    config = checkpoint_train_config(model.config, meta)
    probe = extra.get("probe")
    try:
        trainer = ReversalTrainer(config, probe) if probe else ReversalTrainer(config)
    except ValueError:  # a probe that does not fit the config: keep the default one
        trainer = ReversalTrainer(config)
    trainer.model.load_state_dict(model.state_dict())
    step = int(extra.get("step", config.total_steps) or 0)
    step = max(step, 1)
    if step > config.total_steps:  # trained past its config (continued): count in the same unit, rounded up
        config = (replace(config, steps=step) if config.steps is not None else
                  replace(config, epochs=math.ceil(step / config.steps_per_epoch)))
        trainer.config = config
    trainer.step_count = step
    base = trainer.history[0]
    evaluation = trainer.evaluate()
    from attention_core.tiny.analysis import probe_attention

    report = TrainingReport(step=step, total_steps=trainer.total_steps, epoch=step / config.steps_per_epoch,
                            loss=float("nan"), train_accuracy=float("nan"), evaluated=True,
                            probe_weights=probe_attention(trainer.model, trainer.probe, config.causal),
                            seconds=0.0, wall_seconds=0.0, **evaluation)
    trainer.history = [replace(base, total_steps=trainer.total_steps), report]
    return trainer
