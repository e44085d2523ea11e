"""Lesson 8, "Inside a real model", walked without a window over a real ``InspectSession``: show me trains the
app's induction model and opens it, and every number the lesson asks or says equals the library's own measurement
of that model (``attention_core.phenomena``), computed here independently."""

from __future__ import annotations

import re

import numpy as np
import pytest

from app.common.runner import ThreadRunner
from app.learn.model.engine import LessonRun
from app.learn.model.files import find_lesson
from app.learn.model.walk import step_records
from app.model_tab.model.session import InspectSession
from app.playground.model.playground import PlaygroundModel


@pytest.fixture(scope="module")
def walked():
    lesson = find_lesson("real-model")
    out = {}
    for right in (True, False):
        session = InspectSession(runner=ThreadRunner())
        run = LessonRun(lesson, PlaygroundModel(lesson.preset), inspect=session)
        try:
            out[right] = (list(step_records(run, right)), session)
        finally:
            run.close()
    yield out
    for _, session in out.values():
        session.shutdown()


def test_every_step_behaves_right_and_wrong(walked):
    for right, (recs, _) in walked.items():
        assert len(recs) == 10 and all(r["behaved"] for r in recs), [r for r in recs if not r["behaved"]]
        predicts = [r for r in recs if r["kind"] == "predict"]
        assert len(predicts) == 4 and all(r["correct"] == right for r in predicts)


def test_the_answers_are_the_models_own_measurements(walked):
    from app.model_tab.model.detect_runs import BATCH, SEED, run_detectors
    from attention_core.phenomena import head_scores, repeated_tokens

    recs, session = walked[True]
    model = session.model
    assert model is not None and model.family == "attention-playground"  # show me trained and opened it
    prev = head_scores(model, "previous-token", seed=SEED, batch=BATCH)
    ind = head_scores(model, "induction", seed=SEED, batch=BATCH)
    assert recs[1]["expected"] == str(prev.best()[0]) and recs[2]["expected"] == str(ind.best()[0])
    assert f"{float(ind.scores[ind.best()]):.0%}" in recs[2]["feedback"]
    clean = repeated_tokens(model, ind.seq_len, SEED, batch=BATCH)
    assert f"{clean.second_half_loss:.2f} nats" in recs[4]["feedback"]
    one_off = run_detectors(model, [ind.best()], seq_len=ind.seq_len).repeat.second_half_loss
    assert recs[5]["expected"] == ("yes" if one_off > 1.5 * clean.second_half_loss else "no")
    assert f"{one_off:.2f} nats" in recs[5]["feedback"]
    all_off = run_detectors(model, ind.heads_above(0.4), seq_len=ind.seq_len).repeat.second_half_loss
    assert recs[7]["expected"] == ("yes" if all_off >= 2 * clean.second_half_loss else "no")
    # the last step reports the model as it is now, with every induction head off: the Detect view's numbers
    assert sorted(session.heads.off) == sorted(ind.heads_above(0.4))
    shown = float(re.search(r"costs ([0-9.]+) nats", recs[9]["feedback"]).group(1))
    assert shown == pytest.approx(all_off, abs=0.006)
    np.testing.assert_allclose(session.heads.detection.scores["induction"].scores,
                               run_detectors(model, session.heads.off, seq_len=ind.seq_len).scores["induction"].scores)
