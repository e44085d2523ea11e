"""``RecordedTools``: the part of a ``TrainingSession`` that acts on a recorded step: the probe's tokens, Try it and
the heads switched off, each with its result.

Each acts on the *shown* step's recorded parameters, never on the model that is training, and its result says
which step it used. This part holds those tools' state and computes their results; it announces nothing (the
session does, once its change is complete) and reads the shown step through the narrow ``ShownStep``. Qt-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from app.training.model.results import Ablation, Head, TryIt, ablation_at, run_try_it
from app.training.model.tools import parse_tokens

if TYPE_CHECKING:
    from app.training.model.history import Snapshot, TrainingHistory
    from attention_core.tiny.config import TrainConfig

TRY_INTERVAL_S = 0.5
"""While training runs, Try it is recomputed for the live step at most this often (seconds)."""


class ShownStep(Protocol):
    """What the tools read of their session: the recorded steps, the one shown and the model's settings."""

    history: TrainingHistory

    @property
    def model_config(self) -> TrainConfig | None: ...

    @property
    def shown_index(self) -> int: ...

    @property
    def shown_snapshot(self) -> Snapshot | None: ...


class RecordedTools:
    """The probe, Try it and ablation of one session (see the module docstring)."""

    def __init__(self, shown: ShownStep) -> None:
        self._shown = shown
        self.probe: tuple[int, ...] | None = None
        """The L input tokens whose attention the grid maps (None until a model chose them)."""
        self.probe_error = ""
        self.ablated: tuple[Head, ...] = ()
        self.ablation: Ablation | None = None
        self.try_it: TryIt | None = None
        self._try_at = 0.0

    def reset(self) -> None:
        """A new model: nothing tried, every head on."""
        self.ablated, self.ablation, self.try_it = (), None, None

    # ================================================================== at the shown step
    def follow_shown(self) -> None:
        """Ablation and Try it follow the shown step."""
        self.recompute_ablation()
        self.refresh_try_it()

    def recompute_ablation(self) -> None:
        s = self._shown
        cfg = s.model_config
        self.ablation = None if cfg is None or not len(s.history) else ablation_at(s.history, s.shown_index, cfg,
                                                                                     self.ablated)

    def refresh_try_it(self) -> None:
        t, cfg, snap = self.try_it, self._shown.model_config, self._shown.shown_snapshot
        if t is None or t.error or cfg is None or snap is None:
            return
        tokens = list(t.result.inputs) if t.result is not None else []
        self.try_it = run_try_it(t.text, tokens, cfg, snap, self.ablated) if tokens else t

    def clear_ablation(self) -> None:
        """Every head back on (the ablation of the shown step without any head off)."""
        self.ablated = ()
        self.recompute_ablation()

    def ablation_live(self) -> None:
        """While training runs, the live step's accuracies with every head on (nothing switched off)."""
        s = self._shown
        cfg = s.model_config
        assert cfg is not None
        self.ablation = ablation_at(s.history, s.shown_index, cfg, ())

    # ================================================================== the commands' checks and results
    def parse_probe(self, text: str, building: bool) -> list[int] | None:
        """The probe's tokens typed as ``text`` for the model's settings; None (and ``probe_error`` says why) when
        refused."""
        cfg = self._shown.model_config
        assert cfg is not None
        if building:  # the model being built may have another shape than ``cfg``: a probe handed to it that
            # does not fit would end its run with an error
            self.probe_error = "The model is still being built: set the probe once it is shown."
            return None
        try:
            tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size, cfg.task)
        except ValueError as exc:
            self.probe_error = str(exc)
            return None
        self.probe, self.probe_error = tuple(tokens), ""
        return tokens

    def try_sequence(self, text: str, has_model: bool) -> TryIt:
        """The model's greedy answer to the typed tokens at the shown step; a refused text is an error result."""
        cfg, snap = self._shown.model_config, self._shown.shown_snapshot
        if cfg is None or snap is None or not has_model:
            self.try_it = TryIt(text, error="No model yet: press Start (or Step, or Load a model) first.")
        else:
            try:
                tokens = parse_tokens(text, cfg.seq_len, cfg.vocab_size, cfg.task)
            except ValueError as exc:
                self.try_it = TryIt(text, error=str(exc))
            else:
                self.try_it = run_try_it(text, tokens, cfg, snap, self.ablated)
        return self.try_it

    def live_try_due(self, now: float, running: bool, shown_step: int | None) -> bool:
        """While training runs, whether Try it should be recomputed for the live step now (at most every
        ``TRY_INTERVAL_S``); when it is, it is."""
        t = self.try_it
        if (running and t is not None and t.result is not None and t.step != shown_step
                and now - self._try_at >= TRY_INTERVAL_S):
            self._try_at = now
            self.refresh_try_it()
            return True
        return False

    def toggle_head(self, layer: int, head: int) -> str:
        """Switch one head off (or back on) at the shown step and measure; "" or why it was refused."""
        cfg = self._shown.model_config
        if self._shown.shown_snapshot is None or cfg is None:
            return "No model yet: Start, Step or Load first."
        if not (0 <= layer < cfg.num_layers and 0 <= head < cfg.num_heads):
            return (f"No head {layer + 1}.{head + 1}: this model has {cfg.num_layers} layers of "
                    f"{cfg.num_heads} heads.")
        self.ablated = tuple(sorted(set(self.ablated) ^ {(layer, head)}))
        self.follow_shown()
        return ""

    def restore_heads(self) -> None:
        self.clear_ablation()
        self.refresh_try_it()
