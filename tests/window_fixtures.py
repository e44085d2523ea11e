"""A real main window per test, with its own QSettings file, closed without the unsaved-changes prompt."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from qt_settle import caught_up

from app.widgets.qt_compat import protect_singletons

protect_singletons()  # shiboken6 6.12.0 on Python 3.11 drops references to None; see app/widgets/qt_compat.py


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item):
    """Close the widgets a test gave ``qtbot.addWidget`` before pytest-qt lets Qt process events at teardown.

    qtbot holds them by weak reference. A widget the test no longer references can be garbage in a reference
    cycle, not yet collected and still shown: Qt then paints it, and when Python's cyclic collector runs during
    that paint it destroys the widget in the middle of it ("QPaintDevice: Cannot destroy paint device that is being
    painted", then a segfault in the next test's repaint; seen after a change of heatmap internals moved when the
    collector ran). Closed first, it is never painted again."""
    for ref, _before_close in getattr(item, "qt_widgets", []):
        widget = ref()
        if widget is not None:
            widget.close()
    return (yield)


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from app import create_main_window

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = create_main_window(settings=settings)
    w.confirm_on_close = False  # qtbot closes widgets before this fixture's teardown: never block on a dialog
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.undo_stack.setClean()
    w.setWindowModified(False)
    w.close()


@pytest.fixture
def panel(window, qtbot, monkeypatch):
    """The window's Training tab, shown; no untrained preview (each test controls its runs), full speed. The
    palette is the application's: the next test gets a light one back."""
    window.training_host.preview_untrained = False  # read when the panel is built, just below
    p = window.training_panel
    window.tabs.setCurrentWidget(p)
    qtbot.waitExposed(p)
    window.training.set_speed(None)  # as fast as possible
    yield p
    window.set_theme("light", save=False)


@pytest.fixture
def finish_run(panel, qtbot):
    """``finish_run(config)``: train ``config`` in the Training tab to its end (asserting it finished, not stopped
    or failed) and return the panel."""

    def run(config):
        panel.form.set_config(config)
        assert panel.session.start()
        qtbot.waitUntil(lambda: panel.session.run_state in ("finished", "stopped", "error"), timeout=60_000)
        assert panel.session.run_state == "finished", panel.session.last_error
        caught_up(qtbot, panel.window())  # every view has drawn the run's end
        return panel

    return run
