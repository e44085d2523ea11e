"""Attention Playground, the desktop app (PySide6 + pyqtgraph). All maths lives in ``attention_core``."""

from __future__ import annotations

from typing import Any

from app.common.version import __version__

__all__ = ["__version__", "create_main_window"]


def create_main_window(**kwargs: Any) -> Any:
    """Build and return the ready main window (a QApplication must exist). Used by tests and scripts. The keyword
    options are ``MainWindow``'s (docs/scripting.md): ``settings``, ``preset``, ``detect_devices``, ``warm_up_torch``,
    ``preview_untrained``, ``confirm_on_close``; an unknown one raises ``TypeError``."""
    from app.shell.main_window import MainWindow
    from app.widgets.qt_compat import delete_at_exit

    window = MainWindow(**kwargs)
    delete_at_exit(window)  # before PySide's exit hook, which can segfault on our pyqtgraph items (qt_compat)
    return window
