"""The Training tab's texts (the status line and the ETA line) as pure functions of explicit arguments.

Which sentence the learner reads in which state is a decision of its own, and the session recomputes it on every
change: kept here, apart from the session's state and commands, it can be read in one place and tested with plain
values, without building a session or running a model. No Qt, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.training.model.tools import eta_seconds, format_eta

if TYPE_CHECKING:
    from app.training.model.history import Snapshot
    from app.training.model.results import Ablation
    from attention_core.tiny.config import TrainConfig

GOAL_TEXT = "≥ 99 % exact-sequence"

NO_POSITIONS_WHY = (
    "Without positions attention is permutation-equivariant: it cannot tell positions apart. Reversal and copy "
    "need to know where each input sits; sort and induction can follow the tokens' content.")
"""Why positional = none matters, said next to the form's Positions choice (the run's measured outcome is said
in the status line, ``positions_outcome``)."""


def chance_accuracy(config: TrainConfig) -> float:
    """Exact-sequence accuracy of guessing each answer token among the vocabulary's real tokens."""
    from attention_core.tiny.tasks import answer_length

    return float((1.0 / max(config.vocab_size - 2, 1)) ** answer_length(config.task, config.seq_len))


def positions_outcome(config: TrainConfig | None, latest: Snapshot | None) -> str:
    """For a run without positions: its measured greedy exact-sequence accuracy against guessing, and what that
    says ("" for a run with positions, or before any step)."""
    if config is None or config.positional != "none" or latest is None:
        return ""
    acc, chance = float(latest.report.sequence_accuracy), chance_accuracy(config)
    text = (f"Without positions the {config.task} model's greedy exact-sequence test accuracy is {acc:.1%} "
            f"(guessing: {chance:.2g}).")
    if acc < 0.05:
        return text + " It cannot tell positions apart: attention without positions is permutation-equivariant."
    if acc >= 0.99:
        return text + " This task is solved from the tokens' content alone: it does not need positions."
    return text + " Partly learned: some of the answer follows from content, the rest needs positions."


def pace_text(steps_per_second: float | None) -> str:
    return "as fast as possible" if steps_per_second is None else f"at {steps_per_second:g} steps/s"


def ablation_status(a: Ablation) -> str:
    """What switching the heads ``a.off`` off did to the model at ``a.step``."""
    names = ", ".join(f"layer {li + 1} head {h + 1}" for li, h in a.off)
    verb = "is" if len(a.off) == 1 else "are"
    return (f"{names[0].upper()}{names[1:]} {verb} switched off (model at step {a.step}): exact-sequence test "
            f"accuracy {a.now_seq:.1%} (all heads: {a.base_seq:.1%}).")


def derive_status(run_state: str, latest: Snapshot | None, *, notice: tuple[str, bool] | None = None,
                  ablation: Ablation | None = None, last_error: str = "", loaded_from: str = "",
                  history_note: str = "", speed: float | None = None, started: bool = False,
                  device_note: str = "", config: TrainConfig | None = None) -> tuple[str, bool]:
    """(status line, is it an error) for a session in ``run_state`` whose newest recorded step is ``latest``.

    ``notice``: a one-off message that wins until the next change; ``ablation``: what the shown step's model does
    with some heads switched off (it wins over the run's state while any head is off); ``started``: whether Start
    was pressed since the model was built (an untrained, unstarted model gets the introduction); ``device_note``:
    the GPU failed and the run went on on the CPU (said first, for the rest of the run); ``config``: the run's
    settings (a finished or stopped run without positions says what it reached, ``positions_outcome``)."""
    text, error = _state_status(run_state, latest, notice, ablation, last_error, loaded_from, history_note, speed,
                                started)
    if notice is None and not (ablation is not None and ablation.off) and run_state in ("finished", "stopped"):
        outcome = positions_outcome(config, latest)
        text = f"{text} {outcome}" if outcome else text
    return (f"⚠ {device_note} {text}", error) if device_note else (text, error)


def _state_status(run_state: str, latest: Snapshot | None, notice: tuple[str, bool] | None,
                  ablation: Ablation | None, last_error: str, loaded_from: str, history_note: str,
                  speed: float | None, started: bool) -> tuple[str, bool]:
    if notice is not None:
        return notice
    if ablation is not None and ablation.off:
        return ablation_status(ablation), False
    step = latest.step if latest is not None else 0
    if run_state == "error":
        lines = last_error.strip().splitlines()
        return f"Training failed: {lines[-1] if lines else 'unknown error'}", True
    if run_state == "empty":
        return "Ready. Start trains the model at a watchable speed.", False
    if run_state == "building":
        return ("Loading the model…" if loaded_from else "Building the model and data…"), False
    if run_state == "running":
        return f"Training {pace_text(speed)}… Pause, Step or Stop any time; every step is recorded.", False
    if run_state == "loaded":
        note = history_note or "Its recorded history came with it."
        return f"Loaded {loaded_from} (step {step}). {note} Start continues training.", False
    if run_state == "paused":
        if step == 0 and not started:
            return ("This is the untrained model (step 0): its heads look almost anywhere. Press Start to train "
                    "it at a watchable speed, or Step to go one batch at a time."), False
        return f"Paused at step {step}. Step trains one batch; Resume continues.", False
    if run_state == "finished":
        acc = f"{latest.report.sequence_accuracy:.1%}" if latest is not None else "?"
        task = f" ({latest.task} task)" if latest is not None else ""
        return (f"Finished: {step} steps, exact-sequence test accuracy {acc}{task}. Scrub the timeline, try "
                "sequences, or click heads to ablate."), False
    return (f"Stopped at step {step}. Scrub the timeline, try sequences, click heads to ablate, or Start to "
            "continue."), False


def eta_line(done: int | None, total: int, durations: Sequence[float], speed: float | None, *, running: bool,
             goal_step: int | None = None, time_to_goal: float | None = None) -> str:
    """"ETA …" for a run at step ``done`` of ``total``: the mean of the recent step ``durations``, but never faster
    than the throttle ``speed`` allows; unknown ("ETA –") unless ``running``. Then when the goal was reached."""
    text = "ETA –"
    if running and done is not None and durations:
        per_step = sum(durations) / len(durations)
        if speed:
            per_step = max(per_step, 1.0 / speed)
        text = format_eta(eta_seconds(done, total, per_step))
    if goal_step is not None:
        took = f" ({time_to_goal:.1f} s after Start)" if time_to_goal is not None else ""
        text += f" · {GOAL_TEXT} at step {goal_step}{took}"
    return text
