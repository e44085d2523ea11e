"""Learn mode's engine (app/learn/model/engine.py): bundled lessons walked right and wrong, numbers that follow the
preset (nothing hard-coded), malformed lesson files refused with file, line and reason, the expression language."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

import attention_core.presets as presets
from app.learn.model.context import context
from app.learn.model.engine import LessonRun
from app.learn.model.expr import Evaluator, LessonExprError, render
from app.learn.model.files import LESSON_DIR, JsonStore, bundled_lessons, parse_lesson
from app.learn.model.lab import uses_lab
from app.learn.model.model_tab import uses_model
from app.learn.model.schema import LessonFileError
from app.learn.model.training import uses_training
from app.learn.model.walk import check_file, dry_run, step_records
from app.playground.model.playground import PlaygroundModel


def _softmax(x):
    e = np.exp(np.asarray(x, dtype=float) - np.max(x))
    return e / e.sum()


def _walk(lesson, right):
    run = LessonRun(lesson, PlaygroundModel(lesson.preset))
    try:
        return list(step_records(run, right)), run
    finally:
        run.close()


def test_every_bundled_lesson_walks_right_and_wrong():
    lessons = bundled_lessons()
    assert {x.id for x in lessons} >= {"dot-product", "scaling", "softmax-cat-sat-mat", "masks"}
    for lesson in lessons:
        if uses_training(lesson) or uses_lab(lesson) or uses_model(lesson):  # trains or measures: walked by
            # test_cli_lessons.py and test_lesson_training.py / test_lesson_lab.py / test_lesson_model.py
            continue
        assert 5 <= len(lesson.steps) <= 15
        for right in (True, False):
            recs, run = _walk(lesson, right)
            assert len(recs) == len(lesson.steps)
            assert all(r["behaved"] for r in recs), (lesson.id, right, [r for r in recs if not r["behaved"]])
            predicts = [r for r in recs if r["kind"] == "predict"]
            assert predicts and all(r["correct"] is right for r in predicts)
            if not right:
                assert all(r["expected"] in r["feedback"] for r in predicts)
            assert run.score == ((len(predicts) if right else 0), len(predicts))


def test_dot_product_numbers_match_numpy():
    lesson = next(x for x in bundled_lessons() if x.id == "dot-product")
    recs, _ = _walk(lesson, True)
    q, k = np.array([3.0, 1.0]), np.array([[3.0, 1.0], [1.0, 4.0], [1.5, 0.5]])
    scores = k @ q
    w = _softmax(scores / math.sqrt(2))
    assert f"= {scores[0]:g}." in recs[1]["feedback"]
    assert recs[3]["expected"] == f"{w[0]:.2f}"  # 0.87, lesson 004's 87 %
    assert f"street {w[1]:.0%}" in recs[3]["feedback"]


def test_cat_sat_mat_corrects_the_guide():
    lesson = next(x for x in bundled_lessons() if x.id == "softmax-cat-sat-mat")
    recs, _ = _walk(lesson, False)
    x = np.array([[1.0, 0.5, 0.2, 0.8], [0.3, 0.9, 0.1, 0.4], [0.6, 0.2, 0.7, 0.3]])
    sat_mat = x[1] @ x[2]
    assert recs[1]["expected"] == f"{sat_mat:.2f}" and abs(sat_mat - 0.55) < 1e-12  # the guide prints 0.65
    w = _softmax((x @ x.T)[1] / 2)
    assert recs[3]["expected"] == f"sat → {['cat', 'sat', 'mat'][int(np.argmax(w))]}"
    assert recs[4]["expected"] == f"{w[2]:.3f}"  # the guide prints 0.239


def test_causality_probe_is_exactly_zero_with_the_mask():
    lesson = next(x for x in bundled_lessons() if x.id == "masks")
    run = LessonRun(lesson, PlaygroundModel(lesson.preset))
    run.start(0)
    for i in range(4):
        run.go(i)
        if run.kind == "do":
            assert run.show_me()
    run.go(4)
    assert run.model.mask_mode == "causal" and run.expected() == 0.0
    leak = run.evaluator().value("probe_before(sat, 'none')")
    assert leak > 1e-3  # without the mask the earlier rows read 'mat'
    run.close()


def test_text_and_answers_follow_the_preset(monkeypatch):
    """Change a preset's numbers: the lesson's texts and expected answers follow; nothing is typed in."""
    original = presets._BUILDERS["it-animal-street"]

    def changed():
        p = original()
        q = np.array([[2.0, 5.0]])
        return presets.Preset(p.name, p.title, p.story, p.query_tokens, p.key_tokens, q, p.k, p.v)

    monkeypatch.setitem(presets._BUILDERS, "it-animal-street", changed)
    lesson = next(x for x in bundled_lessons() if x.id == "dot-product")
    recs, _ = _walk(lesson, True)
    k = np.array([[3.0, 1.0], [1.0, 4.0], [1.5, 0.5]])
    scores = k @ np.array([2.0, 5.0])  # 11, 22, 5.5: now 'street' wins
    assert "Q[it] = [2, 5]" in recs[0]["feedback"]
    assert f"= {scores[0]:g}." in recs[1]["feedback"]
    assert recs[2]["expected"] == "street"
    assert recs[3]["expected"] == f"{_softmax(scores / math.sqrt(2))[0]:.2f}"
    assert all(r["behaved"] for r in recs[:5])
    # the do step "point Q[it] at street" is already met with this preset: the walk says so instead of passing
    assert not recs[5]["behaved"] and "already met" in recs[5]["feedback"]


def test_a_resumed_lesson_replays_the_steps_before():
    lesson = next(x for x in bundled_lessons() if x.id == "masks")
    run = LessonRun(lesson, PlaygroundModel("magnitude"))
    run.start(4)  # "probe with the mask": step 3 (mask the future) must have been done
    assert run.model.mask_mode == "causal" and run.model.mode == "qkv"
    assert run.expected() == 0.0
    run.close()


def test_progress_is_saved(tmp_path):
    lesson = next(x for x in bundled_lessons() if x.id == "dot-product")
    store = JsonStore(tmp_path / "p.json")
    run = LessonRun(lesson, PlaygroundModel(lesson.preset), store=store)
    run.start(0)
    run.next(), run.next()
    fb = run.answer("street")
    assert not fb.correct and "animal" in fb.text
    run.answer("animal")  # a second try does not change the score
    data = json.loads((tmp_path / "p.json").read_text())["dot-product"]
    assert data["step"] == 2 and data["score"] == 0 and data["of"] == 4
    run.close()
    resumed = LessonRun(lesson, PlaygroundModel(lesson.preset), store=JsonStore(tmp_path / "p.json"))
    resumed.start()
    assert resumed.index == 2
    resumed.close()


def test_expressions_compute_and_refuse():
    m = PlaygroundModel("it-animal-street")
    ev = Evaluator(context(m), frozenset(m.key_tokens))
    assert ev.value("scores[it][street]") == 7.0
    assert ev.value("argmax(weights[it])") == "animal"
    assert ev.value("weights[0, 2]") == pytest.approx(_softmax(np.array([10, 7, 5]) / math.sqrt(2))[2])
    assert render("{{x}} {scores[it]:g} {weights[it][animal]:.0%}", ev) == "{x} [10, 7, 5] 87%"
    for bad in ("__import__('os')", "weights.T", "(lambda: 1)()", "[1 for _ in []]", "open('x')",
                "scores[it][nobody]", "nothing", "1 if 1 else 2"):
        with pytest.raises(LessonExprError):
            ev.value(bad)


BASE = {
    "id": "t", "title": "T", "preset": "it-animal-street",
    "steps": [{"kind": "look", "text": "score {scores[it][animal]:g}"},
              {"kind": "predict", "text": "which?", "cover": ["weights"],
               "ask": {"type": "choice", "choices": ["animal", "street", "because"], "answer": "argmax(weights[it])"}},
              {"kind": "do", "text": "mask", "goal": {"scale": 1}},
              {"kind": "look", "text": "x"},
              {"kind": "predict", "text": "w?", "ask": {"type": "number", "answer": "weights[it][animal]"}}],
}


def _text(data):
    """Pretty JSON: one key per line, so each mutation has a known line."""
    return json.dumps(data, indent=1)


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _mutated(fn):
    data = json.loads(json.dumps(BASE))
    fn(data)
    return data


MALFORMED = [  # (mutation, text on the line the problem must point at, words of the reason)
    (lambda d: d.update(id="Bad Id"), '"id"', "id must be"),
    (lambda d: d.pop("title"), ("top", 0), "title must be"),
    (lambda d: d.update(preset="nope"), '"preset"', "preset must be"),
    (lambda d: d.update(steps=d["steps"][:3]), '"steps"', "5 to 15 steps"),
    (lambda d: d.update(steps=d["steps"] * 4), '"steps"', "5 to 15 steps"),
    (lambda d: d["steps"][3].update(kind="watch"), '"watch"', "kind must be one of"),
    (lambda d: d["steps"][3].update(txt="typo"), '"txt"', "unknown key 'txt'"),
    (lambda d: d["steps"][3].update(text="a {broken"), '"a {broken"', "unbalanced"),
    (lambda d: d["steps"][3].update(text="{__import__('os')}"), "__import__", "not allowed"),
    (lambda d: d["steps"][2].update(goal={"dance": 1}), '"dance"', "a goal has exactly one of"),
    (lambda d: d["steps"][1]["ask"].update(type="essay"), '"essay"', "ask type must be"),
    (lambda d: d["steps"][1].update(cover=["everything"]), '"everything"', "cover must be"),
    (lambda d: d["steps"][4]["ask"].update(tolerance=-1), '"tolerance"', "tolerance must be"),
    (lambda d: d["steps"][4]["ask"].pop("answer"), ("ask", 4), "needs an answer"),
    (lambda d: d["steps"][1].update(state={"mask": "sideways"}), '"sideways"', "mask must be one of"),
    (lambda d: d["steps"][1]["ask"].update(choices=["street", "because"]), '"argmax(weights[it])"',
     "not among the choices"),
    (lambda d: d["steps"][0].update(text="{scores[it][nobody]}"), "nobody", "no token 'nobody'"),
    (lambda d: d["steps"][2].update(goal={"scale": "standard"}), '"goal"', "already met"),
]


@pytest.mark.parametrize("case", range(len(MALFORMED)))
def test_malformed_files_are_refused_with_line_and_reason(case, tmp_path):
    mutate, needle, reason = MALFORMED[case]
    text = _text(_mutated(mutate))
    path = tmp_path / "bad.json"
    path.write_text(text)
    problems = check_file(path)
    assert problems, f"case {case} was accepted"
    hit = [p for p in problems if reason in p]
    assert hit, problems
    file, line, _ = hit[0].split(":", 2)
    assert file == str(path)
    assert int(line) == _expected_line(text, needle), (hit[0], text)


def _expected_line(text, needle):
    """The line a problem must name, found in the text by hand: a quoted key or value, the opening brace of step
    i ("step", i), the "ask" key of step i ("ask", i), or the first line ("top", 0) for a missing key."""
    lines = text.splitlines()
    if isinstance(needle, str):
        return _line_of(text, needle)
    what, i = needle
    if what == "top":
        return 1
    kinds = [n for n, line in enumerate(lines, 1) if line.strip().startswith('"kind"')]
    step_open = kinds[i] - 1  # json.dumps(indent=1) puts a step's "{" alone on the line before its "kind"
    assert lines[step_open - 1].strip() == "{"
    if what == "step":
        return step_open
    return next(n for n, line in enumerate(lines, 1) if n > step_open and line.strip().startswith('"ask"'))


def test_not_json_and_duplicates_are_refused_with_the_line(tmp_path):
    base = _text(BASE).splitlines()
    broken = list(base)
    assert broken[3].endswith(",")
    broken[3] = broken[3].rstrip(",")  # line 4 lost its comma: JSON notices at the next key, line 5
    path = tmp_path / "a.json"
    path.write_text("\n".join(broken))
    (problem,) = check_file(path)
    assert problem.startswith(f"{path}:5: not valid JSON")
    dup = list(base)
    dup.insert(2, ' "title": "again",')  # line 3; the original title moves to line 4 and is the duplicate
    path.write_text("\n".join(dup))
    assert check_file(path) == [f"{path}:4: duplicate key 'title'"]
    with pytest.raises(LessonFileError):
        parse_lesson("[1, 2]")


def test_bundled_files_pass_the_checker():
    for path in sorted(LESSON_DIR.glob("*.json")):
        lesson = parse_lesson(path.read_text())
        if uses_training(lesson) or uses_lab(lesson) or uses_model(lesson):  # checked by test_cli_lessons.py
            continue
        assert check_file(path) == []
        assert dry_run(parse_lesson(path.read_text()), right=False) == []


def test_cost_lesson_counts_match_hand_formulas():
    lesson = next(x for x in bundled_lessons() if x.id == "cost")
    run = LessonRun(lesson, PlaygroundModel(lesson.preset))
    recs = list(itertools.islice(step_records(run, False), 6))  # the counts; the Lab's steps: test_lesson_lab.py
    assert all(r["behaved"] for r in recs)
    assert recs[1]["expected"] == str((2 * 4) * (2 * 4))  # 4 tokens doubled: 64 cells
    assert run.model.result.weights.shape == (8, 8)  # the look step after it really doubled the tokens
    assert recs[3]["expected"] == f"{(4 * 2048**2 * 64) / (4 * 1024**2 * 64):.1f}"
    steps_mib = (4 * 4096**2 + 4 * 4096 * 64) * 4 / 2**20  # scores, scaled, exp, weights + q, k, v, output; float32
    assert recs[4]["expected"] == f"{steps_mib:.0f}"
