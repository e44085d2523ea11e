"""How the main window holds the Experiments tab, beside Training: the ``ExperimentSession`` model from the start
(Qt-free, torch-free; its runs train through the window's kind of runner, ``QtRunner``), the tab's widgets when it
is first opened, the theme, the status bar, and stopping a run when the window closes (it watches the window hide
on close, so the window needs no more than the one line that creates the host).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.experiments.model.session import ExperimentSession
from app.widgets.tab_host import LazyTabHost
from app.widgets.workers import QtRunner

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from app.experiments.qt.tab import ExperimentTab
    from app.widgets.window_api import HostWindow

TAB_TITLE = "Experiments"


class ExperimentsHost(LazyTabHost):
    """The Experiments tab in ``window``, right after the Training tab."""

    title = TAB_TITLE
    loading_text = "Loading the experiments…"

    def __init__(self, window: HostWindow, holder: QWidget | None = None) -> None:
        super().__init__(window, ExperimentSession(runner=QtRunner()), holder=holder)

    def make_tab(self) -> ExperimentTab:
        from app.experiments.qt.tab import ExperimentTab

        return ExperimentTab(self.model)
