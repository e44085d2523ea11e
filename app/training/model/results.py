"""What the Training tab computes on a recorded step's model (try it, ablation), always on a copy rebuilt from that
step's parameters, never on the model that is training. Plain data and functions: no Qt; torch only inside the
functions that run a model. (The texts about them live in ``status``.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.training.model.history import Snapshot, TrainingHistory
from app.training.model.tools import TryItResult, greedy_with_attention, model_accuracy, model_from_params, test_data

if TYPE_CHECKING:
    from attention_core.tiny.config import TrainConfig

Head = tuple[int, int]


@dataclass(frozen=True)
class TryIt:
    """The Try it tab's content: a result of the model at ``step`` with the heads ``off`` switched off, or an
    ``error`` (then ``result`` is None)."""

    text: str
    result: TryItResult | None = None
    step: int | None = None
    error: str = ""
    off: tuple[Head, ...] = ()

    @property
    def caption(self) -> str:
        if self.step is None:
            return ""
        heads = ", ".join(f"layer {li + 1} head {h + 1}" for li, h in self.off)
        return f"model at step {self.step}" + (f" with {heads} switched off" if heads else "")


@dataclass(frozen=True)
class Ablation:
    """Heads switched off at ``step`` and what that does; with no head off, the step's own accuracy (``now_*`` =
    ``base_*``; ``evaluated_at`` says which evaluation the figures come from)."""

    step: int
    off: tuple[Head, ...] = ()
    base_seq: float = float("nan")
    base_tok: float = float("nan")
    now_seq: float = float("nan")
    now_tok: float = float("nan")
    probe_in: tuple[int, ...] = ()
    probe_base: tuple[int, ...] = ()
    probe_now: tuple[int, ...] = ()
    evaluated_at: int | None = None

    @property
    def caption(self) -> str:
        return f"model at step {self.step}"


@dataclass(frozen=True)
class Measure:
    tok: float
    seq: float
    probe_out: tuple[int, ...]


def run_try_it(text: str, tokens: list[int], config: TrainConfig, snap: Snapshot, off: tuple[Head, ...] = ()
               ) -> TryIt:
    """Greedy answer of ``config.task`` for ``tokens`` with the model of ``snap`` (rebuilt from its parameters), the
    heads ``off`` switched off (what the Ablate tab measures is what Try it shows)."""
    if snap.params is None:
        return TryIt(text, error=f"the parameters of step {snap.step} were not kept")
    model = model_from_params(config, snap.params)
    for li, h in off:
        model.set_head_enabled(li, h, False)
    return TryIt(text, greedy_with_attention(model, tokens, config.causal, config.task), snap.step, off=tuple(off))


def measure(config: TrainConfig, snap: Snapshot, off: tuple[Head, ...]) -> Measure:
    """Accuracy on the run's test set and the probe's greedy output, with the heads ``off`` switched off."""
    assert snap.params is not None
    model = model_from_params(config, snap.params)
    for li, h in off:
        model.set_head_enabled(li, h, False)
    tok, seq = model_accuracy(model, test_data(config), config.seq_len, config.causal, config.task)
    probe_in = list(snap.probe[: config.seq_len])
    out = greedy_with_attention(model, probe_in, config.causal, config.task).generated
    return Measure(tok, seq, tuple(out))


def ablation_at(history: TrainingHistory, index: int, config: TrainConfig, off: tuple[Head, ...]) -> Ablation:
    """The Ablate tab's content for snapshot ``index`` (measured only when some head is off)."""
    snap = history[index]
    if not off or snap.params is None:
        r = snap.report
        return Ablation(snap.step, (), r.sequence_accuracy, r.reversal_accuracy, r.sequence_accuracy,
                        r.reversal_accuracy, evaluated_at=history.evaluated_at(index))
    base, now = measure(config, snap, ()), measure(config, snap, off)
    return Ablation(snap.step, off, base.seq, base.tok, now.seq, now.tok, tuple(snap.probe[: config.seq_len]),
                    base.probe_out, now.probe_out, evaluated_at=snap.step)
