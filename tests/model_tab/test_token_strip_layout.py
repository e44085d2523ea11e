"""The token strip with a 4,096-token text: it arrived with two layouts of every box (the strip's height brings its
scroll bar, which narrows the width and wraps the rows again), 8,192 measurements and 4,096 boxes each time,
~60 ms of the Model tab's stall. Now each distinct token is measured once per font, a rewrap measures nothing, the
rows are the same as wrapping by hand, and a paint makes the boxes of the rows in sight only (no timing: the
counts that bound it)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QVBoxLayout, QWidget
from qt_settle import settled

import app.model_tab.qt.tokens as tokens_module
from app.model_tab.qt.tokens import GAP, MAX_ROWS, PAD, TokenStrip
from tests.font_measurements import count_measurements

T = 4096
TOKENS = [f"w{(i * 7) % 90}" + ("␣" if i % 3 else "") for i in range(T)]  # 180 distinct tokens


@pytest.fixture
def counted(monkeypatch):
    """Every horizontalAdvance the strip asks for (a subclass standing in for QFontMetricsF)."""
    return count_measurements(monkeypatch, tokens_module)


def _shown(qtbot, width: int = 800) -> tuple[QWidget, TokenStrip]:
    w = QWidget()
    lay = QVBoxLayout(w)
    strip = TokenStrip()
    lay.addWidget(strip)
    lay.addWidget(QWidget(), 1)
    qtbot.addWidget(w)
    w.resize(width, 600)
    w.show()
    qtbot.waitExposed(w)
    return w, strip


def by_hand(strip: TokenStrip, width: float) -> list[tuple[float, float, float]]:
    """(x, y, width) of every box, wrapped to ``width`` as the strip wraps (each token measured here)."""
    fm = QFontMetricsF(strip._inner.font())
    line = fm.height() + 2 * PAD
    x = y = 0.0
    out = []
    for tok in strip.tokens:
        bw = fm.horizontalAdvance(tok) + 2 * PAD
        if x > 0 and x + bw > width:
            x, y = 0.0, y + line + GAP
        out.append((x, y, bw))
        x += bw + GAP
    return out


def test_a_long_text_measures_each_distinct_token_once_and_a_rewrap_measures_none(qtbot, counted):
    w, strip = _shown(qtbot)
    counted.clear()
    strip.set_tokens(TOKENS)
    settled(qtbot)  # the scroll bar's arrival and its rewrap
    assert sorted(counted) == sorted(set(TOKENS))  # 180 measurements (before: 8,192)
    inner = strip._inner
    assert inner.measured >= len(set(TOKENS))
    counted.clear()
    w.resize(520, 600)  # narrower: every row wraps again
    qtbot.waitUntil(lambda: inner.width() < 520)
    strip.set_tokens(TOKENS[::-1])  # the same tokens in another order: nothing new to measure
    assert counted == []
    boxes = [(b.x(), b.y(), b.width()) for b in inner.boxes]
    want = by_hand(strip, inner.width())
    assert len(boxes) == T and [v for b in boxes for v in b] == pytest.approx([v for b in want for v in b])
    assert all(x + bw <= inner.width() or x == 0 for x, _y, bw in boxes)


def test_the_token_under_the_pointer_is_found_in_its_row(qtbot):
    _w, strip = _shown(qtbot)
    strip.set_tokens(TOKENS)
    inner = strip._inner
    for i in (0, 1, 17, 1000, 2048, T - 1):
        box = inner.box(i)
        assert inner.token_at(box.center().x(), box.center().y()) == i
        assert inner.token_at(box.left() + 0.5, box.top() + 0.5) == i
        assert inner.token_at(box.right() + GAP / 2, box.center().y()) == -1  # between two boxes
        assert inner.token_at(box.center().x(), box.bottom() + GAP / 2) == -1  # between two rows
    assert inner.token_at(5, inner.height() + 50) == -1 and inner.token_at(5, -1) == -1


def test_a_paint_makes_only_the_boxes_of_the_rows_in_sight(qtbot, monkeypatch):
    _w, strip = _shown(qtbot)
    strip.set_tokens(TOKENS)
    inner = strip._inner
    made: list[int] = []
    real = inner.box

    def box(i: int):
        made.append(i)
        return real(i)

    monkeypatch.setattr(inner, "box", box)
    strip.set_highlight(3000)  # brings its row into sight
    made.clear()
    strip.viewport().grab()
    per_row = max(len(inner._row_tokens(r)) for r in range(len(inner._rows)))
    assert made and len(made) <= (MAX_ROWS + 1) * per_row  # before: every box was made at every layout
    assert 3000 in made and 0 not in made
