"""``--self-test``: every view of one warm window rendered to PNG (also the bundle's smoke test).

One window is built and shown once; each view is then grabbed from it in turn, as it is laid out and painted in
the window (the Playground's five Steps maps, Multi-head, Flow, Vectors and 3D views, the whole window, the
Training tab's views, the Lab tab): no second window, no fresh figure per file (the exports, which build a light
figure of their own, have their own tests and the smoke test's ``export`` command). A stop (Ctrl+C, SIGTERM) is
acted on between two views (``app.common.stopping``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from PySide6.QtWidgets import QApplication, QWidget

from app.common import stopping

if TYPE_CHECKING:
    from PySide6.QtWidgets import QTabWidget

    from app.lab.qt.host import LabHost
    from app.playground.model.playground import PlaygroundModel
    from app.playground.qt.pipeline import PipelineView
    from app.playground.tab import PlaygroundTab
    from app.training.qt.host import TrainingHost


class RenderedWindow(Protocol):
    """What ``--self-test`` renders of the main window: the Playground's tab, model and Steps maps, the Training
    and Lab tabs' hosts, the tab widget, and the window itself (Qt's ``window()``)."""

    playground: PlaygroundModel
    tab: PlaygroundTab
    pipeline: PipelineView
    tabs: QTabWidget

    @property
    def training_host(self) -> TrainingHost: ...

    @property
    def lab(self) -> LabHost: ...

    def window(self) -> QWidget: ...


def grab(widget: QWidget, path: Path) -> list[Path]:
    """``widget`` as painted now, to ``path`` (PNG); ``[path]`` if it was written, else ``[]``."""
    return [path] if widget.grab().save(str(path)) else []


def _settle() -> None:
    for _ in range(2):
        QApplication.processEvents()


def render_playground(window: RenderedWindow, out_dir: Path) -> list[Path]:
    """The five Steps maps, the Multi-head view (two heads where the preset allows) and the whole window as PNGs
    in ``out_dir``; the Playground's state and view are left as they were."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tab = window.tab
    tab.view_tabs.setCurrentWidget(tab.pipeline)
    _settle()
    window.pipeline.redraw()  # a redraw may be waiting for the next frame: the maps show the current result
    written: list[Path] = []
    for n, (name, heatmap) in enumerate(window.pipeline.heatmaps.items(), start=1):
        written += grab(heatmap, out_dir / f"{n}-{name}.png")
    playground = window.playground
    before = playground.snapshot()
    try:
        if 2 in playground.state.valid_head_counts():
            playground.set_heads(2)
        tab.view_tabs.setCurrentWidget(tab.multihead)
        _settle()
        tab.multihead.redraw()
        written += grab(tab.multihead, out_dir / "multihead.png")
    finally:
        playground.restore(before)
        tab.view_tabs.setCurrentWidget(tab.pipeline)
    _settle()
    written += grab(window.window(), out_dir / "window.png")
    return written


def render_views(window: RenderedWindow, out_dir: Path) -> list[Path]:
    """Every Playground view of the registry, a new one too, but Multi-head (drawn with two heads above): a view
    with a ``self_test(out_dir)`` of its own writes its files (3D where OpenGL works; elsewhere it shows why not),
    any other is grabbed as ``<name>.png``."""
    from app.playground.views.registry import VIEWS

    tab = window.tab
    written: list[Path] = []
    for entry in VIEWS:
        if entry.name == "multihead":
            continue
        view = tab.view(entry.name)
        tab.view_tabs.setCurrentWidget(view)
        _settle()
        own = getattr(view, "self_test", None)
        written += own(out_dir) if callable(own) else grab(view, out_dir / f"{entry.name}.png")
        stopping.check()
    tab.view_tabs.setCurrentWidget(tab.pipeline)
    return written


def render_all(window: RenderedWindow, out_dir: Path) -> list[Path]:
    """Every view of ``window`` (shown) as PNGs in ``out_dir``, then back to the Playground's Steps."""
    out_dir = Path(out_dir)
    stopping.check()
    written = render_playground(window, out_dir)
    stopping.check()
    written += render_views(window, out_dir)
    stopping.check()
    written += window.training_host.self_test(out_dir)  # shown first: a tab never shown has no layout
    stopping.check()
    lab = window.lab.show()  # the Lab tab and its plots
    written += grab(lab, out_dir / "lab.png") + grab(lab.plots, out_dir / "lab-plots.png")
    window.tabs.setCurrentIndex(0)
    stopping.check()
    return written
