"""Lesson 6 (the reversal transformer) over a real ``TrainingSession``: its texts and answers are the trained
model's figures (train another model and they follow), its goals are detected from the session, and the schema
refuses training goals it does not know. Qt-free (a ``ThreadRunner`` session)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.common.runner import ThreadRunner
from app.learn.model.engine import LessonRun
from app.learn.model.files import find_lesson, parse_lesson
from app.learn.model.schema import LessonFileError
from app.learn.model.training import uses_training
from app.playground.model.playground import PlaygroundModel
from app.training.model.session import TrainingSession
from attention_core.tiny.config import TrainConfig


def _step(lesson, title):
    return next(i for i, s in enumerate(lesson.steps) if s.get("title") == title)


def _expected_figures(session):
    """The figures step 3 should quote, from the session's reports by hand."""
    reports = [s.report for s in session.history]
    last = reports[-1]
    reached = next(r.step for r in reports if r.evaluated and r.sequence_accuracy >= 0.99)
    scores = np.asarray(last.head_reversal_scores)
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return last, reached, int(layer), int(head)


def test_the_reversal_lesson_quotes_the_trained_model_and_follows_another():
    lesson = find_lesson("reversal")
    assert uses_training(lesson) and not uses_training(find_lesson("masks"))
    session = TrainingSession(TrainConfig(steps=40), runner=ThreadRunner())
    session.set_speed(None)
    run = LessonRun(lesson, PlaygroundModel(lesson.preset), training=session)
    texts = []
    try:
        for seed in (0, 3):
            session.set_config(TrainConfig(steps=40 + 10 * seed, seed=seed, test_size=200, train_eval_size=40))
            run.start(_step(lesson, "Train it"))
            assert run.kind == "do" and not run.done
            assert not run.show_me()  # started a run: the goal is met when it has reached 99 %
            assert run.wait_for_goal(60) and run.done
            assert session.trainer.config.seed == seed and session.run_state == "paused"  # the lesson paused it
            assert session.history.latest.step < 40 + 10 * seed
            last, reached, layer, head = _expected_figures(session)
            run.go(_step(lesson, "The anti-diagonal"))
            text = run.text
            assert f"at step {last.step} the greedy accuracy is {last.sequence_accuracy:.1%}" in text
            assert f"first reached 99% at step {reached}" in text
            assert f"layer {layer + 1} head {head + 1}" in text
            assert f"mirrored input {last.head_reversal_scores[layer, head]:.0%}" in text
            texts.append(text)
            run.go(_step(lesson, "Read a head"))
            weights = session.history.latest.probe_weights[layer][head]  # (2L, 2L); row L is SEP's query
            assert run.expected() == float(np.argmax(weights[6]))
            assert run.answer(run.sample_answer(False)).correct is False
        assert texts[0] != texts[1]  # another model, other figures
        # ablation: the goal is detected from the session; the look step quotes the Ablate tab's measurement
        run.go(_step(lesson, "Ablate the best head"))
        assert not run.done
        session.toggle_head(layer, head)  # the learner's own click in the grid
        assert run.done and session.ablated == ((layer, head),)
        run.go(_step(lesson, "What the head did"))
        ab = session.ablation
        assert f"greedy accuracy is {ab.now_seq:.1%} instead of {ab.base_seq:.1%}" in run.text
        from app.training.model.results import measure

        cfg = session.trainer.config
        assert ab.now_seq == pytest.approx(measure(cfg, session.history.latest, ((layer, head),)).seq)
    finally:
        run.close()
        session.shutdown()


def test_training_names_without_a_model_say_why():
    lesson = find_lesson("reversal")
    session = TrainingSession(runner=ThreadRunner())
    run = LessonRun(lesson, PlaygroundModel(lesson.preset), training=session)
    run.start(_step(lesson, "The anti-diagonal"))  # resumed past the training step, with no model
    assert "no trained model yet" in run.text
    run.go(0)
    defaults = TrainConfig()
    assert f"({defaults.num_layers} layers × {defaults.num_heads} heads)" in run.text
    run.close()


@pytest.mark.parametrize("goal, reason", [
    ({"trained": 1.5}, "goal trained must be the greedy accuracy to reach"),
    ({"trained": True}, "goal trained must be the greedy accuracy to reach"),
    ({"causal": "no"}, "goal causal must be true or false"),
    ({"ablate": "worst"}, "goal ablate must be \"best\""),
])
def test_bad_training_goals_are_refused(goal, reason):
    data = json.loads(open(find_lesson("reversal").file).read())
    data["steps"][1]["goal"] = goal
    with pytest.raises(LessonFileError) as exc:
        parse_lesson(json.dumps(data, indent=1))
    assert any(reason in p.reason for p in exc.value.problems), exc.value.problems


def test_a_bad_view_is_refused():
    data = json.loads(open(find_lesson("reversal").file).read())
    data["steps"][0]["view"] = "trainer"
    with pytest.raises(LessonFileError) as exc:
        parse_lesson(json.dumps(data, indent=1))
    assert "view must be one of" in str(exc.value) and "training" in str(exc.value)
