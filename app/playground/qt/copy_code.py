"""Edit → Copy as code: the Playground's current setting as a numpy-only Python script on the clipboard
(``app.playground.model.code_export``), said in the status bar. While a lesson's question covers a step the script
would give the answer away, so it is refused with the lesson's reason instead."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtGui import QAction, QGuiApplication

from app.playground.model.code_export import script_for_model
from app.playground.model.concealment import Concealment
from attention_core import STEP_NAMES

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenu, QStatusBar, QWidget

    from app.playground.model.playground import PlaygroundModel

COPIED = "Copied the setting as a Python script (numpy only) to the clipboard: it prints the five steps"


class PlaygroundWindow(Protocol):
    """What the Playground's window-level commands (Copy as code, the pipeline figure's export) use of the main
    window: its Playground model, its status bar, and itself as a widget (Qt's ``window()``: the parent of their
    actions and dialogs)."""

    playground: PlaygroundModel

    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt API)

    def window(self) -> QWidget: ...


def install_copy_as_code(window: PlaygroundWindow, menu: QMenu) -> QAction:
    """Add "Copy as code" to ``menu`` (the Edit menu), copying ``window.playground``'s script."""
    act = QAction("Copy as &code", window.window())
    act.setStatusTip("Copy a Python script (numpy only) that rebuilds Q, K, V, the mask and the scale and prints "
                     "the five steps")
    act.triggered.connect(lambda _c=False: copy_as_code(window))
    menu.addAction(act)
    return act


def copy_as_code(window: PlaygroundWindow) -> str | None:
    """Put the script on the clipboard and say so; returns it (None, with the reason shown, while a lesson covers
    a step)."""
    model = window.playground
    withheld = Concealment.of(model).withheld_message(*STEP_NAMES, "multihead")
    if withheld:
        window.statusBar().showMessage(f"⚠ Copy as code: {withheld}", 8000)
        return None
    script = script_for_model(model)
    QGuiApplication.clipboard().setText(script)
    window.statusBar().showMessage(COPIED, 6000)
    return script
