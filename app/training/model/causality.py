"""The Training tab's causality probe, Qt-free and evented: at the step the grid shows, replace every probe token
after position t by random tokens N times and record each position's largest logit change
(``attention_core.tiny.probe.probe_model_causality``) on the model of that step (its recorded parameters).

With the causal mask every position up to t is unchanged, exactly; a model trained with "no causal mask" reads the
replaced future and its earlier positions change (it leaks). The result always names the step it was taken at, so a
view can tell a current result from one of another step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.common.evented import Evented, ModelEvents, event

if TYPE_CHECKING:
    from app.training.model.session import TrainingSession
    from attention_core.tiny.probe import CausalityProbe

DEFAULT_TRIALS = 8


@dataclass(frozen=True)
class CausalityResult:
    """A probe of the model at ``step`` (snapshot ``index``) on ``labels`` (the positions the model reads)."""

    probe: CausalityProbe
    step: int
    index: int
    labels: tuple[str, ...]

    def explanation(self) -> str:
        """What the numbers mean, in words."""
        p = self.probe
        t = p.position
        before, after = p.max_change_before, p.max_change_after
        if p.causal:
            verdict = (f"With the causal mask no position up to {t} can see what comes after it: their largest change "
                       f"is exactly {before:g}. " if before == 0.0 else
                       f"Unexpected: positions up to {t} changed by {before:.3g} despite the causal mask. ")
        else:
            verdict = (f"This model was trained with no causal mask: positions up to {t} read the replaced future "
                       f"and changed by up to {before:.3g} — the future leaks into them. A model trained this way "
                       f"cheats in training and fails when it must generate one token at a time. ")
        return verdict + (f"Positions after {t} read the replaced tokens themselves (largest change {after:.3g}).")


class CausalityEvents(ModelEvents):
    result = event()  # a new result, or an error, or cleared


class CausalityModel(Evented):
    """Position, trials and the latest result of the probe on the session's shown step."""

    events: CausalityEvents

    def __init__(self, session: TrainingSession) -> None:
        super().__init__()
        self.session = session
        self.position: int | None = None
        self.trials = DEFAULT_TRIALS
        self.result: CausalityResult | None = None
        self.error = ""

    def positions(self) -> int:
        """How many positions the model reads at the shown step (0 without a model)."""
        snap = self.session.shown_snapshot
        return 0 if snap is None else len(snap.probe) - 1

    def default_position(self) -> int:
        """The SEP position L: the first position that predicts a reversed token."""
        snap = self.session.shown_snapshot
        return 0 if snap is None else int(snap.seq_len)

    @property
    def current(self) -> bool:
        """Whether the result belongs to the step shown now."""
        return self.result is not None and self.result.index == self.session.shown_index

    def job(self, position: int | None = None, trials: int | None = None,
            seed: int = 0) -> Callable[[], CausalityResult] | None:
        """The probe of the shown step as a call to make off the GUI thread (it reads only recorded numpy copies
        and builds its own model); None, with ``error`` set and announced, when refused."""
        from app.training.model.tools import model_from_params
        from attention_core.tiny.probe import probe_model_causality

        if position is not None:
            self.position = int(position)
        if trials is not None:
            self.trials = int(trials)
        s = self.session
        snap, cfg, index = s.shown_snapshot, s.model_config, s.shown_index
        try:
            if snap is None or cfg is None:
                raise ValueError("no model yet: press Start (or Step) first")
            if snap.params is None:
                raise ValueError(f"the parameters of step {snap.step} were not kept: nothing to probe")
            t = self.default_position() if self.position is None else self.position
            n = len(snap.probe) - 1
            if not 0 <= t <= n - 2:
                raise ValueError(f"position must be in 0..{n - 2} (something must come after it), got {t}")
            if self.trials < 1:
                raise ValueError(f"trials must be >= 1, got {self.trials}")
        except ValueError as exc:
            self.error = str(exc)
            self._announce("result")
            return None
        self.position = t
        params, probe, causal, trials_n, labels = snap.params, list(snap.probe), snap.causal, self.trials, snap.labels

        def compute() -> CausalityResult:
            model = model_from_params(cfg, params)
            result = probe_model_causality(model, probe, t, causal=causal, trials=trials_n, seed=seed)
            return CausalityResult(result, snap.step, index, tuple(labels))

        return compute

    def accept(self, result: CausalityResult) -> None:
        """A finished probe (from ``job``) becomes the shown result."""
        self.error = ""
        self.result = result
        self._announce("result")

    def fail(self, text: str) -> None:
        self.error = text
        self._announce("result")

    def run(self, position: int | None = None, trials: int | None = None, seed: int = 0) -> bool:
        """``job`` made at once, on this thread (scripts and tests); False when refused."""
        job = self.job(position, trials, seed)
        if job is None:
            return False
        self.accept(job())
        return True
