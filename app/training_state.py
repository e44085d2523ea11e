"""What the training panel remembers, without Qt: recorded snapshots, the playback cursor, comparisons.

Everything here is plain Python/numpy so it can be tested without a display. The torch-backed helpers at the
bottom (try-it generation with attention, ablation accuracy, rebuilding a trainer from a checkpoint) import
``attention_core``'s torch modules lazily: importing this module stays cheap.

Conventions (the same as ``attention_core.analysis``): a probe is one full reversal example
``[x_0 .. x_{L-1}, SEP, x_{L-1} .. x_0]`` of length 2L+1; the model reads all but its last token, so every
attention map is (2L, 2L) with queries as rows and keys as columns. The query at position ``L + p`` predicts the
p-th reversed token, which is the input token at position ``L - 1 - p``: those (query, key) cells form the
"ideal anti-diagonal".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attention_core.metrics import attention_entropy, focus_score
from attention_core.vocab import SEP, token_labels  # noqa: F401  (re-exported for the panel)

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


def mirrored_cells(seq_len: int) -> list[tuple[int, int]]:
    """The ideal anti-diagonal: (query L+p, key L-1-p) for p = 0..L-1 (query predicts reversed token p)."""
    return [(seq_len + p, seq_len - 1 - p) for p in range(seq_len)]


def head_metrics(weights: Sequence[np.ndarray], seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-head (entropy, focus), each (layers, heads), averaged over the L decoder queries only.

    The decoder queries are positions L..2L-1, the ones that predict the reversed tokens; the encoder rows
    are not part of the task and would blur the picture. Entropy is in nats (0 = looks at one key);
    focus is the mean row maximum (1 = one key per query).
    """
    entropy = np.stack([attention_entropy(w[:, seq_len:2 * seq_len, :]).mean(axis=-1) for w in weights])
    focus = np.stack([np.asarray(focus_score(w[:, seq_len:2 * seq_len, :])).reshape(-1) for w in weights])
    return entropy, focus


@dataclass(frozen=True)
class Snapshot:
    """One recorded step: the trainer's report plus the probe it was taken on (the report stores only maps).

    ``probe_weights`` is normally ``report.probe_weights``; it differs only when the learner changed the
    probe after training stopped and the latest maps were recomputed for the new probe.
    """

    report: Any  # attention_core.training.TrainingReport (kept untyped: no torch import here)
    probe: tuple[int, ...]
    probe_weights: list[np.ndarray] = field(repr=False)
    seq_len: int
    causal: bool = True
    entropy: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    focus: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.entropy is None or self.focus is None:
            ent, foc = head_metrics(self.probe_weights, self.seq_len)
            object.__setattr__(self, "entropy", ent)
            object.__setattr__(self, "focus", foc)

    @classmethod
    def from_report(cls, report: Any, probe: Sequence[int], seq_len: int, causal: bool = True) -> Snapshot:
        return cls(report, tuple(int(t) for t in probe), list(report.probe_weights), seq_len, causal)

    @property
    def step(self) -> int:
        return int(self.report.step)

    @property
    def labels(self) -> list[str]:
        """Labels of the positions the model reads (all but the last token of the probe)."""
        return token_labels(self.probe[:-1])

    @property
    def reversal_scores(self) -> np.ndarray:
        return np.asarray(self.report.head_reversal_scores, dtype=float)

    def with_probe(self, probe: Sequence[int], weights: Sequence[np.ndarray]) -> Snapshot:
        """The same step seen through another probe (recomputed maps)."""
        return Snapshot(self.report, tuple(int(t) for t in probe), list(weights), self.seq_len, self.causal)


@dataclass(frozen=True)
class HeadComparison:
    """One head at two steps: reversal score, entropy and focus, before and after."""

    layer: int
    head: int
    reversal_before: float
    reversal_after: float
    entropy_before: float
    entropy_after: float
    focus_before: float
    focus_after: float

    @property
    def entropy_change(self) -> float:
        return self.entropy_after - self.entropy_before

    @property
    def focus_change(self) -> float:
        return self.focus_after - self.focus_before

    @property
    def reversal_change(self) -> float:
        return self.reversal_after - self.reversal_before


class TrainingHistory:
    """Every snapshot of the current run, in step order, with the metric series the plots need.

    Series are kept incrementally, so asking for them at 30 fps costs a list-to-array conversion, not a
    walk over every report.
    """

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._snaps: list[Snapshot] = []
        self._steps: list[int] = []
        self._loss: list[float] = []
        self._train_acc: list[float] = []
        self._eval: dict[str, list[float]] = {k: [] for k in (
            "step", "test_loss", "reversal_accuracy", "sequence_accuracy", "train_sequence_accuracy")}
        self.version = 0  # bumps on every change; views redraw only when it moved

    # --- recording -----------------------------------------------------------------------------------------
    def add(self, snap: Snapshot) -> bool:
        """Append a snapshot; a step already recorded (or older) is ignored. Returns whether it was added."""
        if self._snaps and snap.step <= self._snaps[-1].step:
            return False
        r = snap.report
        self._snaps.append(snap)
        self._steps.append(snap.step)
        self._loss.append(float(r.loss))
        self._train_acc.append(float(r.train_accuracy))
        if r.evaluated:
            self._eval["step"].append(snap.step)
            for key in ("test_loss", "reversal_accuracy", "sequence_accuracy", "train_sequence_accuracy"):
                self._eval[key].append(float(getattr(r, key)))
        self.version += 1
        return True

    def replace_latest(self, snap: Snapshot) -> None:
        """Swap the latest snapshot for the same step seen through another probe."""
        if not self._snaps or snap.step != self._snaps[-1].step:
            raise ValueError("replace_latest: the step must be the latest recorded one")
        self._snaps[-1] = snap
        self.version += 1

    # --- reading -------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._snaps)

    def __getitem__(self, index: int) -> Snapshot:
        return self._snaps[index]

    def __iter__(self) -> Any:
        return iter(self._snaps)

    @property
    def latest(self) -> Snapshot | None:
        return self._snaps[-1] if self._snaps else None

    def index_of_step(self, step: int) -> int:
        """Index of the snapshot recorded at ``step`` (ValueError if that step was not recorded)."""
        import bisect

        i = bisect.bisect_left(self._steps, step)
        if i < len(self._steps) and self._steps[i] == step:
            return i
        raise ValueError(f"step {step} was not recorded")

    def reports(self) -> list[Any]:
        return [s.report for s in self._snaps]

    def series(self) -> dict[str, np.ndarray]:
        """Arrays for the plots: per step (step, loss, train_accuracy) and per evaluation (eval_step, ...)."""
        out = {"step": np.asarray(self._steps, dtype=float), "loss": np.asarray(self._loss, dtype=float),
               "train_accuracy": np.asarray(self._train_acc, dtype=float)}
        for key, values in self._eval.items():
            out["eval_step" if key == "step" else key] = np.asarray(values, dtype=float)
        return out

    def head_series(self, kind: str, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(steps (n,), values (n, layers, heads)) of "reversal", "entropy" or "focus" up to index ``upto``."""
        snaps = self._snaps if upto is None else self._snaps[: upto + 1]
        if not snaps:
            return np.zeros(0), np.zeros((0, 0, 0))
        if kind == "reversal":
            vals = [s.reversal_scores for s in snaps]
        elif kind in ("entropy", "focus"):
            vals = [getattr(s, kind) for s in snaps]
        else:
            raise ValueError(f"kind must be 'reversal', 'entropy' or 'focus', got {kind!r}")
        return np.asarray([s.step for s in snaps], dtype=float), np.stack(vals)

    def first_step_reaching(self, threshold: float, metric: str = "sequence_accuracy") -> int | None:
        """The first evaluated step whose ``metric`` is >= threshold (None if never)."""
        for step, value in zip(self._eval["step"], self._eval[metric]):
            if value >= threshold:
                return int(step)
        return None

    def compare(self, before: int, after: int) -> list[HeadComparison]:
        """Per head, snapshot index ``before`` against index ``after`` (e.g. 0 = untrained vs the cursor)."""
        a, b = self._snaps[before], self._snaps[after]
        rows = []
        layers, heads = b.entropy.shape
        for li in range(layers):
            for h in range(heads):
                rows.append(HeadComparison(
                    li, h, float(a.reversal_scores[li, h]), float(b.reversal_scores[li, h]),
                    float(a.entropy[li, h]), float(b.entropy[li, h]), float(a.focus[li, h]),
                    float(b.focus[li, h])))
        return rows


class PlaybackCursor:
    """Which snapshot the views show: the latest one (live), a fixed one (scrubbed), or a replay in motion.

    ``speed`` is in steps per second; None replays at the pace the run was recorded (its wall clock).
    Time is passed in (seconds, any monotonic origin) so the logic is testable without sleeping.
    """

    def __init__(self) -> None:
        self.follow_live = True
        self.index = 0
        self.length = 0
        self.speed: float | None = 5.0
        self.playing = False
        self._play_origin_time = 0.0
        self._play_origin_pos = 0.0

    def set_length(self, length: int) -> None:
        self.length = max(0, int(length))
        if self.follow_live:
            self.index = max(0, self.length - 1)
        self.index = min(self.index, max(0, self.length - 1))

    def seek(self, index: int) -> None:
        """Show snapshot ``index``; stops following the live run (and any replay)."""
        self.follow_live = False
        self.playing = False
        self.index = int(min(max(index, 0), max(0, self.length - 1)))

    def go_live(self) -> None:
        self.follow_live = True
        self.playing = False
        self.index = max(0, self.length - 1)

    def play(self, now: float, history: TrainingHistory | None = None) -> None:
        """Start replaying from the current index (from the start if already at the end)."""
        if self.length == 0:
            return
        if self.index >= self.length - 1:
            self.index = 0
        self.follow_live = False
        self.playing = True
        self._play_origin_time = now
        self._play_origin_pos = self._position(self.index, history)

    def stop_playing(self) -> None:
        self.playing = False

    def set_speed(self, speed: float | None, now: float, history: TrainingHistory | None = None) -> None:
        self.speed = speed
        if self.playing:  # re-anchor so the change takes effect from here
            self._play_origin_time = now
            self._play_origin_pos = self._position(self.index, history)

    def _position(self, index: int, history: TrainingHistory | None) -> float:
        if self.speed is None and history is not None and len(history):
            return float(history[index].report.wall_seconds)
        return float(index)

    def tick(self, now: float, history: TrainingHistory | None = None) -> int:
        """Advance a running replay to ``now`` and return the index to show."""
        if self.follow_live:
            self.index = max(0, self.length - 1)
        elif self.playing and self.length:
            elapsed = max(0.0, now - self._play_origin_time)
            if self.speed is None and history is not None and len(history):
                target_t = self._play_origin_pos + elapsed
                idx = self.index
                while idx + 1 < self.length and history[idx + 1].report.wall_seconds <= target_t:
                    idx += 1
                self.index = idx
            else:
                speed = self.speed if self.speed is not None else 30.0
                self.index = min(self.length - 1, int(math.floor(self._play_origin_pos + elapsed * speed)))
            if self.index >= self.length - 1:
                self.playing = False
        return self.index


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


def parse_tokens(text: str, seq_len: int, vocab_size: int) -> list[int]:
    """Tokens typed by the learner ("3 7 2", "3,7,2") -> ints; ValueError with a readable reason."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        tokens = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"type {seq_len} whole numbers separated by spaces, e.g. "
                         f"{' '.join(str(2 + i % (vocab_size - 2)) for i in range(seq_len))}") from None
    if len(tokens) != seq_len:
        raise ValueError(f"the model reverses sequences of exactly {seq_len} tokens (got {len(tokens)})")
    bad = [t for t in tokens if not 2 <= t < vocab_size]
    if bad:
        raise ValueError(f"tokens must be in 2..{vocab_size - 1} (0 = PAD and 1 = SEP are reserved); "
                         f"got {bad}")
    return tokens


# --- torch-backed helpers (lazy imports) ------------------------------------------------------------------
@dataclass(frozen=True)
class TryItResult:
    """Greedy reversal of one input, with the attention each output step used.

    ``step_weights[p]``: per layer (H, L+1+p) — the attention row of the last query when the model produced
    output token p (that query sits at position L+p). ``sequence`` = inputs + SEP + generated.
    """

    inputs: tuple[int, ...]
    generated: tuple[int, ...]
    step_weights: list[list[np.ndarray]] = field(repr=False)

    @property
    def expected(self) -> tuple[int, ...]:
        return tuple(reversed(self.inputs))

    @property
    def correct(self) -> list[bool]:
        return [g == e for g, e in zip(self.generated, self.expected)]

    @property
    def sequence(self) -> tuple[int, ...]:
        return (*self.inputs, 1, *self.generated)

    def matrix(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """(weights (L, 2L), blocked (L, 2L)): row p = what output step p attended to; keys it could not
        see yet (not generated) are blocked."""
        L = len(self.inputs)
        vals = np.zeros((L, 2 * L))
        blocked = np.ones((L, 2 * L), dtype=bool)
        for p, per_layer in enumerate(self.step_weights):
            row = per_layer[layer][head]
            vals[p, : row.shape[0]] = row
            blocked[p, : row.shape[0]] = False
        return vals, blocked


def greedy_with_attention(model: Any, inputs: Sequence[int], causal: bool = True) -> TryItResult:
    """Greedy generation like ``attention_core.analysis.greedy_reverse`` for one input, recording at every
    step the attention row of the query that produced the new token. Cheap (L tiny forward passes)."""
    import torch

    from attention_core.masks import causal_mask

    dev = next(model.parameters()).device
    seq = [int(t) for t in inputs] + [SEP]
    weights_per_step: list[list[np.ndarray]] = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(len(inputs)):
                x = torch.tensor([seq], dtype=torch.long, device=dev)
                mask = torch.as_tensor(causal_mask(len(seq)), device=dev) if causal else None
                logits, weights = model(x, mask)
                seq.append(int(logits[0, -1].argmax()))
                weights_per_step.append([w[0, :, -1, :].double().cpu().numpy() for w in weights])
    finally:
        model.train(was_training)
    return TryItResult(tuple(int(t) for t in inputs), tuple(seq[len(inputs) + 1:]), weights_per_step)


def model_accuracy(model: Any, data: Any, seq_len: int, causal: bool = True) -> tuple[float, float]:
    """(teacher-forced per-token accuracy, greedy exact-sequence accuracy) on ``data`` — ~80 ms on 500."""
    from attention_core.analysis import reversal_accuracy, sequence_accuracy

    was_training = model.training
    model.eval()
    try:
        return (reversal_accuracy(model, data, seq_len, causal), sequence_accuracy(model, data, seq_len, causal))
    finally:
        model.train(was_training)


def trainer_from_checkpoint(model: Any, meta: dict[str, Any]) -> Any:
    """A ReversalTrainer that continues from a loaded model: the run's config comes from the checkpoint's
    ``extra["train_config"]`` (or defaults fitted to the model), history[0] is that seed's untrained start
    (same seed = same initialisation) and history[1] is the loaded model at its recorded step."""
    from dataclasses import replace

    from attention_core.training import ReversalTrainer, TrainConfig, TrainingReport

    extra = meta.get("extra") or {}
    mc = model.config
    cfg_dict = dict(extra.get("train_config") or {})
    cfg_dict.update({"vocab_size": mc.vocab_size, "d_model": mc.d_model, "num_heads": mc.num_heads,
                     "num_layers": mc.num_layers})
    if "seq_len" not in cfg_dict:
        cfg_dict["seq_len"] = (mc.max_seq_len - 1) // 2
    try:  # a model trained on a GPU this machine lacks continues on the CPU
        from attention_core.devices import resolve_device

        cfg_dict["device"] = resolve_device(cfg_dict.get("device", "cpu"))
    except ValueError:
        cfg_dict["device"] = "cpu"
    config = TrainConfig.from_dict(cfg_dict)
    if config.sequence_length > mc.max_seq_len:
        raise ValueError(f"the checkpoint's model reads at most {mc.max_seq_len} positions, but its training "
                         f"config needs {config.sequence_length}")
    trainer = ReversalTrainer(config)
    trainer.model.load_state_dict(model.state_dict())
    step = int(extra.get("step", 0) or 0)
    step = max(step, 1)
    if step >= config.total_steps:  # leave room to continue training: one more epoch
        config = replace(config, steps=step + config.steps_per_epoch)
        trainer.config = config
    trainer.step_count = step
    base = trainer.history[0]
    evaluation = trainer.evaluate()
    from attention_core.analysis import probe_attention

    report = TrainingReport(step=step, total_steps=trainer.total_steps, epoch=step / config.steps_per_epoch,
                            loss=float("nan"), train_accuracy=float("nan"), evaluated=True,
                            probe_weights=probe_attention(trainer.model, trainer.probe, config.causal),
                            seconds=0.0, wall_seconds=0.0, **evaluation)
    trainer.history = [replace(base, total_steps=trainer.total_steps), report]
    return trainer
