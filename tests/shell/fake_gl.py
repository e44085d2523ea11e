"""A stand-in for ``pyqtgraph.opengl`` where Qt's offscreen platform has no OpenGL: the 3D view's first showing.

The real ``GLViewWidget`` is a QOpenGLWidget. Adding the first one to a window makes Qt recreate the window (seen
under Xvfb with Mesa): while ``addWidget`` runs, the Learn dock reports itself hidden (it lifts a lesson's cover),
the window's widgets get show events (the 3D view is asked to redraw in the middle of its build), then the dock
reports itself shown. ``FakeGLViewWidget`` does the same when first added to a shown window, and writes what the
surface shows (its heights, as numbers, and its text labels) in a label the oracle's harvest reads.

    install(monkeypatch)  # the 3D view of every window built afterwards uses it
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QDockWidget, QLabel, QVBoxLayout, QWidget


class _Item:
    def __init__(self, *_: Any, **kw: Any) -> None:
        self.view: FakeGLViewWidget | None = None
        self._z: Any = None
        self.text = str(kw.get("text", ""))

    def setData(self, **kw: Any) -> None:  # noqa: N802 (pyqtgraph API)
        self._z = np.asarray(kw["z"], float)
        if self.view is not None:
            self.view.describe()

    def resetTransform(self) -> None:  # noqa: N802
        pass

    def scale(self, *_: float) -> None:
        pass

    def translate(self, *_: float) -> None:
        pass

    def setSize(self, *_: float) -> None:  # noqa: N802
        pass

    def setSpacing(self, *_: float) -> None:  # noqa: N802
        pass

    def setColor(self, *_: Any) -> None:  # noqa: N802
        pass


class FakeGLViewWidget(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.items: list[_Item] = []
        self.drawn = QLabel()
        self.drawn.setObjectName("fakeGlDrawn")
        QVBoxLayout(self).addWidget(self.drawn)

    def addItem(self, item: _Item) -> None:  # noqa: N802 (pyqtgraph API)
        item.view = self
        self.items.append(item)
        self.describe()

    def removeItem(self, item: _Item) -> None:  # noqa: N802
        self.items.remove(item)
        self.describe()

    def describe(self) -> None:
        """What a user reads off the surface: each tile's height (as the numbers it stands for) and the labels."""
        parts = []
        for item in self.items:
            if item._z is not None:
                parts.append(" ".join(f"{v:.3f}" for v in np.asarray(item._z)[::2, ::2].ravel()))
            if item.text:
                parts.append(item.text)
        self.drawn.setText("surface: " + " | ".join(parts))

    def setBackgroundColor(self, *_: Any) -> None:  # noqa: N802
        pass

    def setCameraPosition(self, **_: Any) -> None:  # noqa: N802
        pass

    def isValid(self) -> bool:  # noqa: N802
        return True

    def grabFramebuffer(self) -> Any:  # noqa: N802
        return self.grab().toImage()

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ParentChange:
            self._recreate_window()
        return super().event(e)

    def _recreate_window(self) -> None:
        win = self.window()
        if win is self or not win.isVisible() or win.property("fakeGlRecreated"):
            return
        win.setProperty("fakeGlRecreated", True)  # once per window, as Qt does
        docks = [d for d in win.findChildren(QDockWidget) if d.isVisible()]
        for d in docks:
            d.hide()  # "hidden", as the dock reports it
        win.hide()
        win.show()  # every widget of the window gets its show event again
        for d in docks:
            d.show()


def install(monkeypatch: Any) -> None:
    """Make ``app.playground.views.three_d.view`` find OpenGL and build its widgets from the fakes above."""
    import sys

    from app.playground.views.three_d import view

    fake = types.ModuleType("pyqtgraph.opengl")
    fake.GLViewWidget = FakeGLViewWidget  # type: ignore[attr-defined]
    fake.GLSurfacePlotItem = fake.GLGridItem = fake.GLTextItem = _Item  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyqtgraph.opengl", fake)
    monkeypatch.setattr(view, "opengl_problem", lambda: "")
