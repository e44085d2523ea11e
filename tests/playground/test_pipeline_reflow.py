"""The Steps view's layout (one row, 3 + 2 or 2 + 2 + 1: ``best_columns``) follows the maps' shape, not only the
window's size: chosen on resizes alone, a 16 x 64 setting kept the layout picked for the 3 x 3 preset before it
(or another, depending on history), and two windows in the same state drew their maps at different sizes."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication
from qt_settle import settled

from app.playground.qt.step_arrows import best_columns
from attention_core.presets import get_preset, random_preset


def expected_columns(pipe) -> int:  # type: ignore[no-untyped-def]
    extra = max(a.sizeHint().height() for a in pipe.arrows.values()) + 2 * pipe.fontMetrics().lineSpacing()
    return best_columns(pipe.width(), pipe.height(), pipe.model.result.weights.shape, extra)


def settle(qtbot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(5):
        QApplication.processEvents()
    settled(qtbot)


def test_the_layout_follows_the_shape_whatever_came_before(window, qtbot):
    pipe = window.pipeline
    settle(qtbot)
    small = pipe.columns
    assert small == expected_columns(pipe)
    big = random_preset(1, n_tokens=16, d_model=64)
    window.edits.apply("16 x 64", lambda m: m.load_preset(big))
    settle(qtbot)
    assert pipe.columns == expected_columns(pipe)  # the rule, for 16 x 64 at this size
    window.edits.apply("3 x 3", lambda m: m.load_preset(get_preset("cat-sat-mat")))
    settle(qtbot)
    assert pipe.columns == small
