"""What an experiment shows, said from its measured results only (never typed in advance): the lines of the
Experiments tab's "What to see" box, and the comparison of the mean head entropy with the report's causal claim.

Every function reads the runs (``ExperimentRun``) and their recorded ``TrainingReport`` histories; nothing here
knows a number that was not measured. Which lines appear follows the options that differ between the runs (so
editing a preset's runs changes the text with them): positions, attention dropout, heads, tasks, the induction
task, the causal mask. Qt-free, torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from attention_core.tiny.experiments import differing_options, first_step_reaching

if TYPE_CHECKING:
    from attention_core.tiny.experiments import ExperimentRun
    from attention_core.tiny.report import TrainingReport

REPORT_CAUSAL_CUT = -0.379
"""The report's claim: causal masking cuts a head's attention entropy by 37.9 % (relative change, causal vs
bidirectional). The app measures its own and says whether this holds."""
HOLDS_WITHIN = 0.05
"""The measured relative change "holds" the report's when within 5 percentage points of it."""
SMOOTH = 5
"""Steps averaged when looking for the fastest fall of the training loss (one batch's loss is noisy)."""

SUDDEN = 0.25
"""A fall counts as sudden when ``SMOOTH`` steps hold at least this share of the run's whole fall of the loss."""

History = Sequence["TrainingReport"]


def last_evaluated(history: History) -> TrainingReport | None:
    return next((r for r in reversed(history) if r.evaluated), None)


def mean_entropy(report: TrainingReport | None) -> float:
    """The mean of a report's per-head attention entropy (nats), NaN when it has none."""
    if report is None or report.head_entropy is None:
        return math.nan
    return float(np.mean(report.head_entropy))


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _signed_pct(x: float, digits: int = 0) -> str:
    return f"{x * 100:+.{digits}f} %".replace("-", "−")


def reach_text(run: ExperimentRun, history: History) -> str:
    """"causal=yes: 99 % at step 27" or "causal=no: not 99 % in 200 steps (84.4 % greedy at the end)"."""
    step = first_step_reaching(history)
    if step is not None:
        return f"{run.name}: 99 % at step {step}"
    last = last_evaluated(history)
    if last is None:
        return f"{run.name}: not evaluated yet"
    return f"{run.name}: not 99 % in {last.step} steps ({_pct(last.sequence_accuracy)} greedy at the end)"


def fastest_loss_drop(history: History, window: int = SMOOTH) -> tuple[int, float, float] | None:
    """(step, loss before, loss after) where the training loss (averaged over ``window`` steps) falls most within
    ``window`` steps; None for a run too short to tell."""
    steps = np.asarray([r.step for r in history if r.step > 0], dtype=float)
    loss = np.asarray([r.loss for r in history if r.step > 0], dtype=float)
    if len(loss) < 3 * window:
        return None
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")  # smooth[i] = mean(loss[i : i + window])
    drop = smooth[:-window] - smooth[window:]  # fall from the window at i to the window at i + window
    i = int(np.argmax(drop))
    return int(steps[i + window]), float(smooth[i]), float(smooth[i + window])


def causal_claim(runs: Sequence[ExperimentRun], histories: Sequence[History]) -> str | None:
    """The report's causal-vs-bidirectional entropy claim, measured: for the first causal and the first bidirectional
    run (when the runs differ in the causal mask), their final mean head entropy and relative change. None
    otherwise (or before both have been evaluated)."""
    if "causal" not in differing_options([r.config for r in runs]):
        return None
    pairs = list(zip(runs, histories, strict=True))
    causal = next((h for r, h in pairs if r.config.causal and h), None)
    bidir = next((h for r, h in pairs if not r.config.causal and h), None)
    if causal is None or bidir is None:
        return None
    c, b = mean_entropy(last_evaluated(causal)), mean_entropy(last_evaluated(bidir))
    if not (math.isfinite(c) and math.isfinite(b)) or b == 0:
        return None
    change = (c - b) / b
    report = _signed_pct(REPORT_CAUSAL_CUT, 1)
    if abs(change - REPORT_CAUSAL_CUT) <= HOLDS_WITHIN:
        verdict = f"the report's {report} holds here (within {HOLDS_WITHIN * 100:.0f} points)"
    else:
        how = "larger" if change < REPORT_CAUSAL_CUT else ("smaller" if change < 0 else "the other way: a rise")
        verdict = f"the report's {report} does not hold here (the change is {how})"
    return (f"causal: mean head entropy {c:.2f} nats vs {b:.2f} bidirectional: {_signed_pct(change)}; "
            f"{verdict}")


def findings(runs: Sequence[ExperimentRun], histories: Sequence[History]) -> list[str]:
    """The "What to see" lines for runs trained so far (``histories[i]`` empty = run ``i`` not trained)."""
    pairs = [(r, h) for r, h in zip(runs, histories, strict=True) if last_evaluated(h) is not None]
    if not pairs:
        return []
    differ = set(differing_options([r.config for r in runs]))
    lines = ["Held-out greedy exact-sequence accuracy: " + "; ".join(reach_text(r, h) for r, h in pairs) + "."]
    if "positional" in differ:
        lines += _positions(pairs)
    if "task" in differ:
        lines.append("Per task, steps to 99 % and the best head's task score (how often its strongest key is where "
                     "the task's ideal pattern says): " + "; ".join(_task_text(r, h) for r, h in pairs) + ".")
    for r, h in pairs:
        if r.config.task == "induction":
            line = _induction_text(r, h)
            if line:
                lines.append(line)
    if differ & {"attention_dropout", "num_heads"}:
        lines.append("Mean head entropy at the end (nats; lower = sharper heads): " + "; ".join(
            f"{r.name}: {mean_entropy(last_evaluated(h)):.2f}" for r, h in pairs) + ".")
    claim = causal_claim(runs, histories)
    if claim is not None:
        lines.append(claim[0].upper() + claim[1:] + ".")
    return lines


def _induction_text(run: ExperimentRun, history: History) -> str:
    """Where the induction run's loss falls fastest, and whether that fall is sudden (at least ``SUDDEN`` of the
    run's whole fall within ``SMOOTH`` steps) or still going on when the run ends."""
    drop = fastest_loss_drop(history)
    if drop is None:
        return ""
    step, before, after = drop
    losses = [r.loss for r in history if r.step > 0]
    smooth = np.convolve(losses, np.ones(SMOOTH) / SMOOTH, mode="valid")
    total = float(smooth[0] - smooth.min())
    fall = f"(the training loss falls fastest there: {before:.2f} → {after:.2f} within {SMOOTH} steps)"
    if step >= history[-1].step - SMOOTH:
        return f"{run.name}: the loss still falls fastest at the end of the run (step {step}): train longer to see " \
               f"the induction head form."
    if total > 0 and before - after >= SUDDEN * total:
        return f"{run.name}: the induction head appears suddenly around step {step} {fall}."
    return f"{run.name}: the loss falls gradually, with no sudden drop; fastest around step {step} {fall}."


def _task_text(run: ExperimentRun, history: History) -> str:
    last = last_evaluated(history)
    best = "–" if last is None or last.head_task_scores is None else f"{float(np.max(last.head_task_scores)):.2f}"
    step = first_step_reaching(history)
    reach = f"step {step}" if step is not None else "not reached"
    return f"{run.config.task}: {reach}, best head {best}"


def _positions(pairs: Sequence[tuple[ExperimentRun, History]]) -> list[str]:
    lines = []
    for r, h in pairs:
        if r.config.positional != "none" or r.config.task != "reversal":
            continue
        last = last_evaluated(h)
        assert last is not None
        step = first_step_reaching(h)
        if step is None:
            lines.append(f"Without positions, reversal stays at {_pct(last.sequence_accuracy)} greedy after "
                         f"{last.step} steps: attention alone cannot tell positions apart (it sees a set of tokens, "
                         f"not a sequence).")
        else:
            lines.append(f"Without positions, reversal still reached 99 % (step {step}): the causal mask lets "
                         f"the model tell positions apart (each query sees a different number of keys)."
                         if r.config.causal else
                         f"Without positions, reversal still reached 99 % (step {step}).")
    return lines
