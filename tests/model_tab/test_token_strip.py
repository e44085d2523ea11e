"""The token strip with a long text: it scrolls instead of growing the window, and a highlight set elsewhere is
brought into sight. (A 1,020-token text once wrapped to ~32 rows and grew the window past the screen.)"""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.model_tab.qt.tokens import MAX_ROWS, TokenStrip


def _window(qtbot, n: int) -> tuple[QWidget, TokenStrip]:
    w = QWidget()
    lay = QVBoxLayout(w)
    strip = TokenStrip()
    lay.addWidget(strip)
    lay.addWidget(QWidget(), 1)
    qtbot.addWidget(w)
    w.resize(800, 600)
    w.show()
    qtbot.waitExposed(w)
    strip.set_tokens([f"tok{i}" for i in range(n)])
    return w, strip


def test_a_long_text_scrolls_and_never_grows_the_window(qtbot):
    short_w, short = _window(qtbot, 5)
    long_w, long_ = _window(qtbot, 1020)
    rows = long_._inner.boxes[-1].bottom() / long_._inner.line_height
    assert rows > 20  # the text really wraps to many rows
    assert long_.shown_rows() == MAX_ROWS
    assert long_.height() <= MAX_ROWS * (long_._inner.line_height + 3) + 2
    assert long_w.minimumSizeHint().height() <= short_w.minimumSizeHint().height() + long_.height()
    assert long_w.height() == 600  # the window kept its size
    assert long_.verticalScrollBar().maximum() > 0


def test_a_highlight_from_another_view_scrolls_into_sight(qtbot):
    _w, strip = _window(qtbot, 1020)
    strip.set_highlight(1000)
    box = strip._inner.boxes[1000]
    top = strip.verticalScrollBar().value()
    assert top <= box.top() and box.bottom() <= top + strip.viewport().height()
    assert strip.token_at(box.center().x(), box.center().y() - top) == 1000


def test_a_short_text_shows_whole_without_a_scroll_bar(qtbot):
    _w, strip = _window(qtbot, 5)
    assert strip.verticalScrollBar().maximum() == 0
    assert len(strip._inner.boxes) == 5 and strip.token_at(*strip._inner.boxes[4].center().toTuple()) == 4
