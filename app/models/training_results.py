"""What the Training tab computes on a recorded step's model (try it, ablation) and the texts derived from the
session's state. Plain data and functions: no Qt; torch only inside the functions that run a model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .training_history import Snapshot, TrainingHistory
from .training_tools import TryItResult, greedy_with_attention, model_accuracy, model_from_params, test_data

if TYPE_CHECKING:
    from attention_core.train_config import TrainConfig

Head = tuple[int, int]


@dataclass(frozen=True)
class TryIt:
    """The Try it tab's content: a result at ``step``, or an ``error`` (then ``result`` is None)."""

    text: str
    result: TryItResult | None = None
    step: int | None = None
    error: str = ""

    @property
    def caption(self) -> str:
        return f"model at step {self.step}" if self.step is not None else ""


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


def run_try_it(text: str, tokens: list[int], config: TrainConfig, snap: Snapshot) -> TryIt:
    """Greedy-reverse ``tokens`` with the model of ``snap`` (rebuilt from its parameters)."""
    if snap.params is None:
        return TryIt(text, error=f"the parameters of step {snap.step} were not kept")
    model = model_from_params(config, snap.params)
    return TryIt(text, greedy_with_attention(model, tokens, config.causal), snap.step)


def measure(config: TrainConfig, snap: Snapshot, off: tuple[Head, ...]) -> Measure:
    """Accuracy on the run's test set and the probe's greedy output, with the heads ``off`` switched off."""
    assert snap.params is not None
    model = model_from_params(config, snap.params)
    for li, h in off:
        model.set_head_enabled(li, h, False)
    tok, seq = model_accuracy(model, test_data(config), config.seq_len, config.causal)
    probe_in = list(snap.probe[: config.seq_len])
    out = greedy_with_attention(model, probe_in, config.causal).generated
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


def ablation_status(a: Ablation) -> str:
    names = ", ".join(f"layer {li + 1} head {h + 1}" for li, h in a.off)
    verb = "is" if len(a.off) == 1 else "are"
    return (f"{names[0].upper()}{names[1:]} {verb} switched off (model at step {a.step}): exact-sequence test "
            f"accuracy {a.now_seq:.1%} (all heads: {a.base_seq:.1%}).")


def pace_text(steps_per_second: float | None) -> str:
    return "as fast as possible" if steps_per_second is None else f"at {steps_per_second:g} steps/s"
