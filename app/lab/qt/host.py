"""How the main window holds the Lab tab: the ``ScalingLab`` model from the start (Qt-free, torch-free), the tab's
widgets when it is first opened (pyqtgraph plots; a run imports torch in its worker), the devices the window
detected, the theme, the status bar, and stopping a run when the window closes (``tab_host.LazyTabHost``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from app.lab.model import ScalingLab
from app.widgets.tab_host import LazyTabHost
from app.widgets.window_api import HostWindow
from app.widgets.workers import QtRunner

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from app.lab.qt.tab import LabTab
    from app.playground.model.playground import PlaygroundModel

TAB_TITLE = "Lab"


class LabWindow(HostWindow, Protocol):
    """What the Lab uses of the window beyond a tab host's: the Playground's model, whose detected devices the
    measurements follow."""

    playground: PlaygroundModel


class LabHost(LazyTabHost):
    """The Lab in ``window``; the measurements follow the devices the window detects."""

    title = TAB_TITLE
    loading_text = "Loading the scaling lab…"
    status_prefix = "Lab: "

    window: LabWindow

    def __init__(self, window: LabWindow, holder: QWidget | None = None) -> None:
        super().__init__(window, ScalingLab(runner=QtRunner(), devices=window.playground.devices), holder=holder)
        window.playground.events.devices.connect(self._follow_devices)

    def make_tab(self) -> LabTab:
        from app.lab.qt.tab import LabTab

        return LabTab(self.model)

    def _follow_devices(self, *_: object) -> None:
        if not self.model.is_running:
            self.model.set_available_devices(self.window.playground.devices)

    def self_test(self, out_dir: Path) -> list[Path]:
        """The Lab tab and its plots as PNGs (``--self-test``), then back to the first tab."""
        tab = self.show()
        written = tab.self_test(Path(out_dir))
        self.window.tabs.setCurrentIndex(0)
        return written
