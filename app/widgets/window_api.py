"""What the window's helpers (the Learn dock, presentation mode) use of the main window, as a Protocol.

``MainWindow`` builds those helpers and hands itself to them; typed against this Protocol they never import the
window module back, so the import graph stays acyclic (a test fails on any cycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenuBar, QStatusBar, QTabWidget, QWidget

    from app.playground.model.playground import PlaygroundModel
    from app.playground.tab import PlaygroundTab
    from app.widgets.settings import Settings
    from app.widgets.theme import ThemeController


class WindowAPI(Protocol):
    """The main window as its helpers see it: its settings and theme, its tabs and the Playground's, and the
    ``QMainWindow`` calls they make (menus, status bar, docks, event filters)."""

    settings: Settings
    theme: ThemeController
    tabs: QTabWidget
    tab: PlaygroundTab
    playground: PlaygroundModel
    export_pipeline_action: Any
    pipeline: Any
    """The Steps view (``PipelineView``)."""
    multihead: Any
    """The Multi-head view."""
    training_host: Any
    """The Training tab's host (``built``: its panel once opened, else None)."""

    def menuBar(self) -> QMenuBar: ...  # noqa: N802 (Qt API)

    def statusBar(self) -> QStatusBar: ...  # noqa: N802

    def centralWidget(self) -> QWidget: ...  # noqa: N802

    def screen(self) -> Any: ...

    def addDockWidget(self, *args: Any) -> None: ...  # noqa: N802

    def addAction(self, action: Any) -> None: ...  # noqa: N802

    def installEventFilter(self, watched: Any) -> None: ...  # noqa: N802
