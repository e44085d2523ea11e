"""The one way a view gets the theme: ``follow_theme`` (no window pushing ``set_dark`` down). A view built after the
theme changed is dressed in it; a deleted view is dropped; a widget made for a file stays light."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.theme import DARK, LIGHT, ThemeController, current_colors, follow_theme


class _View(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[bool] = []
        follow_theme(self._restyle)

    def _restyle(self, c) -> None:
        self.seen.append(c.dark)


def _background(hm: HeatmapWidget) -> str:
    return QColor(hm.graphics.backgroundBrush().color()).name()


@pytest.fixture
def theme(qtbot, request):
    owner = QWidget()
    qtbot.addWidget(owner)
    controller = ThemeController(owner, "light")
    request.addfinalizer(lambda: (controller.apply(False), controller.release()))
    return controller


def test_a_view_follows_from_its_construction_and_after_every_change(theme, qtbot):
    early = _View()
    qtbot.addWidget(early)
    theme.apply(True)
    late = _View()  # built while dark (a lazy tab, a lesson's cover): dressed at once, nobody passes it the theme
    qtbot.addWidget(late)
    theme.apply(False)
    assert early.seen == [False, True, False] and late.seen == [True, False]
    assert current_colors() is LIGHT


def test_a_heatmap_follows_and_one_made_for_a_file_stays_light(theme, qtbot):
    on_screen, for_file = HeatmapWidget(title="a"), HeatmapWidget(title="b", context_menu=False, dark=False)
    qtbot.addWidget(on_screen)
    qtbot.addWidget(for_file)
    theme.apply(True)
    assert _background(on_screen) == DARK.plot_bg and _background(for_file) == LIGHT.plot_bg
    theme.apply(False)
    assert _background(on_screen) == LIGHT.plot_bg


def test_a_deleted_view_is_no_longer_restyled(theme, qtbot):
    view = _View()
    seen = view.seen
    view.deleteLater()
    qtbot.wait(10)  # the event loop turns once; the deletion itself is sent below
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    theme.apply(True)  # would raise on the deleted C++ object if it were still called
    assert seen == [False]


def test_views_freed_without_a_theme_change_leave_no_reference_behind(theme, qtbot):
    """Followers are dropped when their objects are freed, not only at the next theme change."""
    import gc

    from app.widgets import theme as theme_module

    gc.collect()
    before = len(theme_module._followers)
    for _ in range(200):
        view = _View()
        view.setParent(None)
        del view
    gc.collect()
    _View()  # a new follower: the dead ones are dropped as it joins
    assert len(theme_module._followers) <= before + 2
