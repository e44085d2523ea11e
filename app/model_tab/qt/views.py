"""The Model tab's three views of one trace: every head (one mosaic, layers and heads from 0), one head large (a
heatmap with hover), and a layer's flow lines. Each follows the session's events and draws what the session
holds (``app.model_tab.model.views`` derives the data); hovering reports the query position to the session."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from app.common.flow import FlowData
from app.common.titles import ExportContext
from app.model_tab.model.session import InspectSession
from app.model_tab.model.views import head_blocked, hover_text, layer_flow, off_text, position_labels, trace_text
from app.widgets.flow.view import FlowView
from app.widgets.frame import RedrawWhenShown
from app.widgets.grid.mosaic import MosaicGrid
from app.widgets.heatmap.view import HeatmapWidget


def trace_context(session: InspectSession) -> ExportContext | str:
    """What an export of the Model tab names beside its title (which already names the model): the text."""
    if session.trace is None:
        return ""
    return trace_text(session.trace)


class HeadsGridView(RedrawWhenShown, MosaicGrid):
    """Every layer × head of the trace as one mosaic (layers and heads from 0); a click picks the head
    (``session.select_head``), which is outlined."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent, first_index=0)
        self.session = session
        self.readout = ""
        self.headClicked.connect(self._pick)
        self.cellHovered.connect(self._hovered)
        session.events.trace.connect(self.request_redraw)
        session.events.selected.connect(lambda: self.set_picked(session.selected))
        for sig in (session.heads.events.detection, session.heads.events.kind, session.heads.events.cover):
            sig.connect(lambda: self.set_marked(set(session.heads.heads_above())))
        self.show_message("No model yet: pick one on the left (or Open folder…).")

    def redraw(self) -> None:
        self._stale = False
        t = self.session.trace
        if t is None:
            return
        self.set_maps(t.attentions, position_labels(t), causal=t.mask(0) is not None)
        self.set_picked(self.session.selected)
        self.set_disabled_heads(set(t.ablated))  # switched off in the Detect view
        self.set_marked(set(self.session.heads.heads_above()))  # the Detect view's detector, above its threshold

    def _pick(self, layer: int, head: int) -> None:
        if self.session.trace is not None:
            self.session.select_head(layer, head)

    def _hovered(self, layer: int, head: int, query: int, key: int) -> None:
        t = self.session.trace
        self.readout = hover_text(t, layer, head, query, key) if t is not None and layer >= 0 else ""
        self.session.hover(query if layer >= 0 else None)


class HeadMapView(RedrawWhenShown, HeatmapWidget):
    """The picked head large: its weights with the tokens on both axes, blocked cells hatched, numbers where they
    fit; hovering a cell says the weight and moves the next-token list to that query."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent, title="Pick a head in the grid")
        self.session = session
        self.readout = ""
        self.cellHovered.connect(self._hovered)
        self.export_extras = lambda: {"context": trace_context(session)}
        for name in ("trace", "selected"):
            getattr(session.events, name).connect(self.request_redraw)

    def redraw(self) -> None:
        self._stale = False
        t = self.session.trace
        if t is None:
            return
        layer, head = self.session.selected
        labels = position_labels(t)
        off = f" ({off_text(t.ablated)})" if t.ablated else ""
        self.set_data(t.attentions[layer, head], labels, labels, blocked=head_blocked(t, layer), kind="weights",
                      title=f"{t.name}: layer {layer} head {head}, softmax weights{off}")

    def _hovered(self, row: int, col: int) -> None:
        t = self.session.trace
        layer, head = self.session.selected
        self.readout = hover_text(t, layer, head, row, col) if t is not None and row >= 0 else ""
        self.session.hover(row if row >= 0 else None)


class LayerFlowView(RedrawWhenShown, FlowView):
    """The picked head's layer as flow lines: every head of it, coloured, hover a token to isolate its lines."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        for name in ("trace", "selected"):
            getattr(session.events, name).connect(self.request_redraw)
        self.redraw()

    def empty_text(self) -> str:
        return "<b>Flow</b> — no trace yet: load a model; its layer's heads are drawn here as lines."

    def current_data(self) -> FlowData | None:
        t = self.session.trace
        return None if t is None else layer_flow(t, self.session.selected[0])

    def export_context(self) -> ExportContext | str:
        return trace_context(self.session)
