"""``Cover``: an opaque card over a widget (a step map, the saturation read-out, the story line) until a predict
step is answered, so the learner predicts before seeing; ``cover_widgets`` keeps one card on each widget a step
names. The Learn dock puts them up when the panel asks (its ``covers`` callback)."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QLabel, QWidget

from app.widgets.theme import ThemeColors, follow_theme


class Cover(QLabel):
    """An opaque card over ``target`` (a child of it, following its size) until removed."""

    def __init__(self, target: QWidget, text: str) -> None:
        super().__init__(text, target)
        self.target = target
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setAutoFillBackground(True)
        follow_theme(self._restyle)
        target.installEventFilter(self)
        self.setGeometry(target.rect())
        self.raise_()
        self.show()

    def _restyle(self, c: ThemeColors) -> None:
        self.setStyleSheet(f"QLabel {{ background: {c.alt_base}; color: {c.muted}; border: 2px dashed {c.faint};"
                           " font-weight: bold; }")

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if obj is self.target and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.target.rect())
        return False

    def remove(self) -> None:
        self.target.removeEventFilter(self)
        self.hide()
        self.deleteLater()


def cover_widgets(targets: Iterable[QWidget], covers: dict[int, Cover], text: str) -> None:
    """Put a ``Cover`` on each of ``targets`` and remove the others from ``covers`` (keyed by id(widget))."""
    wanted = {id(t): t for t in targets}
    for key in list(covers):
        if key not in wanted:
            covers.pop(key).remove()
    for key, t in wanted.items():
        if key not in covers:
            covers[key] = Cover(t, text)
