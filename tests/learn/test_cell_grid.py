"""A "click the cell" question whose map is covered shows that map's cells as an empty grid in the Learn
panel (the tokens on its axes, no numbers, no colours); clicking a cell answers."""

from __future__ import annotations

import numpy as np

from app.learn.model.files import MemoryStore, find_lesson


def _open(window, index):
    learn = window.learn
    learn.store = learn.panel.store = MemoryStore()
    return learn, learn.open(find_lesson("softmax-cat-sat-mat"), index)


def test_a_covered_cell_question_offers_an_empty_grid_to_click(window, qtbot):
    learn, run = _open(window, 3)  # "where does 'sat' look?": weights covered
    assert run.step["ask"]["type"] == "cell" and "weights" in run.covered
    grid = learn.panel.cell_grid
    assert grid is not None
    qtbot.waitUntil(lambda: grid.isVisibleTo(learn.panel))  # a layout shows a new child on the next loop turn
    pg = window.playground
    lq, lk = len(pg.query_tokens), len(pg.key_tokens)
    assert len(grid.buttons) == lq * lk
    assert all(b.text() == "" for b in grid.buttons.values())  # no numbers
    assert len({b.styleSheet() for b in grid.buttons.values()}) == 1  # no colours: every cell alike
    assert grid.row_names() == list(pg.query_tokens) and grid.col_names() == list(pg.key_tokens)
    w = pg.result.weights
    best = int(np.argmax(w[1]))
    grid.buttons[(1, best)].click()
    assert run.feedback[3].correct
    assert run.covered == () and learn.panel.cell_grid is None  # answered: the real map is back, the grid gone


def test_a_wrong_cell_of_the_grid_is_marked_wrong(window, qtbot):
    learn, run = _open(window, 3)
    w = window.playground.result.weights
    worst = int(np.argmin(w[1]))
    learn.panel.cell_grid.buttons[(1, worst)].click()
    assert not run.feedback[3].correct and "Not quite" in learn.panel.feedback.text()


def test_the_grid_follows_the_tokens_when_they_change_under_the_question(window, qtbot):
    """Found by the currency oracle: a key added or removed while the question was open left the grid's old cells."""
    learn, run = _open(window, 3)
    window.dim_spins["Lk"].setValue(window.dim_spins["Lk"].value() + 1)
    grid = learn.panel.cell_grid
    assert grid is not None and grid.col_names() == list(window.playground.key_tokens)
    assert len(grid.buttons) == len(window.playground.query_tokens) * len(window.playground.key_tokens)
