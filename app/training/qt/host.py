"""How the main window holds the Training tab: the ``TrainingSession`` model from the start (Qt-free; scripts reach
it as ``w.training``), the panel's widgets when the tab is first opened (the panel warms torch up in the
background), the theme, the status bar, and stopping a run when the window closes (``tab_host.LazyTabHost``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from app.training.model.session import TrainingSession
from app.widgets.tab_host import LazyTabHost
from app.widgets.workers import QtRunner

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from app.training.qt.panel import TrainingPanel
    from app.widgets.window_api import HostWindow

TAB_TITLE = "Training"


class TrainingHost(LazyTabHost):
    """The Training tab in ``window``. ``warm_up_torch`` and ``preview_untrained`` are the panel's options
    (``TrainingPanel``), read when the panel is built: a test may change them on the host until then."""

    title = TAB_TITLE
    loading_text = "Loading the training panel (imports torch)…"
    status_prefix = "Training: "

    def __init__(self, window: HostWindow, holder: QWidget | None = None, *, warm_up_torch: bool = True,
                 preview_untrained: bool = True) -> None:
        super().__init__(window, TrainingSession(runner=QtRunner()), holder=holder)
        self.warm_up_torch, self.preview_untrained = warm_up_torch, preview_untrained

    def make_tab(self) -> TrainingPanel:
        from app.training.qt.panel import TrainingPanel

        return TrainingPanel(self.model, settings=self.window.settings, warm_up_torch=self.warm_up_torch,
                             preview_untrained=self.preview_untrained)

    @property
    def built(self) -> TrainingPanel | None:
        """The panel if it was built (the window closes it), else None."""
        return self._tab

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop the run and wait for the panel's threads (its warm-up too), or the session's alone."""
        if self._tab is not None:
            self._tab.shutdown()
        else:
            self.model.shutdown(timeout_s)

    def self_test(self, out_dir: Path) -> list[Path]:
        """The Training tab's views as PNGs (``--self-test``); the caller returns to the first tab."""
        return list(self.show().self_test(Path(out_dir)))
