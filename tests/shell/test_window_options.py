"""The window's public contract for scripts: constructor options instead of class attributes changed for every later
window, and a public ``closed`` instead of a private flag read by its tab hosts."""

from __future__ import annotations

import pytest
from psygnal import Signal
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMainWindow, QTabWidget


def _window(tmp_path, name: str, **options):
    from app import create_main_window

    return create_main_window(settings=QSettings(str(tmp_path / f"{name}.ini"), QSettings.Format.IniFormat),
                              **options)


def test_options_configure_one_window_not_the_next(qtbot, tmp_path) -> None:
    quiet = _window(tmp_path, "quiet", detect_devices=False, warm_up_torch=False, preview_untrained=False,
                    confirm_on_close=False)
    plain = _window(tmp_path, "plain", confirm_on_close=False)
    for w in (quiet, plain):
        qtbot.addWidget(w)
    assert (quiet.detect_devices, quiet.confirm_on_close) == (False, False)
    assert (quiet.training_host.warm_up_torch, quiet.training_host.preview_untrained) == (False, False)
    # the defaults are untouched for a window made afterwards (a class attribute set would have carried over)
    assert plain.detect_devices and plain.training_host.warm_up_torch and plain.training_host.preview_untrained
    quiet.start_device_detection()  # switched off: no worker
    assert getattr(quiet, "device_worker", None) is None


def test_an_unknown_option_is_refused(qapp) -> None:
    from app import create_main_window

    with pytest.raises(TypeError, match="detect_gpus"):
        create_main_window(detect_gpus=False)


def test_the_training_panel_takes_its_options(qtbot) -> None:
    from app.training.model.session import TrainingSession
    from app.training.qt.panel import TrainingPanel
    from app.widgets.workers import QtRunner

    panel = TrainingPanel(TrainingSession(runner=QtRunner()), warm_up_torch=False, preview_untrained=False)
    qtbot.addWidget(panel)
    assert panel.warm_worker is None and not panel.preview_untrained


def test_closed_says_the_window_accepted_its_close(qtbot, tmp_path) -> None:
    w = _window(tmp_path, "w", detect_devices=False, confirm_on_close=False)
    qtbot.addWidget(w)
    w.show()
    assert w.closed is False
    w.close()
    assert w.closed is True


class _Events:
    status = Signal(str)


class _Model:
    """A tab host's Qt-free model, as small as it can be: its status and a shutdown that is counted."""

    def __init__(self) -> None:
        self.events = _Events()
        self.status = ""
        self.shutdowns = 0

    def shutdown(self, timeout_s: float = 10.0) -> None:
        self.shutdowns += 1


class _Window(QMainWindow):
    """A window that offers only what ``HostWindow`` names: ``closed`` is its one way to say it closed."""

    def __init__(self) -> None:
        super().__init__()
        from app.widgets.settings import Settings
        from app.widgets.theme import ThemeController

        self.settings = Settings(QSettings())
        self.tabs = QTabWidget()
        self.setCentralWidget(self.tabs)
        self.theme = ThemeController(self, "light")
        self.closed = False


def test_a_tab_host_stops_its_model_when_the_window_says_closed(qtbot) -> None:
    from app.widgets.tab_host import LazyTabHost

    window = _Window()
    qtbot.addWidget(window)
    model = _Model()
    LazyTabHost(window, model)
    window.show()
    window.hide()  # hidden but not closed (minimised, another desktop): the work goes on
    assert model.shutdowns == 0
    window.show()
    window.closed = True
    window.hide()
    assert model.shutdowns == 1
