"""Lesson 8 asks the learner to predict which layer holds the strongest previous-token and induction heads (steps 2
and 3) and what switching heads off costs (steps 6 and 8). While such a question is unanswered the Model tab must
not show the answer one click away: the Detect view's score grid, the heads list's scores and order, the Heads
mosaic's outlines, the picked head's score and the ablation scan show nothing of it, and their exports are
refused; once answered, everything is back."""

from __future__ import annotations

import re

import pytest
from qt_settle import settled

from app.learn.model.files import MemoryStore, find_lesson
from app.model_tab.model.views import head_name
from app.playground.model.concealment import COVER_TEXT


def _detected_and_scanned(window, qtbot, path):
    host = window.inspect
    tab = host.show()
    session = host.model
    session.load(path)
    qtbot.waitUntil(lambda: session.trace is not None and not session.tracing, timeout=60_000)
    tab.views.setCurrentWidget(tab.detect)
    qtbot.waitUntil(lambda: session.heads.detection is not None and not session.heads.busy, timeout=60_000)
    assert session.heads.start_scan()
    qtbot.waitUntil(lambda: session.heads.scan is not None and not session.heads.busy, timeout=60_000)
    settled(qtbot)
    return session, tab, tab.detect


def _open_step(window, index):
    learn = window.learn
    learn.store = learn.panel.store = MemoryStore()
    return learn.open(find_lesson("real-model"), index)


def _shows_scores(view, tab, session, tmp_path) -> dict[str, bool]:
    """Where a score (or the scan's loss changes) reaches the learner now."""
    rows = view.heads.rows()
    names = [head_name(li, h) for li in range(2) for h in range(4)]
    out = {
        "grid": view.scores.isVisibleTo(view),
        "list": any(text != head_name(li, h) for li, h, text, _on in rows) or [r[2] for r in rows] != names,
        "mosaic outlines": bool(tab.grid.overlay.marked),
        "pattern score": bool(re.search(r"induction [0-9.]+", view.pattern.title())),
        "scan grid": view.scan.grid.isVisibleTo(view.scan),
        "above button": view.heads.above_button.isEnabled(),
    }
    for name, hm in (("grid export", view.scores), ("scan export", view.scan.grid)):
        try:
            hm.export(tmp_path / f"{name}.csv")
            out[name] = True
        except ValueError as exc:
            assert COVER_TEXT in str(exc)
            out[name] = False
    return out


@pytest.mark.parametrize("index", [1, 2])
def test_a_question_about_the_heads_hides_their_scores_everywhere_until_answered(window, qtbot, induction_model,
                                                                                  tmp_path, index):
    session, tab, view = _detected_and_scanned(window, qtbot, induction_model)
    view.scores.cellClicked.emit(1, 0)  # a head picked: its pattern's title carried its score
    assert all(_shows_scores(view, tab, session, tmp_path).values())  # the premise: every place shows them
    run = _open_step(window, index)
    assert run.kind == "predict" and not run.revealed
    tab.views.setCurrentWidget(tab.detect)  # the learner clicks over to the Detect view
    settled(qtbot)
    shown = _shows_scores(view, tab, session, tmp_path)
    assert not any(shown.values()), shown
    assert COVER_TEXT in view.scores_withheld.text() and COVER_TEXT in view.scan.placeholder.text()
    # the Playground's story and explanation say nothing of the heads' scores: a cover of these leaves them readable
    covered = {id(w) for w in window.learn.covered_widgets}
    assert id(window.tab.story_label) not in covered and id(window.tab.explain_label) not in covered
    assert session.heads.switch_off_above() == 0 and session.heads.off == ()
    run.answer(run.expected())
    settled(qtbot)
    assert all(_shows_scores(view, tab, session, tmp_path).values())


def test_a_question_about_switching_heads_off_hides_the_scan_but_not_the_scores(window, qtbot, induction_model,
                                                                                  tmp_path):
    session, tab, view = _detected_and_scanned(window, qtbot, induction_model)
    run = _open_step(window, 5)  # "One head off": will the second copy's loss rise by half?
    assert run.kind == "predict" and not run.revealed
    settled(qtbot)
    shown = _shows_scores(view, tab, session, tmp_path)
    assert not shown["scan grid"] and not shown["scan export"]
    assert shown["grid"] and shown["list"] and shown["mosaic outlines"]  # the step itself names the head
    run.answer("yes")
    settled(qtbot)
    assert _shows_scores(view, tab, session, tmp_path)["scan grid"]
