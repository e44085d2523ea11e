"""A steppable, seeded training loop for the reversal task that knows nothing of any GUI.

Drive it one batch at a time (``ReversalTrainer.step``), as a generator (``reports``) or to the end
(``run`` / ``train_reversal``) with a callback; a ``TrainingControl`` pauses and stops it from another thread.
Every report carries the metrics and the probe sequence's attention maps at that step (a snapshot).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..devices import resolve_device
from ..masks import causal_mask
from . import optim
from .analysis import probe_attention
from .config import TrainConfig
from .control import TrainingControl
from .evaluation import evaluate_task, evaluate_task_reference, evaluation_due
from .model import TinyTransformer
from .report import TrainingReport
from .tasks import generate_task_data, make_task_example


class ReversalTrainer:
    """Owns model, optimiser and data for one seeded run of ``config.task`` (reversal by default; every task of
    ``tasks.TASKS`` trains the same way). Same config = same initialisation and batches."""

    def __init__(self, config: TrainConfig | None = None, probe: Sequence[int] | torch.Tensor | None = None
                 ) -> None:
        self.config = (config or TrainConfig()).validate()
        cfg = self.config
        self.device = torch.device(resolve_device(cfg.device))
        if self.device.type == "cpu" and cfg.cpu_threads:
            torch.set_num_threads(cfg.cpu_threads)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.model = TinyTransformer.from_config(cfg.model_config()).to(self.device)
        self.optimizer = optim.adam(self.model.parameters(), lr=cfg.lr)  # no torch._dynamo import (optim.py)
        self.train_data = generate_task_data(cfg.task, cfg.train_size, cfg.seq_len, cfg.vocab_size,
                                             seed=cfg.seed * 2 + 1).to(self.device)
        self.test_data = generate_task_data(cfg.task, cfg.test_size, cfg.seq_len, cfg.vocab_size,
                                            seed=cfg.seed * 2 + 2).to(self.device)
        self._batch_gen = torch.Generator().manual_seed(cfg.seed + 12345)
        self._order = torch.empty(0, dtype=torch.long)
        self._cursor = 0
        self._mask = (torch.as_tensor(causal_mask(cfg.sequence_length - 1), device=self.device)
                      if cfg.causal else None)
        self.step_count = 0
        self.batch_sequence_accuracy = float("nan")  # the last training batch's, see train_step
        self._last_eval_step = 0
        self._unreported: tuple[float, float] | None = None  # a trained step whose report failed (see step)
        self.train_seconds = 0.0
        self._wall_start: float | None = None
        self.probe = self.test_data[0].cpu()
        if probe is not None:
            self.set_probe(probe)
        self.history: list[TrainingReport] = []
        self._last_eval: dict[str, Any] = {}
        self.history.append(self._report(loss=float("nan"), train_accuracy=float("nan"), evaluate=True))

    # --- data -------------------------------------------------------------------------------------------
    def set_probe(self, tokens: Sequence[int] | torch.Tensor) -> None:
        """Probe = the sequence whose attention maps are recorded; give the L input tokens or a full sequence
        (``config.sequence_length`` tokens; only its first L are read)."""
        t = torch.as_tensor(tokens, dtype=torch.long).reshape(-1)
        cfg = self.config
        L = cfg.seq_len
        distinct = " distinct" if cfg.task == "induction" else ""
        if t.numel() not in (L, cfg.sequence_length) or bool((t[:L] < 2).any()) or bool(
                (t >= cfg.vocab_size).any()):
            raise ValueError(f"probe: give {L}{distinct} tokens in [2, {cfg.vocab_size - 1}] (got {t.tolist()})")
        try:
            self.probe = make_task_example(cfg.task, t[:L])
        except ValueError as exc:
            raise ValueError(f"probe: {exc}") from None

    def _next_batch(self) -> torch.Tensor:
        n, bs = self.config.train_size, self.config.batch_size
        if self._cursor >= len(self._order):
            self._order = torch.randperm(n, generator=self._batch_gen)
            self._cursor = 0
        idx = self._order[self._cursor:self._cursor + bs]
        self._cursor += bs
        return self.train_data[idx.to(self.device)]

    # --- training -----------------------------------------------------------------------------------------
    @property
    def total_steps(self) -> int:
        return self.config.total_steps

    @property
    def finished(self) -> bool:
        return self.step_count >= self.total_steps

    def train_step(self) -> tuple[float, float]:
        """One optimiser step on one batch; returns (loss, per-token accuracy on that batch)."""
        first = self.config.prompt_length - 1  # the first query that predicts an answer token
        self.model.train()
        batch = self._next_batch()
        x, y = batch[:, :-1], batch[:, 1:]
        logits, _ = self.model(x, self._mask)
        rev_logits, rev_targets = logits[:, first:, :], y[:, first:]
        loss = F.cross_entropy(rev_logits.reshape(-1, rev_logits.shape[-1]), rev_targets.reshape(-1))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optim.step(self.optimizer)
        hits = rev_logits.argmax(-1) == rev_targets
        acc = hits.float().mean()
        # teacher-forced, every token right: for a causal model that is the greedy exact-sequence accuracy on this
        # batch (see ``evaluation``); the evaluation schedule reads it (``evaluation_due``)
        self.batch_sequence_accuracy = float(hits.all(dim=1).float().mean())
        self.step_count += 1
        return float(loss.detach()), float(acc)

    @torch.no_grad()
    def evaluate(self) -> dict[str, Any]:
        """Test loss, teacher-forced and greedy test accuracy, greedy accuracy on a fixed train subset, and
        the per-head reversal scores (on the first 100 test sequences, ``alignment="predict"``).

        Computed by ``evaluation.evaluate_reversal``: one teacher-forced pass serves every figure, and the greedy
        exact-sequence accuracy keeps its definition (``evaluate_reference`` decodes token by token)."""
        cfg = self.config
        return evaluate_task(self.model, cfg.task, self.test_data, self.train_data[: cfg.train_eval_size],
                             cfg.seq_len, cfg.causal)

    def evaluate_reference(self) -> dict[str, Any]:
        """``evaluate``'s figures computed the slow, literal way (``evaluation.evaluate_reversal_reference``: every
        test and train-subset sequence decoded one token at a time); the tests and the benchmark compare the two."""
        cfg = self.config
        return evaluate_task_reference(self.model, cfg.task, self.test_data,
                                       self.train_data[: cfg.train_eval_size], cfg.seq_len, cfg.causal)

    def _report(self, loss: float, train_accuracy: float, evaluate: bool) -> TrainingReport:
        if evaluate:
            self._last_eval = self.evaluate()
            self._last_eval_step = self.step_count
        self.model.eval()
        probe = probe_attention(self.model, self.probe, self.config.causal)
        wall = 0.0 if self._wall_start is None else time.perf_counter() - self._wall_start
        return TrainingReport(
            step=self.step_count, total_steps=self.total_steps,
            epoch=self.step_count / self.config.steps_per_epoch, loss=loss, train_accuracy=train_accuracy,
            evaluated=evaluate, probe_weights=probe, seconds=self.train_seconds, wall_seconds=wall,
            **self._last_eval,
        )

    def step(self) -> TrainingReport:
        """Train one batch, evaluate if due (and always at the last step), snapshot the probe.

        Safe to call again after it raised (a GPU out of memory, say, then ``move_to("cpu")``): a failed batch
        is drawn again, and a step whose optimiser update succeeded but whose report failed is reported, not
        trained twice. So a run that falls back to the CPU records the same steps as one that never failed."""
        if self._wall_start is None:
            self._wall_start = time.perf_counter()
        if self._unreported is None:
            t0 = time.perf_counter()
            cursor, order = self._cursor, self._order
            try:
                self._unreported = self.train_step()
            except BaseException:
                self._cursor, self._order = cursor, order  # the same batch next time
                raise
            self.train_seconds += time.perf_counter() - t0
        loss, acc = self._unreported
        cfg = self.config
        due = evaluation_due(self.step_count, cfg.total_steps, cfg.eval_every, cfg.evals_per_doubling,
                             since_last=self.step_count - self._last_eval_step,
                             batch_accuracy=self.batch_sequence_accuracy if cfg.causal else None,
                             last_accuracy=self._last_eval.get("sequence_accuracy"))
        report = self._report(loss, acc, evaluate=due)
        self._unreported = None
        self.history.append(report)
        return report

    def move_to(self, device: str | torch.device) -> None:
        """Move the model, its optimiser state and the data to ``device`` and go on training there (the app falls
        back to the CPU this way when a GPU fails mid-run). ``config.device`` follows."""
        dev = torch.device(resolve_device(device))
        self.model.to(dev)  # in place: the optimiser keeps the same parameter objects
        for state in self.optimizer.state.values():
            for key, value in state.items():
                if torch.is_tensor(value) and not (key == "step" and dev.type != "cpu"):
                    state[key] = value.to(dev)
        self.train_data, self.test_data = self.train_data.to(dev), self.test_data.to(dev)
        if self._mask is not None:
            self._mask = self._mask.to(dev)
        self.device = dev
        self.config = replace(self.config, device=str(dev))

    def reports(self, control: TrainingControl | None = None) -> Iterator[TrainingReport]:
        """Yield a report per step until the run ends or ``control`` stops it (pausing blocks here)."""
        while not self.finished:
            if control is not None and not control.wait_for_turn(self):
                return
            yield self.step()

    def run(self, callback: Callable[[TrainingReport], Any] | None = None,
            control: TrainingControl | None = None,
            stop_at_sequence_accuracy: float | None = None) -> TrainingReport:
        """Train to the end (or until stopped, or until greedy test accuracy reaches the given fraction)."""
        last = self.history[-1]
        for report in self.reports(control):
            last = report
            if callback is not None:
                callback(report)
            if (stop_at_sequence_accuracy is not None and report.evaluated
                    and report.sequence_accuracy >= stop_at_sequence_accuracy):
                break
        return last

    def summary(self) -> dict[str, Any]:
        """The figures the CLI prints (JSON-ready)."""
        last = self.history[-1]
        if not last.evaluated:
            last = replace(last, **self.evaluate())
        return {
            "epochs": last.epoch, "steps": last.step, "loss": last.loss,
            "reversal_accuracy": last.reversal_accuracy, "sequence_accuracy": last.sequence_accuracy,
            "task": self.config.task, "positional": self.config.positional,
            "attention_dropout": self.config.attention_dropout, "causal": self.config.causal,
            "head_reversal_scores": np.round(last.head_reversal_scores, 4).tolist(),
            "head_task_scores": _rounded(last.head_task_scores),
            "head_entropy": _rounded(last.head_entropy),
            "seconds": round(last.seconds, 4), "wall_seconds": round(last.wall_seconds, 4),
            "device": str(self.device), "seed": self.config.seed,
        }


def _rounded(values: np.ndarray | None) -> list[Any] | None:
    return None if values is None else np.round(values, 4).tolist()


TaskTrainer = ReversalTrainer
"""The trainer of every task (``config.task``); ``ReversalTrainer`` is its historical name."""


def train_task(config: TrainConfig | None = None, callback: Callable[[TrainingReport], Any] | None = None,
               control: TrainingControl | None = None) -> ReversalTrainer:
    """Build a trainer for ``config.task``, run it to the end, return it (``trainer.history`` holds every
    report)."""
    return train_reversal(config, callback, control)


def train_reversal(config: TrainConfig | None = None, callback: Callable[[TrainingReport], Any] | None = None,
                   control: TrainingControl | None = None) -> ReversalTrainer:
    """Build a trainer, run it to the end, return it (``trainer.history`` holds every report)."""
    trainer = ReversalTrainer(config)
    trainer.run(callback, control)
    return trainer
