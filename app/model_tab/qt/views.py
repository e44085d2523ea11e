"""The Model tab's three views of one trace: every head (one mosaic, layers and heads from 0), one head large (a
heatmap with hover), and a layer's flow lines. Each follows the session's events and draws what the session
holds (``app.model_tab.model.views`` derives the data); hovering reports the query position to the session."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QWidget

from app.common.flow import FlowData
from app.common.titles import ExportContext
from app.model_tab.model.session import InspectSession
from app.model_tab.model.views import (
    grid_block,
    grid_hover_text,
    grid_maps,
    head_blocked,
    head_window,
    hover_text,
    layer_flow,
    off_text,
    position_labels,
    trace_text,
)
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
        self._cell: tuple[int, int] | None = None  # the map cell under the pointer (a long trace's block)
        self.headClicked.connect(self._pick)
        self.cellHovered.connect(self._hovered)
        # bound methods, which the session's events hold weakly: lambdas here kept every grid ever made alive (and
        # reached by the session's events after its widget was deleted)
        session.events.trace.connect(self.request_redraw)
        session.events.selected.connect(self._show_picked)
        for sig in (session.heads.events.detection, session.heads.events.kind, session.heads.events.cover):
            sig.connect(self._show_marked)
        self.show_message("No model yet: pick one on the left (or Open folder…).")

    def _show_picked(self) -> None:
        self.set_picked(self.session.selected)

    def _show_marked(self) -> None:
        self.set_marked(set(self.session.heads.heads_above()))

    def redraw(self) -> None:
        self._stale = False
        t = self.session.trace
        if t is None:
            return
        maps, labels = grid_maps(t)  # a long trace: every head block-pooled (its exact map opens large)
        # a long trace's 336 maps are coloured two layers per event-loop turn (30 MB of new memory at once stalled)
        self.set_maps(maps, labels, causal=t.mask(0) is not None, progressive=t.is_long)
        self.set_picked(self.session.selected)
        self.set_disabled_heads(set(t.ablated))  # switched off in the Detect view
        self.set_marked(set(self.session.heads.heads_above()))  # the Detect view's detector, above its threshold

    def _pick(self, layer: int, head: int) -> None:
        t = self.session.trace
        if t is None:
            return
        self.session.select_head(layer, head)
        if t.is_long and self._cell is not None:  # the head map's window moves to the block clicked: its queries
            block, size = grid_block(t), self.session.map_window[1]  # and its keys (off the diagonal too)
            query, key = (cell * block + block // 2 - size // 2 for cell in self._cell)
            self.session.set_map_window(query, keys=key)

    def _hovered(self, layer: int, head: int, query: int, key: int) -> None:
        t = self.session.trace
        self.readout = grid_hover_text(t, layer, head, query, key) if t is not None and layer >= 0 else ""
        self._cell = (query, key) if layer >= 0 else None
        position = query * grid_block(t) if t is not None and layer >= 0 else query
        self.session.hover(position if layer >= 0 else None)


class HeadMapView(RedrawWhenShown, HeatmapWidget):
    """The picked head large: its weights with the tokens on both axes, blocked cells hatched, numbers where they
    fit; hovering a cell says the weight and moves the next-token list to that query."""

    def __init__(self, session: InspectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent, title="Pick a head in the grid")
        self.session = session
        self.readout = ""
        self.cellHovered.connect(self._hovered)
        self._file_title = ""  # a long trace's window named in a file, without the wheel's gestures
        self.export_extras = lambda: {"context": trace_context(session), "title": self._file_title or None}
        self._start = self._keys = 0  # the first query and key shown (a long trace's window; 0 otherwise)
        for name in ("trace", "selected", "window"):
            getattr(session.events, name).connect(self.request_redraw)
        self.graphics.viewport().installEventFilter(self)

    def redraw(self) -> None:
        self._stale = False
        t = self.session.trace
        if t is None:
            return
        layer, head = self.session.selected
        off = f" ({off_text(t.ablated)})" if t.ablated else ""
        if t.is_long:  # only the window's exact weights are computed (its queries' rows), never the whole map
            values, rows, cols, self._start, self._keys = head_window(t, layer, head, *self.session.map_window,
                                                                      keys=self.session.map_keys)
            where = f"positions {self._start:,}–{self._start + len(rows) - 1:,}"
            if self._keys != self._start:
                where = (f"queries {self._start:,}–{self._start + len(rows) - 1:,} × keys {self._keys:,}–"
                         f"{self._keys + len(cols) - 1:,}")
            self._file_title = f"{t.name}: layer {layer} head {head}, softmax weights, {where} of {len(t):,}{off}"
            self.set_data(values, rows, cols, kind="weights",
                          title=f"{self._file_title} (wheel: scroll, Shift: keys, Ctrl: zoom)")
            return
        self._start, self._keys, self._file_title = 0, 0, ""
        labels = position_labels(t)
        self.set_data(t.attentions[layer, head], labels, labels, blocked=head_blocked(t, layer), kind="weights",
                      title=f"{t.name}: layer {layer} head {head}, softmax weights{off}")

    def eventFilter(self, watched: QObject, event: Any) -> bool:  # noqa: N802 (Qt API)
        """A long trace's window: the wheel moves it a quarter of its size a notch, Shift+wheel its keys alone
        (off the diagonal: where an induction head looks), Ctrl+wheel halves or doubles it around its middle."""
        t = self.session.trace
        if event.type() != QEvent.Type.Wheel or t is None or not t.is_long:
            return False
        sideways = not event.angleDelta().y()  # a sideways wheel or swipe moves the keys, as Shift+wheel does
        notches = (event.angleDelta().x() if sideways else event.angleDelta().y()) / 120
        if not notches:
            return False
        start, size = self.session.map_window
        step = round(notches * max(1, size // 4))
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            new = size // 2 if notches > 0 else size * 2
            self.session.set_map_window(start + size // 2 - new // 2, new)
        elif sideways or event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.session.set_map_window(start, keys=self.session.map_keys - step)
        else:
            self.session.set_map_window(start - step)
        return True

    def _hovered(self, row: int, col: int) -> None:
        t = self.session.trace
        layer, head = self.session.selected
        row, col = (row + self._start, col + self._keys) if row >= 0 else (row, col)
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
