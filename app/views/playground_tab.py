"""The Playground tab: inputs | story, steps or multi-head maps, explanation bar | controls. Layout and wiring.

Hover and click on any map go to the model (``hover`` / ``pin``); the explanation bar, the story line and every
map follow the model's events. A click in ③ or ④ with the custom mask also toggles that mask cell (undoable).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QSplitter, QTabWidget, QVBoxLayout, QWidget

from ..commands import UndoableEdits
from ..models.explain import EXPLAIN_HINT
from ..models.playground import PlaygroundModel
from .controls import ControlsPanel
from .inputs_panel import InputsPanel, set_visible
from .multihead_view import MultiHeadView
from .pipeline import PipelineView


def _scroll(widget: QWidget, min_width: int) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(widget)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setMinimumWidth(min_width)
    return area


class PlaygroundTab(QSplitter):
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
        cv.addWidget(self.story_label)
        self.view_tabs = QTabWidget()
        self.pipeline = PipelineView(model)
        self.multihead = MultiHeadView(model)
        for view in (self.pipeline, self.multihead):
            view.cellHovered.connect(self._on_hover)
            view.cellClicked.connect(self._on_click)
        self.view_tabs.addTab(self.pipeline, "Steps")
        self.view_tabs.addTab(self.multihead, "Multi-head")
        self.view_tabs.currentChanged.connect(self._on_view_changed)
        cv.addWidget(self.view_tabs, 1)
        self.explain_label = QLabel(EXPLAIN_HINT)
        self.explain_label.setObjectName("explainLabel")
        self.explain_label.setWordWrap(True)
        self.explain_label.setTextFormat(Qt.TextFormat.RichText)
        self.explain_label.setMinimumHeight(64)
        cv.addWidget(self.explain_label)
        self.controls = ControlsPanel(model, edits)
        self.addWidget(_scroll(self.inputs, 290))
        self.addWidget(center)
        self.addWidget(_scroll(self.controls, 215))
        self.setStretchFactor(1, 1)
        self.setSizes([310, 740, 230])
        model.events.story.connect(self._show_story)
        model.events.explanation.connect(self._show_explanation)
        self._show_story()
        self._show_explanation()

    def _on_view_changed(self, _index: int) -> None:
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
        self.story_label.setText(self.model.story)
        set_visible(self.story_label, bool(self.model.story))

    def _show_explanation(self) -> None:
        self.explain_label.setText(self.model.explanation_html or EXPLAIN_HINT)

    def set_dark(self, dark: bool) -> None:
        self.pipeline.set_dark(dark)
        self.multihead.set_dark(dark)
        self.inputs.set_dark(dark)
