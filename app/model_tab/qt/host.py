"""How the main window holds the Model tab: the ``InspectSession`` from the start (Qt-free, torch-free until a
model is opened), the tab's widgets when first opened, the theme, the status bar, the recent folders in the
window's settings, "Open this head in the Playground" as one undo step of the window's Playground, and a lesson's
cover over the detectors' scores or the scan (``follow_cover``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from app.common.paths import data_dir
from app.model_tab.model.playground_head import PlaygroundHead
from app.model_tab.model.session import InspectSession
from app.playground.model.concealment import SCAN_REVEALS, Concealment
from app.widgets.tab_host import LazyTabHost
from app.widgets.window_api import HostWindow
from app.widgets.workers import QtRunner

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from app.model_tab.qt.tab import ModelTab
    from app.playground.model.playground import PlaygroundModel

TAB_TITLE = "Model"
RECENT_KEY = "models/recent"


class PlaygroundEdits(Protocol):
    """The window's undoable edits of its Playground: ``apply(title, change)`` runs ``change`` on the
    ``PlaygroundModel`` as one undo step; False when refused."""

    def apply(self, text: str, fn: Callable[[PlaygroundModel], Any], /) -> bool: ...


class ModelTabWindow(HostWindow, Protocol):
    """What the Model tab uses of the window beyond a tab host's: the Playground (its model, its undoable edits,
    its tab) to open a real head in."""

    playground: PlaygroundModel

    @property
    def edits(self) -> PlaygroundEdits: ...

    @property
    def tab(self) -> QWidget: ...


class InspectHost(LazyTabHost):
    """The Model tab in ``window``."""

    title = TAB_TITLE
    loading_text = "Loading the model inspector…"
    status_prefix = "Model: "

    window: ModelTabWindow

    def __init__(self, window: ModelTabWindow, holder: QWidget | None = None) -> None:
        saved = window.settings.q.value(RECENT_KEY, []) or []
        recent = [saved] if isinstance(saved, str) else [str(r) for r in saved] if isinstance(saved, list) else []
        session = InspectSession(runner=QtRunner(), own_folders=[data_dir(create=False) / "models"], recent=recent)
        super().__init__(window, session, holder=holder)
        session.events.load.connect(self._remember_recent)
        follow_cover(session, Concealment.of(window.playground))

    def make_tab(self) -> ModelTab:
        from app.model_tab.qt.tab import ModelTab

        return ModelTab(self.model, open_head=self.open_selected_head, start_dir=self.window.settings.last_dir())

    def _remember_recent(self) -> None:
        if self.model.recent:
            self.window.settings.q.setValue(RECENT_KEY, list(self.model.recent))

    def open_selected_head(self) -> bool:
        """Hand the picked head's real q, k, v (scale, mask, title) to the Playground as one undo step, then show
        the Playground; a head the Playground cannot show is refused in the status bar."""
        try:
            head = self.model.head_for_playground()
        except ValueError as exc:
            self.window.statusBar().showMessage(f"⚠ {exc}", 8000)
            return False
        ok = self.window.edits.apply(f"Open {head.title}", lambda m: apply_head(m, head))
        if ok:
            self.window.tabs.setCurrentWidget(self.window.tab)
            note = f" ({head.note})" if head.note else ""
            self.window.statusBar().showMessage(f"The Playground shows {head.title}{note}. Ctrl+Z returns.", 10000)
        return bool(ok)


def follow_cover(session: InspectSession, concealment: Concealment) -> None:
    """A lesson's question that covers ``detect`` or ``scan`` (the window's one ``Concealment``, which the Learn dock
    sets) withholds the detectors' scores or the scan's loss changes in the Model tab, saying why, until answered."""

    def follow() -> None:
        session.heads.withhold(concealment.withheld_message("detect"), concealment.withheld_message(*SCAN_REVEALS))

    concealment.events.changed.connect(follow)
    follow()


def apply_head(model: Any, head: PlaygroundHead) -> None:
    """Load ``head`` into a ``PlaygroundModel`` (one head; its preset brings the inputs, the scale and the mask, so
    the Playground's story stays the head's until something is edited). Called inside one undo step."""
    model.set_heads(1)
    model.load_preset(head.preset, head.options)
