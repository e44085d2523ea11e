"""The Playground's Flow view: the shared flow drawing (``app.widgets.flow.view.FlowView``) following the
Playground's result, every head of the multi-head split when Heads > 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QWidget

from app.common.flow import FlowData
from app.common.titles import ExportContext
from app.playground.model.concealment import FLOW_REVEALS, Concealment
from app.playground.model.export_context import playground_context
from app.playground.model.playground import PlaygroundModel
from app.playground.views.flow.model import playground_flow
from app.widgets.flow.view import FlowView
from app.widgets.frame import RedrawWhenShown

if TYPE_CHECKING:
    from app.playground.qt.commands import UndoableEdits


class PlaygroundFlowView(RedrawWhenShown, FlowView):
    """The Playground's flow: follows the model's ``result`` event (every head when Heads > 1)."""

    def __init__(self, model: PlaygroundModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.concealment = Concealment.of(model)
        model.events.result.connect(self.request_redraw)
        self.concealment.events.changed.connect(self.request_redraw)
        self.redraw()

    def current_data(self) -> FlowData | None:
        return None if self.withheld() else playground_flow(self.model)

    def withheld(self) -> str:
        return self.concealment.withheld_message(*FLOW_REVEALS)

    def export_context(self) -> ExportContext | str:
        return playground_context(self.model)


def build(model: PlaygroundModel, edits: UndoableEdits) -> QWidget:
    """The view for the Playground's tab (``app/playground/views/registry.py``)."""
    return PlaygroundFlowView(model)
