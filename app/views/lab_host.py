"""How the main window holds the Lab tab: the ``ScalingLab`` model from the start (Qt-free, torch-free), the tab's
widgets when it is first opened (pyqtgraph plots; a run imports torch in its worker), the devices the window
detected, the theme, the status bar, and stopping a run when the window closes. The window itself only creates
a ``LabHost`` and calls ``shutdown`` on close.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

from ..models.scaling_lab import ScalingLab
from ..workers import QtRunner

if TYPE_CHECKING:
    from .lab_tab import LabTab

TAB_TITLE = "Lab"


class LabHost:
    """The Lab in ``window`` (a ``MainWindow``: ``tabs``, ``playground``, ``theme``, ``statusBar``)."""

    def __init__(self, window: Any) -> None:
        self.window = window
        self.model = ScalingLab(runner=QtRunner(), devices=window.playground.devices)
        self._tab: LabTab | None = None
        self._holder = QWidget()
        QVBoxLayout(self._holder).addWidget(QLabel("Loading the scaling lab…"))
        window.tabs.addTab(self._holder, TAB_TITLE)
        window.tabs.currentChanged.connect(self._on_tab_changed)
        window.playground.events.devices.connect(self._follow_devices)
        window.theme.changed.connect(self._on_theme)
        self.model.events.status.connect(self._show_status)

    @property
    def tab(self) -> LabTab:
        """The Lab's widgets, created on first use."""
        if self._tab is None:
            from .lab_tab import LabTab

            tabs = self.window.tabs
            tab = LabTab(self.model)
            idx, current = tabs.indexOf(self._holder), tabs.currentIndex()
            tabs.blockSignals(True)
            tabs.removeTab(idx)
            tabs.insertTab(idx, tab, TAB_TITLE)
            tabs.setCurrentIndex(current)
            tabs.blockSignals(False)
            self._holder.deleteLater()
            self._tab = tab
            tab.set_dark(self.window.theme.dark)
        return self._tab

    def _is_current(self) -> bool:
        current = self.window.tabs.currentWidget()
        return current is not None and current in (self._holder, self._tab)

    def _on_tab_changed(self, _index: int) -> None:
        if self._tab is None and self.window.tabs.currentWidget() is self._holder:
            QTimer.singleShot(0, lambda: self.tab)
        if self._is_current():
            self._show_status()

    def _show_status(self, *_: object) -> None:
        if self._is_current():
            self.window.statusBar().showMessage(f"Lab: {self.model.status}")

    def _follow_devices(self, *_: object) -> None:
        if not self.model.is_running:
            self.model.set_available_devices(self.window.playground.devices)

    def _on_theme(self, dark: bool) -> None:
        if self._tab is not None:
            self._tab.set_dark(dark)

    def show(self) -> LabTab:
        """Switch to the Lab tab (built if needed) and lay it out."""
        tab = self.tab
        self.window.tabs.setCurrentWidget(tab)
        for _ in range(3):
            QApplication.processEvents()
        return tab

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Cancel a running measurement and wait for its worker (the window's close)."""
        self.model.shutdown(timeout_s)

    def self_test(self, out_dir: Path) -> list[Path]:
        """The Lab tab and its plots as PNGs (``--self-test``), then back to the first tab."""
        tab = self.show()
        written = tab.self_test(Path(out_dir))
        self.window.tabs.setCurrentIndex(0)
        return written
