"""The Playground's views behind Steps, in tab order: the one list the tab builds them from.

Adding a view is a folder here with a ``view.py`` whose ``build(model, edits)`` returns the widget, and one line
below. The module is named, not imported: the tab imports it when the view is first opened or read, so the first
frame builds the Steps view alone (tests/shell/test_launch_laziness.py checks it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlaygroundView:
    """One view: its ``name`` (the tab's attribute, ``tab.<name>``, and a lesson's view name), the ``title`` on its
    tab, and the ``module`` whose ``build(model, edits)`` makes it."""

    name: str
    title: str
    module: str


VIEWS = (
    PlaygroundView("multihead", "Multi-head", "app.playground.views.multihead.view"),
    PlaygroundView("vectors", "Vectors", "app.playground.views.vectors.view"),
    PlaygroundView("three_d", "3D", "app.playground.views.three_d.view"),
    PlaygroundView("flow", "Flow", "app.playground.views.flow.view"),
    PlaygroundView("tiles", "Tiles", "app.playground.views.tiles.view"),
)
