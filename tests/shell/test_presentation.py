"""Presentation mode on the real window (offscreen): zoom remembered, F11, one map alone, arrows, Esc."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QSettings, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication
from qt_settle import settled

from app.playground.qt.pipeline import STEPS
from app.shell.presentation import PRESENT_BOOST, ZOOM_STEP


def test_zoom_changes_every_font_and_is_remembered(window, qtbot, tmp_path):
    p = window.presenter
    label_before = window.explain_label.font().pointSizeF()
    caption_before = window.pipeline.captions["scores"].font().pointSizeF()
    menu_before = window.menuBar().font().pointSizeF()
    assert caption_before < label_before  # the theme's smaller captions …
    qtbot.keyClick(window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert abs(window.settings.zoom - ZOOM_STEP) < 1e-6
    assert abs(window.explain_label.font().pointSizeF() - label_before * ZOOM_STEP) < 0.05
    # … stay smaller, scaled alike; the menu bar follows too
    assert abs(window.pipeline.captions["scores"].font().pointSizeF() - caption_before * ZOOM_STEP) < 0.05
    assert window.menuBar().font().pointSizeF() > menu_before * 1.1
    p.zoom_by(1)
    window.settings.q.sync()
    fresh = QSettings(window.settings.q.fileName(), QSettings.Format.IniFormat)
    assert abs(float(fresh.value("ui/zoom")) - ZOOM_STEP**2) < 1e-6
    qtbot.keyClick(window, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert abs(window.settings.zoom - ZOOM_STEP) < 1e-6
    p.set_zoom(100)  # clamped
    assert window.settings.zoom == 3.0


def test_remembered_zoom_applies_to_a_new_window(window, qtbot):
    from app import create_main_window

    window.presenter.set_zoom(1.5)
    other = create_main_window(settings=window.settings.q)
    other.confirm_on_close = False
    qtbot.addWidget(other)
    assert abs(other.explain_label.font().pointSizeF() - window.explain_label.font().pointSizeF()) < 0.01
    assert other.explain_label.font().pointSizeF() > 14.0  # 10 pt × 1.5
    other.close()


def test_f11_presents_and_esc_restores_the_layout(window, qtbot):
    sides = window.presenter.side_panels()
    assert all(s.isVisible() for s in sides)
    pt = window.explain_label.font().pointSizeF()
    window.presenter.present_action.trigger()  # View → Present (F11)
    qtbot.waitUntil(lambda: window.presenter.presenting)
    assert window.isFullScreen()
    assert not any(s.isVisible() for s in sides)
    assert abs(window.explain_label.font().pointSizeF() - pt * PRESENT_BOOST) < 0.05
    assert window.presenter.present_action.isChecked()
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert not window.presenter.presenting and not window.isFullScreen()
    assert all(s.isVisible() for s in sides)
    assert abs(window.explain_label.font().pointSizeF() - pt) < 0.01
    window.presenter.present_action.trigger()
    assert window.presenter.presenting
    window.presenter.present_action.trigger()  # F11 again toggles back
    assert not window.presenter.presenting and all(s.isVisible() for s in sides)


def _double_click(qtbot, hm) -> None:
    """Press, release, double-click, release on a cell, as a real mouse sends them (pyqtgraph acts on the last
    release after a double-click event)."""
    settled(qtbot)  # the layout settles (full screen)
    view = hm.graphics.viewport()
    pos = QPointF(hm.graphics.mapFromScene(hm.cell_center_scene(0, 0)))
    glob = QPointF(view.mapToGlobal(pos.toPoint()))
    left, none = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    for kind, buttons in (
        (QEvent.Type.MouseButtonPress, left),
        (QEvent.Type.MouseButtonRelease, Qt.MouseButton.NoButton),
        (QEvent.Type.MouseButtonDblClick, left),
        (QEvent.Type.MouseButtonRelease, Qt.MouseButton.NoButton),
    ):
        QApplication.sendEvent(view, QMouseEvent(kind, pos, glob, left, buttons, none))


def test_double_click_shows_one_map_and_arrows_step_through_the_pipeline(window, qtbot):
    p = window.presenter
    p.set_presenting(True)
    _double_click(qtbot, window.pipeline.heatmaps["weights"])
    solo = p.solo
    assert solo is not None and solo.isVisible() and solo.name == "weights"
    assert solo.geometry() == window.centralWidget().rect()  # the whole tab area
    np.testing.assert_array_equal(solo.heatmap.values(), window.playground.result.weights)
    qtbot.keyClick(solo, Qt.Key.Key_Right)
    assert solo.name == "output"
    np.testing.assert_array_equal(solo.heatmap.values(), window.playground.result.output)
    qtbot.keyClick(solo, Qt.Key.Key_Right)  # stops at ⑤
    assert solo.name == "output"
    for _ in range(4):
        qtbot.keyClick(solo, Qt.Key.Key_Left)
    assert solo.name == STEPS[0] == "scores"
    np.testing.assert_array_equal(solo.heatmap.values(), window.playground.result.scores)
    # an edit (undo) while it is shown redraws it
    window.edits.apply("scale", lambda m: m.set_scale(1.0))
    qtbot.keyClick(solo, Qt.Key.Key_Right)
    np.testing.assert_array_equal(solo.heatmap.values(), window.playground.result.scaled)
    window.undo_action.trigger()
    np.testing.assert_allclose(solo.heatmap.values(), window.playground.result.scaled)
    qtbot.keyClick(solo, Qt.Key.Key_Escape)  # first Esc: back to all the maps, still presenting
    assert not solo.isVisible() and p.presenting
    qtbot.keyClick(window, Qt.Key.Key_Escape)  # second: the normal layout
    assert not p.presenting and all(s.isVisible() for s in p.side_panels())


def test_double_click_on_the_solo_map_returns(window, qtbot):
    p = window.presenter
    _double_click(qtbot, window.pipeline.heatmaps["scores"])
    assert p.solo.isVisible()
    _double_click(qtbot, p.solo.heatmap)
    assert not p.solo.isVisible()
