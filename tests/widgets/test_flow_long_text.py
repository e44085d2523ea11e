"""The Flow view at any length: the canvas froze the window for 86.6 s at 68 tokens (8 heads) because every line
re-measured every label. Now a draw measures each drawn label at most once, draws at most LINE_BUDGET lines (the
strongest; past MAX_ROWS tokens neighbouring rows pool), and a pooled line carries the mean over its queries of their
summed weights (checked here against numpy by hand). No timing: the properties that bound the time."""

from __future__ import annotations

import numpy as np
import pytest

import app.widgets.flow.canvas as canvas_module
from app.common.flow import FlowData
from app.widgets.flow.canvas import LINE_BUDGET, MAX_ROWS, FlowCanvas
from tests.font_measurements import count_measurements


def flow_data(heads: int, n: int, seed: int = 0) -> FlowData:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(heads, n, n)) * 3
    logits = np.where(np.tril(np.ones((n, n), bool)), logits, -np.inf)
    w = np.exp(logits - logits.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    tokens = tuple(f"tok{i}" for i in range(n))
    return FlowData(w, tokens, tokens, tuple(f"head {h + 1}" for h in range(heads)), "flow")


@pytest.fixture
def counted(monkeypatch):
    """Every horizontalAdvance the canvas asks for, counted (a subclass standing in for QFontMetricsF)."""
    return count_measurements(monkeypatch, canvas_module)


@pytest.mark.parametrize("n", [68, 300, 1500])
def test_a_draw_measures_each_label_once_and_draws_a_bounded_number_of_lines(qtbot, counted, n):
    heads = 8
    c = FlowCanvas(dark=False)
    qtbot.addWidget(c)
    c.resize(900, 700)
    c.set_data(flow_data(heads, n), list(range(heads)))
    c.grab()
    labels = len(c.labelled("query")) + len(c.labelled("key"))
    assert len(counted) <= labels + heads + 1  # the drawn labels, the legend's "heads" and one per head
    assert labels <= 2 * (700 / 12 + 2)  # thinned to one per 12 px
    assert 0 < len(c.drawn) <= LINE_BUDGET
    counted.clear()
    c.set_hover("query", n // 2)  # a hover repaints from what was measured and planned
    c.grab()
    assert len(counted) <= heads + 2
    assert any(not d.faded for d in c.drawn)


def test_the_strongest_lines_are_kept_exactly():
    heads, n = 8, 68  # 8 × 68 · 69 / 2 = 18,768 causal lines: over the budget
    data = flow_data(heads, n, seed=1)
    plan = canvas_module.plan_lines(data.weights, list(range(heads)))
    assert plan.pool_q == plan.pool_k == 1 and plan.total == heads * n * (n + 1) // 2
    assert plan.weights.size == LINE_BUDGET
    np.testing.assert_array_equal(plan.weights, data.weights[plan.heads, plan.queries, plan.keys])
    threshold = np.sort(data.weights[data.weights > 0])[-LINE_BUDGET]
    assert plan.weights.min() == threshold  # exactly the LINE_BUDGET largest


def test_pooled_rows_carry_the_mean_of_their_queries_summed_weights():
    n, heads = 3 * MAX_ROWS + 5, 1
    data = flow_data(heads, n, seed=2)
    plan = canvas_module.plan_lines(data.weights, [0])
    assert plan.pool_q == plan.pool_k == 4
    lines = dict(zip(zip(plan.queries.tolist(), plan.keys.tolist()), plan.weights.tolist()))
    w = data.weights[0]
    for q0, k0 in [(0, 0), (400, 12), (n - n % 4, n - n % 4), (200, 200)]:
        by_hand = w[q0:q0 + 4, k0:k0 + 4].sum(axis=1).mean()  # the last pool holds fewer tokens
        if (q0, k0) in lines:
            assert lines[(q0, k0)] == pytest.approx(by_hand, rel=1e-12)
        else:  # dropped by the budget: weaker than every line kept
            assert by_hand <= plan.weights.min()


def test_small_flows_still_draw_every_line(qtbot):
    c = FlowCanvas(dark=False)
    qtbot.addWidget(c)
    c.resize(600, 400)
    data = flow_data(2, 6)
    c.set_data(data, [0, 1])
    c.grab()
    assert len(c.drawn) == 2 * 21 and all(d.queries == d.keys == 1 for d in c.drawn)
    for d in c.drawn:
        assert d.weight == data.weights[d.head, d.query, d.key]
    assert c.token_at(c.token_pos("key", 4)) == ("key", 4)


def test_the_view_says_what_a_long_text_leaves_out(qtbot):
    from app.widgets.flow.view import FlowView

    class View(FlowView):
        def __init__(self, data: FlowData) -> None:
            self.fixed = data
            super().__init__()

        def current_data(self) -> FlowData | None:
            return self.fixed

    long_view, short_view = View(flow_data(2, 600)), View(flow_data(2, 5))
    for v in (long_view, short_view):
        qtbot.addWidget(v)
        v.redraw()
    text = long_view.title_label.text()
    assert "pools 3 queries × 3 keys" in text and "strongest 1,500 of" in text
    assert "Long text" not in short_view.title_label.text()
