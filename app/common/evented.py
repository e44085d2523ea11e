"""The one way a Qt-free model announces a change (psygnal underneath): declare the events once, emit through
``_announce``.

A model that views follow subclasses ``Evented`` and declares its events once, as a ``ModelEvents`` subclass that
annotates its ``events`` attribute; every event is made with ``event()``::

    class LabEvents(ModelEvents):            # ``status`` and ``changed`` come with ModelEvents
        results = event()                   # no payload: views read the model's attributes
        config = event(object)              # a payload: the model's ``config`` attribute, unless given

    class ScalingLab(Evented):
        events: LabEvents                   # the declaration: Evented makes it (and mypy knows its events)

        def set_config(self, config):
            self.config = config
            self._announce("config", "results")   # one event per name, in this order, then changed({...})

``_announce(*names, **payloads)`` emits one event per name, then ``changed`` with the frozenset of all the names,
so a view follows one thing (``events.result``) or everything (``events.changed``). An event declared with a
payload gets the model's attribute of that name unless the call gives it (``_announce(point=p)``: a value that is
not kept, such as each new point as it arrives). ``status`` carries the status line (``Signal(str)``, the model's
``status`` attribute; ``_set_status(text)`` sets and announces it): every status view shows that text, and a slot
that takes no argument may still connect (psygnal passes what a slot accepts).

Why one way: views subscribe the same way to every model, and tests/test_architecture_events.py can check that no
model emits, groups or blocks its events by hand (psygnal is imported here only).
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from psygnal import Signal, SignalGroup


def event(payload: type | None = None) -> Any:
    """One declared event of a ``ModelEvents`` subclass: no payload (views read the model), or one value of
    ``payload``'s type (``object`` for anything)."""
    return Signal() if payload is None else Signal(payload)


class ModelEvents(SignalGroup):
    """The events every evented model has; a model's own ``ModelEvents`` subclass adds one event per thing it
    announces (``event()``)."""

    status = Signal(str)  # the status line (the model's ``status``)
    changed = Signal(object)  # the frozenset of the names just announced


class Evented:
    """Base of every Qt-free model that views follow: ``events`` (an instance of the class's ``Events``) and a
    ``status`` text, changed only through ``_announce`` / ``_set_status``."""

    Events: ClassVar[type[ModelEvents]] = ModelEvents
    events: ModelEvents
    status: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``events: TheirEvents`` in the class body is the declaration: ``Events`` becomes that class."""
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("__annotations__", {}).get("events")
        if declared is None:
            return
        found = vars(sys.modules[cls.__module__]).get(declared) if isinstance(declared, str) else declared
        if not (isinstance(found, type) and issubclass(found, ModelEvents)):
            raise TypeError(f"{cls.__name__}.events must be annotated with a ModelEvents subclass defined (or "
                            f"imported) before the class, by its bare name; got {declared!r}")
        cls.Events = found

    def __init__(self) -> None:
        self.events = self.Events()
        self.status = ""

    def _announce(self, *names: str, **payloads: Any) -> None:
        """Emit one event per name (``names`` in order, then any name only in ``payloads``), then ``changed`` with
        all of them. Nothing is emitted for no names."""
        ordered = list(dict.fromkeys((*names, *payloads)))
        if not ordered:
            return
        for name in ordered:
            signal = getattr(self.events, name)
            if name in payloads:
                signal.emit(payloads[name])
            elif signal.signature.parameters:
                signal.emit(getattr(self, name))
            else:
                signal.emit()
        self.events.changed.emit(frozenset(ordered))

    def _set_status(self, text: str) -> None:
        """The status line becomes ``text`` and is announced (even when unchanged: a repeated error is news)."""
        self.status = text
        self._announce("status")

