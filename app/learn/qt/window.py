"""What the Learn dock and the first-launch offer use of the main window, as Protocols: the shell hands them its
window; typed against these, the Learn feature never imports the shell (``app/widgets/window_api.py`` has the part
every tab host shares). The types named here are imported for the type checker only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from app.widgets.window_api import HostWindow

if TYPE_CHECKING:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QScreen
    from PySide6.QtWidgets import QDockWidget, QMenuBar, QStatusBar

    from app.lab.qt.host import LabHost
    from app.model_tab.qt.host import InspectHost
    from app.playground.model.playground import PlaygroundModel
    from app.playground.qt.commands import UndoableEdits
    from app.playground.tab import PlaygroundTab
    from app.training.model.session import TrainingSession
    from app.training.qt.panel import TrainingPanel
    from app.widgets.settings import Settings


class OfferTaker(Protocol):
    """The Learn dock as the offer's buttons see it (``app.learn.qt.dock.Learn``)."""

    def take_offer(self) -> None: ...

    def dismiss_offer(self) -> None: ...


class OfferWindow(Protocol):
    """The first-launch offer's window: its settings (was the offer dismissed?), its status bar (where the offer
    sits) and its Learn dock (installed when the offer is taken)."""

    settings: Settings

    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt API)

    @property
    def learn(self) -> OfferTaker: ...


class LearnWindow(HostWindow, Protocol):
    """The Learn dock's window: a lesson walks the Playground (its model, its undoable edits, its tab's views) and
    shows the tab a step talks about (Training, Lab, Model); the dock docks in it, its menus get the entries."""

    playground: PlaygroundModel
    edits: UndoableEdits
    tab: PlaygroundTab

    @property
    def training(self) -> TrainingSession: ...

    @property
    def training_panel(self) -> TrainingPanel: ...

    @property
    def lab(self) -> LabHost: ...

    @property
    def inspect(self) -> InspectHost: ...

    def menuBar(self) -> QMenuBar: ...  # noqa: N802 (Qt API)

    def screen(self) -> QScreen: ...

    def width(self) -> int: ...

    def addDockWidget(self, area: Qt.DockWidgetArea, dock_widget: QDockWidget, /) -> None: ...  # noqa: N802
