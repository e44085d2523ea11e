"""``LazyTabHost``: how the main window holds a tab whose widgets are heavy (pyqtgraph plots, grids): its Qt-free
model from the start, a "Loading…" placeholder in the tab bar, the widgets built when the tab is first opened, the
theme, the status bar while the tab is current, and the model's shutdown when the window closes (it watches the
window hide once ``_closed`` is set, so the window needs only the line that creates the host). The Lab and the
Experiments tabs are the two.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget


class LazyTabHost(QObject):
    """Subclasses set ``title`` and ``loading_text``, create ``self.model`` (with ``events.status``, ``status``
    and ``shutdown(timeout_s)``) before calling ``__init__``, and build the widgets in ``make_tab``."""

    title = ""
    loading_text = "Loading…"
    status_prefix = ""

    def __init__(self, window: Any, model: Any, after: QWidget | None = None) -> None:
        super().__init__(window)
        self.window = window
        self.model = model
        self._tab: Any = None
        self._holder = QWidget()
        QVBoxLayout(self._holder).addWidget(QLabel(self.loading_text))
        at = window.tabs.indexOf(after) if after is not None else -1
        if at >= 0:
            window.tabs.insertTab(at + 1, self._holder, self.title)
        else:
            window.tabs.addTab(self._holder, self.title)
        window.tabs.currentChanged.connect(self._on_tab_changed)
        window.theme.changed.connect(self._on_theme)
        window.installEventFilter(self)
        model.events.status.connect(self._show_status)

    def make_tab(self) -> Any:
        raise NotImplementedError

    @property
    def tab(self) -> Any:
        """The tab's widgets, created on first use (in the placeholder's place, the current tab kept)."""
        if self._tab is None:
            tabs = self.window.tabs
            tab = self.make_tab()
            idx, current = tabs.indexOf(self._holder), tabs.currentIndex()
            tabs.blockSignals(True)
            tabs.removeTab(idx)
            tabs.insertTab(idx, tab, self.title)
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
            self.window.statusBar().showMessage(f"{self.status_prefix}{self.model.status}")

    def _on_theme(self, dark: bool) -> None:
        if self._tab is not None:
            self._tab.set_dark(dark)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        # the window's close hides it first (after any "unsaved changes?" question): then no work may go on
        if watched is self.window and event.type() == QEvent.Type.Hide and getattr(self.window, "_closed", False):
            self.shutdown()
        return False

    def show(self) -> Any:
        """Switch to the tab (built if needed) and lay it out."""
        tab = self.tab
        self.window.tabs.setCurrentWidget(tab)
        for _ in range(3):
            QApplication.processEvents()
        return tab

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Cancel the model's running work and wait for its thread."""
        self.model.shutdown(timeout_s)
