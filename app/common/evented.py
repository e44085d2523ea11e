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

import os
import sys
import threading
import types
from importlib.util import find_spec
from typing import Any, ClassVar


def _import_psygnal_without_metadata() -> None:
    """Import psygnal with its version read from its dist-info folder's name instead of ``importlib.metadata``.

    Why: psygnal's ``__init__`` sets ``__version__`` through ``importlib.metadata.version("psygnal")``; at launch
    nothing else imports ``importlib.metadata``, and importing it (with the email package that parses METADATA) and
    scanning sys.path for the distribution cost ~20 ms of the first frame. For that one import a stand-in module
    answers ``version("psygnal")`` with the same string (``psygnal-<version>.dist-info`` beside the package, or
    PackageNotFoundError as the real lookup raises where there is none: psygnal then says "0.0.0", as it would), and
    is removed again: later imports of ``importlib.metadata`` get the real one. Only while this is the one Python
    thread (no other thread may meet the stand-in) and the real module is not loaded yet; otherwise a plain import.
    """
    if "psygnal" in sys.modules or "importlib.metadata" in sys.modules or threading.active_count() != 1:
        return
    stand_in = types.ModuleType("importlib.metadata")

    class PackageNotFoundError(ModuleNotFoundError):
        pass

    def version(name: str) -> str:  # psygnal asks for its own version only
        spec = find_spec(name)
        try:
            folder = os.path.dirname(os.path.dirname(spec.origin)) if spec is not None and spec.origin else ""
            found = [e.name[len(name) + 1:-len(".dist-info")] for e in os.scandir(folder)
                     if e.name.startswith(f"{name}-") and e.name.endswith(".dist-info")] if folder else []
        except OSError:
            found = []
        if len(found) != 1:
            raise PackageNotFoundError(name)
        return found[0]

    stand_in.PackageNotFoundError = PackageNotFoundError  # type: ignore[attr-defined]
    stand_in.version = version  # type: ignore[attr-defined]
    sys.modules["importlib.metadata"] = stand_in
    try:
        import psygnal  # noqa: F401
    finally:
        if sys.modules.get("importlib.metadata") is stand_in:
            del sys.modules["importlib.metadata"]


_import_psygnal_without_metadata()

from psygnal import Signal, SignalGroup  # noqa: E402


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

