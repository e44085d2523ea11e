"""``LazyTabHost``: how the main window holds a tab whose widgets are heavy (pyqtgraph plots, grids): its Qt-free
model from the start, a "Loading…" placeholder in the tab bar, the widgets built when the tab is first opened (they
follow the theme themselves: ``app.widgets.theme.follow_theme``), the status bar while the tab is current, and the
model's shutdown when the window closes (it watches the window hide once it is ``closed``, so the window needs only
the line that creates the host). Training, Experiments, the Lab and the Model tab are the four.

``DeferredHosts``: the window's tabs whose hosts are not even created until used: the tab bar shows their titles
from the first frame, but a host (its module, its model, whatever they import) is made when its tab is first chosen
or the window's attribute for it is first read; it then adopts the placeholder already in the tab bar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QSignalBlocker, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from app.widgets.window_api import HostWindow


class LazyTabHost(QObject):
    """Subclasses set ``title`` and ``loading_text``, create ``self.model`` (with ``events.status``, ``status``
    and ``shutdown(timeout_s)``) before calling ``__init__``, and build the widgets in ``make_tab``."""

    title = ""
    loading_text = "Loading…"
    status_prefix = ""

    def __init__(self, window: HostWindow, model: Any, after: QWidget | None = None,
                 holder: QWidget | None = None) -> None:
        """``holder``: a placeholder already in the window's tab bar (``DeferredHosts``) to adopt; else one is
        added (after the tab ``after``, or last)."""
        super().__init__(window.window())  # the window owns its hosts
        self.window = window
        self._window_widget: QObject = window.window()  # compared by identity: no Qt call once it is deleted
        self.model = model
        self._tab: Any = None
        if holder is not None and window.tabs.indexOf(holder) >= 0:
            self._holder = holder
            if (label := holder.findChild(QLabel)) is not None:
                label.setText(self.loading_text)
        else:
            self._holder = QWidget()
            QVBoxLayout(self._holder).addWidget(QLabel(self.loading_text))
            at = window.tabs.indexOf(after) if after is not None else -1
            if at >= 0:
                window.tabs.insertTab(at + 1, self._holder, self.title)
            else:
                window.tabs.addTab(self._holder, self.title)
        window.tabs.currentChanged.connect(self._on_tab_changed)
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
            with QSignalBlocker(tabs):
                tabs.removeTab(idx)
                tabs.insertTab(idx, tab, self.title)
                tabs.setCurrentIndex(current)
            self._holder.deleteLater()
            self._tab = tab
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

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        # the window's close hides it first (after any "unsaved changes?" question): then no work may go on
        if watched is self._window_widget and event.type() == QEvent.Type.Hide and self.window.closed:
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


class DeferredHosts(QObject):
    """Tabs whose ``LazyTabHost`` is created on first use. ``add(name, title, factory)`` puts a placeholder titled
    ``title`` in ``window.tabs``; ``get(name)`` (or choosing the tab) calls ``factory(placeholder)``, which
    returns the host adopting it (``LazyTabHost(..., holder=placeholder)``); ``on_built(name, host)`` follows."""

    def __init__(self, window: HostWindow, on_built: Callable[[str, Any], None] | None = None) -> None:
        super().__init__(window.window())
        self.window = window
        self._on_built = on_built
        self._factories: dict[str, Callable[[QWidget], Any]] = {}
        self._holders: dict[str, QWidget] = {}
        self.hosts: dict[str, Any] = {}
        """The hosts created so far, by name."""
        window.tabs.currentChanged.connect(self._on_tab_changed)

    def add(self, name: str, title: str, factory: Callable[[QWidget], Any]) -> None:
        holder = QWidget()
        QVBoxLayout(holder).addWidget(QLabel("Loading…"))
        self.window.tabs.addTab(holder, title)
        self._holders[name], self._factories[name] = holder, factory

    def get(self, name: str) -> Any:
        """The host ``name``, created now if it was not yet."""
        if name not in self.hosts:
            host = self._factories[name](self._holders[name])
            self.hosts[name] = host
            if self._on_built is not None:
                self._on_built(name, host)
        return self.hosts[name]

    def _on_tab_changed(self, index: int) -> None:
        current = self.window.tabs.currentWidget()
        for name, holder in self._holders.items():
            if current is holder and name not in self.hosts:
                # the placeholder paints first ("Loading…"); then the host, which builds its tab the same way
                QTimer.singleShot(0, lambda n=name: self._open(n))

    def _open(self, name: str) -> None:
        if self.window.closed:
            return
        host = self.get(name)
        host._on_tab_changed(self.window.tabs.currentIndex())
