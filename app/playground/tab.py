"""The Playground tab: inputs | story, the Steps view or another view, explanation bar | controls. Layout and wiring.

The views behind Steps come from ``app/playground/views/registry.py`` and are built when first opened or read
(``tab.multihead``, ``tab.vectors``, …). The tab sits above the Steps view and its panels (``qt/``) and the views
(``views/``), which never import it. Hover and click on any map go to the model (``hover`` / ``pin``); the
explanation bar, the story line and every map follow the model's events. A click in ③ or ④ with the custom mask
also toggles that mask cell (undoable).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import QLabel, QSplitter, QTabWidget, QVBoxLayout, QWidget

from app.playground.model.concealment import COVER_TEXT, Concealment
from app.playground.model.explain import EXPLAIN_HINT
from app.playground.model.playground import PlaygroundModel
from app.playground.qt.commands import UndoableEdits
from app.playground.qt.controls import ControlsPanel
from app.playground.qt.inputs_panel import InputsPanel, set_visible
from app.playground.qt.label_box import LabelBox
from app.playground.qt.pipeline import PipelineView
from app.playground.qt.steps_header import HeadsBanner, SharedRangeToggle
from app.playground.views import registry
from app.widgets.side_panel import SideScroll


class PlaygroundTab(QSplitter):
    """Three columns in a splitter: the side columns are as wide as their content needs (never clipped) and
    collapse when dragged shut (the window keeps the splitter's state in QSettings); the centre takes the rest.

    Narrower than ``NARROW`` px (a 1024 px laptop), the inputs and the controls share the left column as two tabs:
    with both columns open the five maps got ~150 px each, too little for a 3 × 3 map's numbers."""

    NARROW = 1150

    def __init__(self, model: PlaygroundModel, edits: UndoableEdits, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model, self.edits = model, edits
        self.inputs = InputsPanel(model, edits)
        center = QWidget()
        cv = QVBoxLayout(center)
        cv.setContentsMargins(0, 0, 0, 0)
        self.story_label = QLabel()
        self.story_label.setObjectName("storyLabel")
        self.story_label.setWordWrap(True)
        self.story_label.setTextFormat(Qt.TextFormat.RichText)
        cv.addWidget(LabelBox(self.story_label))  # a new story (every edit) relays nothing out
        self.view_tabs = QTabWidget()
        self.pipeline = PipelineView(model)
        self.pipeline.cellHovered.connect(self._on_hover)
        self.pipeline.cellClicked.connect(self._on_click)
        self.view_tabs.addTab(self.pipeline, "Steps")
        self._views: dict[str, QWidget] = {}  # the lazy views built so far
        self._holders: dict[str, QWidget] = {}  # their placeholders until then
        self._when_built: dict[str, list[Callable[[Any], None]]] = {}
        self._entries = {entry.name: entry for entry in registry.VIEWS}  # read when the tab is made
        for entry in self._entries.values():
            self._holders[entry.name] = QWidget()
            self.view_tabs.addTab(self._holders[entry.name], entry.title)
        self.view_tabs.currentChanged.connect(self._on_view_changed)
        # the Steps view's own switches: the colour-range option in the tab bar's corner (no height taken), the
        # heads banner above the maps while the Steps view is shown and Heads > 1 (its link opens Multi-head)
        self.shared_range = SharedRangeToggle(model)
        self.view_tabs.setCornerWidget(self.shared_range, Qt.Corner.TopRightCorner)
        self.heads_banner = HeadsBanner(model)
        self.heads_banner.openMultiHead.connect(lambda: self.view_tabs.setCurrentWidget(self.multihead))
        cv.addWidget(self.heads_banner)
        cv.addWidget(self.view_tabs, 1)
        self.explain_label = QLabel(EXPLAIN_HINT)
        self.explain_label.setObjectName("explainLabel")
        self.explain_label.setWordWrap(True)
        self.explain_label.setTextFormat(Qt.TextFormat.RichText)
        self.explain_label.setMinimumHeight(64)
        cv.addWidget(self.explain_label)
        self.controls = ControlsPanel(model, edits)
        self.inputs_scroll, self.controls_scroll = SideScroll(self.inputs), SideScroll(self.controls)
        self.side_tabs = QTabWidget()  # the left column when narrow: Inputs | Controls
        self.side_tabs.setDocumentMode(True)
        self._park = center  # while wide, the unused tab widget waits here, hidden: always in the window's tree,
        self._park_side_tabs()  # so it is deleted with it (never left to PySide's exit hook, see app/qt_compat)
        self.narrow = False
        self.sides_hidden = False  # presentation mode: the side columns hidden, whichever layout is in use
        self._side_page = 0  # the narrow layout's page in front (Inputs or Controls), kept across layouts
        self._pending_columns: tuple[bool, Any] | None = None
        self.addWidget(self.inputs_scroll)
        self.addWidget(center)
        self.addWidget(self.controls_scroll)
        self.setChildrenCollapsible(True)
        self.setCollapsible(1, False)
        self.setStretchFactor(1, 1)
        self.setSizes([310, 740, 230])
        self.concealment = Concealment.of(model)
        model.events.story.connect(self._show_story)
        model.events.explanation.connect(self._show_explanation)
        self.concealment.events.changed.connect(self._show_story)
        self.concealment.events.changed.connect(self._show_explanation)
        self._show_story()
        self._show_explanation()

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.set_narrow(self.width() < self.NARROW)

    def set_narrow(self, narrow: bool) -> None:
        """Inputs and controls as tabs of one left column (narrow), or as columns left and right of the maps."""
        if narrow == self.narrow:
            return
        self.narrow = narrow
        left = first.width() if (first := self.widget(0)) is not None else 0
        if narrow:
            self.replaceWidget(0, self.side_tabs)
            self.side_tabs.addTab(self.inputs_scroll, "Inputs")
            self.side_tabs.addTab(self.controls_scroll, "Scale, mask, heads")
            self.side_tabs.setCurrentIndex(self._side_page)  # the page in front last time stays in front
            self.side_tabs.show()
            self.setSizes([left, self.width() - left])
        else:
            self._side_page = max(self.side_tabs.currentIndex(), 0)
            self.side_tabs.clear()
            self.replaceWidget(0, self.inputs_scroll)
            self._park_side_tabs()
            self.addWidget(self.controls_scroll)
            self.inputs_scroll.show()  # a tab widget's page that was not current is hidden: shown again here
            self.controls_scroll.show()
            self.setSizes([left, self.width() - left - 240, 240])
        self.setCollapsible(1, False)
        if self.sides_hidden:  # presenting: the new layout's side columns stay out of sight too
            self.set_sides_hidden(True)
        self._restore_pending_columns()

    def column_state(self) -> tuple[bool, Any]:
        """The layout in use and the columns' widths, for ``restore_columns``."""
        return self.narrow, self.saveState()

    def restore_columns(self, saved: tuple[bool, Any]) -> None:
        """Give the columns the widths ``column_state`` saw: now if that layout is in use, else as soon as it is
        again (leaving full screen, the window's normal size may arrive after this call)."""
        self._pending_columns = saved
        self._restore_pending_columns()

    def _restore_pending_columns(self) -> None:
        if self._pending_columns is not None and self._pending_columns[0] == self.narrow:
            self.restoreState(self._pending_columns[1])
            self._pending_columns = None

    def side_columns(self) -> list[QWidget]:
        """The columns beside the maps in the layout in use: the Inputs | Controls tabs (narrow), or the inputs
        and the controls columns (wide). Never a page of the tabs: hiding one of those would leave it hidden."""
        return [self.side_tabs] if self.narrow else [self.inputs_scroll, self.controls_scroll]

    def set_sides_hidden(self, hidden: bool) -> None:
        """Hide the side columns (presentation mode) or show them again; kept across a switch of layout (the
        full-screen window may be narrow where the window was wide, or the other way round)."""
        self.sides_hidden = hidden
        for widget in self.side_columns():
            widget.setVisible(not hidden)

    def _park_side_tabs(self) -> None:
        self.side_tabs.setParent(self._park)
        self.side_tabs.hide()

    # ------------------------------------------------------------------ the views behind Steps, built on first use
    def __getattr__(self, name: str) -> Any:
        """``tab.multihead``, ``tab.vectors``, ``tab.three_d``, ``tab.flow``: the view, built if not yet (every view
        of the registry, under its name)."""
        if name in self.__dict__.get("_entries", {}):  # (looked up without __getattr__ while __init__ runs)
            return self.view(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def is_built(self, name: str) -> bool:
        return name in self._views

    def when_built(self, name: str, callback: Callable[[Any], None]) -> None:
        """Call ``callback(view)`` once the view ``name`` exists: now if it does, else when it is built."""
        if name in self._views:
            callback(self._views[name])
        else:
            self._when_built.setdefault(name, []).append(callback)

    def view(self, name: str) -> QWidget:
        """The view ``name`` (one of the registry's), built in its placeholder's place if not yet."""
        if name not in self._views:
            entry = self._entries[name]
            view = self._make_view(entry.module)
            self._views[name] = view
            holder = self._holders.pop(name)
            idx, current = self.view_tabs.indexOf(holder), self.view_tabs.currentIndex()
            with QSignalBlocker(self.view_tabs):
                self.view_tabs.removeTab(idx)
                self.view_tabs.insertTab(idx, view, entry.title)
                self.view_tabs.setCurrentIndex(current)
            holder.deleteLater()
            for callback in self._when_built.pop(name, []):
                callback(view)
        return self._views[name]

    def _make_view(self, module: str) -> QWidget:
        """``build(model, edits)`` of the view's module; a view whose maps report cells (``cellHovered``,
        ``cellClicked``, as the Steps view's do) gets hover and pin as the Steps view does."""
        view: QWidget = importlib.import_module(module).build(self.model, self.edits)
        for signal, slot in (("cellHovered", self._on_hover), ("cellClicked", self._on_click)):
            if hasattr(view, signal):
                getattr(view, signal).connect(slot)
        return view

    def _on_view_changed(self, _index: int) -> None:
        current = self.view_tabs.currentWidget()
        for name, holder in list(self._holders.items()):
            if current is holder:
                self.view(name)  # built in the holder's place; that tab stays current
        steps = self.view_tabs.currentWidget() is self.pipeline
        self.heads_banner.set_active(steps)
        self.shared_range.setVisible(steps)
        # the cells of the other view are out of sight: nothing of theirs stays pinned or hovered
        self.model.hover(None)
        self.model.unpin()

    def _on_hover(self, view: str, i: int, j: int) -> None:
        self.model.hover(view if i >= 0 else None, i, j)

    def _on_click(self, view: str, i: int, j: int) -> None:
        if view in ("masked", "weights") and self.model.mask_mode == "custom":
            self.edits.apply("Toggle mask cell", lambda m: m.toggle_custom(i, j))
        try:
            self.model.pin(view, i, j)
        except ValueError:  # a click outside the cells
            self.model.unpin()

    def _show_story(self) -> None:
        # while a lesson's question covers a map, the story (an edited preset's says "'sat' puts 43% on …")
        # is withheld with the maps
        story = COVER_TEXT if self.concealment.hidden and self.model.story else self.model.story
        self.story_label.setText(story)
        set_visible(self.story_label, bool(story))

    def _show_explanation(self) -> None:
        # a cell's formula plugs in the maps before it (and ⑤'s the weights): withheld while any map is covered
        hidden = self.concealment.hidden and self.model.explanation_html
        self.explain_label.setText(COVER_TEXT if hidden else self.model.explanation_html or EXPLAIN_HINT)
