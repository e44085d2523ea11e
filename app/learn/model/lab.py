"""Lessons over the Lab tab (``ScalingLab``): what a lesson's expressions may name about the latest measurement, the
"measured" goal of a do step, and the small measurement "show me" runs. Qt-free.

Names (``context``), all from the Lab's results on this machine:

- ``lab_done``: whether a measurement has finished with measured points;
- ``lab_smallest_n`` / ``lab_largest_n``: the smallest and largest n measured (over every series);
- ``lab_slope(impl)``: the fitted time slope of that implementation on log-log axes (2 = time grows like n²);
- ``lab_seconds(impl)``: its median time at its largest n; ``lab_doubling(impl)``: its time at its largest n over
  its time at half that n (what doubling n cost: 4 for n²);
- implementations are named as the Lab names them: ``'naive-numpy'``, ``'naive-torch'``, ``'steps'``, ``'fused'``;
  the device is the first one the measurement used.

Goal ``{"measured": true}``: a measurement started after the step opened has finished. Show me measures a small
set: ``SHOW_ME`` (naive numpy and the fused kernel on the CPU, one head, n from 128 to 1024, the median of three
calls each): a few seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.learn.model.expr import LessonExprError

if TYPE_CHECKING:
    from app.lab.model import ScalingLab

LAB_GOALS = ("measured",)
LAB_FUNCTIONS = frozenset({"lab_slope", "lab_seconds", "lab_doubling"})
LAB_NAMES = frozenset({"lab_done", "lab_smallest_n", "lab_largest_n", *LAB_FUNCTIONS})
NO_MEASUREMENT = "nothing measured yet: press Run in the Lab (or Show me on the lesson's measuring step)"
SHOW_ME: dict[str, Any] = {"devices": ("cpu",), "impls": ("naive-numpy", "fused"), "heads": 1, "min_n": 128,
                           "max_n": 1024, "repeat": 3, "matmul_limit": False}


def _measured(lab: ScalingLab) -> bool:
    return lab.run_state == "finished" and any(p.measured for p in lab.run.points)


def context(lab: ScalingLab) -> dict[str, Any]:
    """The names of the module docstring, from the Lab's latest measurement."""
    names: dict[str, Any] = {"lab_done": _measured(lab)}
    run = lab.run
    device = run.config.devices[0]

    def series(impl: str) -> list[Any]:
        if not names["lab_done"]:
            raise LessonExprError(NO_MEASUREMENT)
        pts = run.measured((device, str(impl)))
        if not pts:
            raise LessonExprError(f"the Lab measured no {impl!r} on {device} "
                                  f"(measured: {', '.join(k[1] for k in run.series()) or 'nothing'})")
        return sorted(pts, key=lambda p: p.n)

    def slope(impl: str) -> float:
        series(impl)
        value = run.slope((device, str(impl)))
        if not math.isfinite(value):
            raise LessonExprError(f"{impl}: too few points for a slope")
        return float(value)

    def seconds(impl: str) -> float:
        return float(series(impl)[-1].seconds)

    def doubling(impl: str) -> float:
        pts = {p.n: p.seconds for p in series(impl)}
        top = max(pts)
        if top // 2 not in pts:
            raise LessonExprError(f"{impl}: n = {top // 2} was not measured")
        return float(pts[top] / pts[top // 2])

    funcs: dict[str, Callable[..., Any]] = {"lab_slope": slope, "lab_seconds": seconds, "lab_doubling": doubling}
    names.update(funcs)
    if names["lab_done"]:
        ns = [p.n for p in run.points if p.measured]
        names.update(lab_smallest_n=min(ns), lab_largest_n=max(ns))
    return names


class Baseline:
    """The measurement on screen when a do step opened: the goal needs another one."""

    def __init__(self, lab: ScalingLab) -> None:
        self.run = lab.run


def goal_met(lab: ScalingLab, baseline: Baseline | None) -> bool:
    return baseline is not None and lab.run is not baseline.run and _measured(lab)


def perform(lab: ScalingLab) -> tuple[bool, str]:
    """Show me: the small measurement of ``SHOW_ME`` (the Lab's form shows the choice). (started, message)."""
    under_way = "Measuring in the Lab: this step is done when the measurement has finished."
    if lab.is_running:
        return True, under_way  # the learner's own run, or a second press: wait for it
    try:
        lab.set_choice(**SHOW_ME)
    except ValueError as exc:
        return False, f"The Lab cannot measure this here: {exc}"
    return lab.start(), under_way


def uses_lab(lesson: Any) -> bool:
    """Whether a lesson needs the Lab (a "measured" goal, or a Lab name in an expression)."""
    from app.learn.model.training import expression_names

    return any("measured" in (st.get("goal") or {}) for st in lesson.steps) or bool(expression_names(lesson)
                                                                                    & LAB_NAMES)
