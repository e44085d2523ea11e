"""What a tab host (``tab_host.LazyTabHost``) uses of the main window, as a Protocol: the generic part of the window
only (its settings, its theme, its tab widget, its status bar, whether it closed). It names no feature: a feature
that needs more of the window declares its own narrow Protocol in its own package (``app/learn/qt/window.py``,
``app/lab/qt/host.py``'s ``LabWindow`` …), and the shell, which builds the window, is the one place that hands it
over. Typed against a Protocol, nothing below the shell imports the window module back (the import graph stays
acyclic: a test fails on any cycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QStatusBar, QTabWidget, QWidget

    from app.widgets.settings import Settings
    from app.widgets.theme import ThemeController


class HostWindow(Protocol):
    """The main window as a tab host sees it. ``closed`` is True once the window accepted its close (it is hidden,
    its hosts are shutting down): background work that finishes later must then change nothing."""

    settings: Settings
    theme: ThemeController
    tabs: QTabWidget

    @property
    def closed(self) -> bool: ...

    def window(self) -> QWidget:
        """The window as a widget (Qt's ``QWidget.window()``: a main window is its own): the parent of the
        objects, dialogs and actions made for it."""
        ...

    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt API)

    def installEventFilter(self, filter_obj: QObject, /) -> None: ...  # noqa: N802
