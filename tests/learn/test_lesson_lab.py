"""Lesson 7's last steps over a real ``ScalingLab``: the "measured" goal is detected from the Lab's events, Show me
measures, and the look step quotes the slopes, the doubling factor and the largest n of the measurement on screen
(measure another set and the text follows). Qt-free (a ``ThreadRunner`` Lab)."""

from __future__ import annotations

import math

import numpy as np

from app.common.runner import ThreadRunner
from app.lab.model import ScalingLab
from app.learn.model.engine import LessonRun
from app.learn.model.files import find_lesson
from app.learn.model.lab import SHOW_ME, uses_lab
from app.learn.model.walk import step_records
from app.playground.model.playground import PlaygroundModel


def _by_hand(lab, impl):
    """(slope over the upper half of n, time(n_max) / time(n_max / 2)) from the measured points, with numpy."""
    pts = sorted((p.n, p.seconds) for p in lab.run.points if p.impl == impl and p.measured)
    upper = pts[len(pts) // 2:] if len(pts) > 2 else pts
    slope = np.polyfit(np.log([n for n, _ in upper]), np.log([t for _, t in upper]), 1)[0]
    times = dict(pts)
    top = max(times)
    return slope, times[top] / times[top // 2], top


def test_the_cost_lesson_measures_and_quotes_the_lab():
    lesson = find_lesson("cost")
    assert uses_lab(lesson) and not uses_lab(find_lesson("masks"))
    lab = ScalingLab(runner=ThreadRunner())
    run = LessonRun(lesson, PlaygroundModel(lesson.preset), lab=lab)
    try:
        recs = list(step_records(run, True))
        assert all(r["behaved"] for r in recs), [r for r in recs if not r["behaved"]]
        assert recs[-2]["expected"] == {"measured": True} and lab.run_state == "finished"
        assert lab.config.max_n == SHOW_ME["max_n"] and set(lab.config.impls) == set(SHOW_ME["impls"])
        slope, doubling, top = _by_hand(lab, "naive-numpy")
        fused = _by_hand(lab, "fused")[0]
        text = recs[-1]["feedback"]
        assert f"n = {SHOW_ME['min_n']} … {top}:" in text
        assert f"slope {slope:.2f}; doubling n from {top // 2} to {top} multiplied its time by {doubling:.1f}" in text
        assert f"The fused kernel's slope is {fused:.2f}" in text
        assert math.isclose(2 ** slope, doubling, rel_tol=1e-9)  # two points in the upper half: the same figure
        # the learner measures another set in the Lab (the do step sees it), and the text follows
        run.go(len(lesson.steps) - 2)
        assert not run.done
        lab.set_choice(max_n=512, min_n=64)
        lab.start()
        assert lab.wait_idle(60) and run.done
        run.go(len(lesson.steps) - 1)
        slope2, doubling2, top2 = _by_hand(lab, "naive-numpy")
        assert top2 == 512 and "n = 64 … 512:" in run.text
        assert f"slope {slope2:.2f}; doubling n from 256 to 512 multiplied its time by {doubling2:.1f}" in run.text
    finally:
        run.close()
        lab.shutdown()


def test_lab_names_without_a_measurement_say_why():
    lesson = find_lesson("cost")
    run = LessonRun(lesson, PlaygroundModel(lesson.preset), lab=ScalingLab(runner=ThreadRunner()))
    run.start(len(lesson.steps) - 1)  # resumed at the last step: the measurement is not replayed
    assert "nothing measured yet" in run.text
    run.close()
    bare = LessonRun(lesson, PlaygroundModel(lesson.preset))  # no Lab at all (a lesson walked without a window)
    bare.start(len(lesson.steps) - 1)
    assert "needs the Lab" in bare.text
    bare.close()
