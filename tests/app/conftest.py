"""A real main window per test, with its own QSettings file, closed without the unsaved-changes prompt."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings


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
