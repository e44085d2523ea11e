"""``TrainConfig``: the hyper-parameters of a reversal run, without torch.

A settings form validates a config on every keystroke; importing torch for that (~1.5 s) froze the window the
first time the Training tab opened.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from ..devices import resolve_device
from ..multihead_steps import check_heads
from ..positions import POSITIONAL_KINDS
from .tasks import MAX_ATTENTION_DROPOUT, prompt_length, sequence_length, task_problems

if TYPE_CHECKING:
    from .model import ModelConfig


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of a reversal run. Defaults reach >= 99 % greedy test accuracy in a few dozen steps.

    The lesson's recipe is ``TrainConfig.lesson_recipe()`` (Adam 3e-4, batch 128, 100 epochs).
    ``steps`` (if set) overrides ``epochs``; an epoch is one pass over ``train_size`` samples.
    ``eval_every``/``evals_per_doubling``: when test/train metrics are evaluated (the probe snapshot is taken every
    step): at steps 3, 6, 12, 24, 48, ... by default (every ``eval_every`` steps early on, then the spacing doubles
    as the step count doubles, ``evals_per_doubling`` evaluations per doubling; None = every ``eval_every`` steps
    throughout), always at the last step, and every ``eval_every`` steps while the training batches are generated
    exactly but the held-out accuracy is still below 99 % (see ``evaluation.evaluation_due``). An evaluation (one
    teacher-forced pass over the 500 test and ``train_eval_size`` train sequences, which gives the greedy
    exact-sequence accuracy exactly for a causal model; see ``evaluation``) costs ~2.5 train steps on a CPU.
    ``cpu_threads``: torch's intra-op threads for a CPU run, set process-wide when the trainer is built (None leaves
    torch's setting). This model is tiny: with 1 thread a step is as fast on an idle machine and 5-10x faster on a
    busy one, where torch's default of one thread per core spins waiting for the others.
    """

    seq_len: int = 6
    vocab_size: int = 16
    d_model: int = 32
    num_heads: int = 4
    num_layers: int = 2
    lr: float = 2e-2
    batch_size: int = 64
    epochs: int = 1
    steps: int | None = None
    train_size: int = 5000
    test_size: int = 500
    eval_every: int = 3
    train_eval_size: int = 100
    seed: int = 0
    device: str = "cpu"
    causal: bool = True
    cpu_threads: int | None = 1
    evals_per_doubling: int | None = 1
    task: str = "reversal"
    positional: str = "learned"
    attention_dropout: float = 0.0

    @classmethod
    def lesson_recipe(cls, **overrides: Any) -> TrainConfig:
        return cls(**{"lr": 3e-4, "batch_size": 128, "epochs": 100, **overrides})

    def validate(self) -> TrainConfig:
        """Raise ValueError with a readable reason for an impossible combination."""
        check_heads(self.d_model, self.num_heads)
        problems = []
        if self.seq_len < 1:
            problems.append(f"sequence length must be >= 1 (got {self.seq_len})")
        if self.vocab_size < 3:
            problems.append(f"vocabulary size must be >= 3: 0 = PAD, 1 = SEP (got {self.vocab_size})")
        if self.num_layers < 1:
            problems.append(f"layers must be >= 1 (got {self.num_layers})")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append(f"learning rate must be a positive number (got {self.lr})")
        if self.batch_size < 1:
            problems.append(f"batch size must be >= 1 (got {self.batch_size})")
        if self.steps is None and self.epochs < 1:
            problems.append(f"epochs must be >= 1 (got {self.epochs})")
        if self.steps is not None and self.steps < 1:
            problems.append(f"steps must be >= 1 (got {self.steps})")
        if self.train_size < 1 or self.test_size < 1:
            problems.append("train and test sizes must be >= 1")
        if self.eval_every < 1:
            problems.append(f"eval_every must be >= 1 (got {self.eval_every})")
        if self.evals_per_doubling is not None and self.evals_per_doubling < 1:
            problems.append(f"evals_per_doubling must be >= 1 or None (got {self.evals_per_doubling})")
        if self.cpu_threads is not None and self.cpu_threads < 1:
            problems.append(f"cpu_threads must be >= 1 or None (got {self.cpu_threads})")
        problems += task_problems(self.task, self.seq_len, self.vocab_size)
        if self.positional not in POSITIONAL_KINDS:
            problems.append(f"positional must be one of {', '.join(POSITIONAL_KINDS)} (got {self.positional!r})")
        elif self.positional == "rotary" and (self.d_model // self.num_heads) % 2:
            problems.append(f"rotary positions need an even head width (d_model / heads = "
                            f"{self.d_model // self.num_heads})")
        if not (isinstance(self.attention_dropout, (int, float)) and 0.0 <= self.attention_dropout
                <= MAX_ATTENTION_DROPOUT):
            problems.append(f"attention dropout must be in [0, {MAX_ATTENTION_DROPOUT}] (got {self.attention_dropout})")
        if problems:
            raise ValueError("; ".join(problems))
        resolve_device(self.device)
        return self

    @property
    def sequence_length(self) -> int:
        """Length of one full example: input + SEP + answer (2L + 1); input twice for induction (2L)."""
        return sequence_length(self.task, self.seq_len)

    @property
    def prompt_length(self) -> int:
        """Tokens given before the scored answer (``task_shapes.prompt_length``)."""
        return prompt_length(self.task, self.seq_len)

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.train_size / self.batch_size)

    @property
    def total_steps(self) -> int:
        return self.steps if self.steps is not None else self.epochs * self.steps_per_epoch

    def model_config(self) -> ModelConfig:
        from .model import ModelConfig  # imports torch: only when a model is built

        return ModelConfig(self.vocab_size, self.d_model, self.num_heads, self.num_layers,
                           max_seq_len=self.sequence_length, positional=self.positional,
                           attention_dropout=float(self.attention_dropout))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
