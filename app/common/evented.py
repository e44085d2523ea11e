"""The one way an evented model announces a change (psygnal, Qt-free): one event per changed thing, then ``changed``
with all their names, and its status line. The Model tab's session and its head analysis share it."""

from __future__ import annotations

from typing import Any


class Announcing:
    """Mixin of a model with ``events`` (a psygnal ``SignalGroup`` holding ``status``, ``changed`` and one signal per
    name it announces) and a ``status`` text."""

    events: Any
    status: str

    def _set_status(self, text: str) -> None:
        self.status = text
        self.events.status.emit()

    def _changed(self, *names: str) -> None:
        for name in names:
            getattr(self.events, name).emit()
        self.events.changed.emit(frozenset(names))
