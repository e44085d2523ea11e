"""One guard for everything Qt calls back into: an exception in a slot or in a Python override of a Qt virtual
(``showEvent``, ``paint``, ``resizeEvent`` …) is logged and shown, and the window keeps running.

Why two parts:

- **Overrides.** shiboken6 6.11 on Python 3.11 segfaults (exit 139, in ``PepException_GetArgs``) when an exception
  raised *in C* — numpy's shape errors, ``int("x")``, shiboken's own "Internal C++ object already deleted" — leaves
  a Python override of a C++ virtual without passing through a Python ``except``: on 3.11 such an exception is still
  "unnormalised" (a bare message, no exception object) and shiboken reads it as one. The Vectors view's
  ``showEvent`` raising numpy's ``vstack`` error took the window down this way. A slot connected to a
  signal does not crash (PySide prints it through ``sys.excepthook``); an override does. ``install`` wraps every
  Python method that overrides a method of a Qt class — in the classes defined so far (the app's, pyqtgraph's) and,
  through ``__init_subclass__`` on shiboken's base class, in every class defined later (the views built on first
  use) — in a ``try``/``except`` that re-raises: the exception is then a normal object, and shiboken hands it to
  ``sys.excepthook`` instead of crashing. Nothing else changes: the override's return value, the exception's type,
  a caller in Python (a script, a test) still sees it raised.
- **The hook.** ``sys.excepthook`` (what PySide calls for an exception in a slot or an override called from the
  event loop) records it in ``caught``, writes the traceback to a crash log (``app.common.entry.crash_log``), calls
  the hook it replaced (Python's prints the traceback to stderr; pytest-qt's fails the test), and shows one line in
  the status bar of each window that asked (``install(window)``).

Installed by the main window (``MainWindow.__init__``); idempotent.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow

caught: list[str] = []
"""One line per exception that reached the hook in this process ("ValueError: … (in showEvent)"): tests assert it
stays empty while they drive the window."""

_BINDING_PREFIXES = ("PySide6.", "Shiboken")
_WRAPPED = "__slot_guard_wrapped__"
_windows: weakref.WeakSet[QMainWindow] = weakref.WeakSet()
_overrides_guarded = False


def install(window: QMainWindow | None = None) -> None:
    """Guard every override (once per process) and put ``hook`` in ``sys.excepthook`` (again if something replaced
    it since). ``window``: a QMainWindow whose status bar shows what was caught."""
    global _overrides_guarded
    if not _overrides_guarded:
        _guard_overrides()
        _overrides_guarded = True
    if getattr(sys.excepthook, "__func__", sys.excepthook) is not hook:
        hook.previous = sys.excepthook  # type: ignore[attr-defined]
        sys.excepthook = hook
    if window is not None:
        _windows.add(window)


def hook(kind: type[BaseException], exc: BaseException, tb: types.TracebackType | None) -> None:
    """``sys.excepthook``: record, log and show ``exc``, then call the hook this one replaced."""
    previous: Callable[..., Any] = getattr(hook, "previous", sys.__excepthook__)
    if issubclass(kind, (KeyboardInterrupt, SystemExit)) or kind.__name__ == "Stopped":
        previous(kind, exc, tb)  # a stop is not an error (app.common.stopping)
        return
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    line = f"{kind.__name__}{': ' + message if message else ''}"
    caught.append(line)
    where = ""
    try:
        from app.common.entry import crash_log

        where = f"; details in {crash_log(exc)}"
    except Exception:  # noqa: BLE001 - the hook itself must never raise
        pass
    try:
        previous(kind, exc, tb)
    except Exception:  # noqa: BLE001
        pass
    if threading.current_thread() is threading.main_thread():
        _show(f"⚠ Internal error caught ({line}){where}. The window keeps running; please report it.")


def _show(text: str) -> None:
    import shiboken6

    for window in list(_windows):
        try:
            if shiboken6.isValid(window):
                window.statusBar().showMessage(text, 20000)
        except Exception:  # noqa: BLE001 - a window going away while the hook runs
            pass


# ---------------------------------------------------------------------------------------------------- overrides
def _is_binding(cls: type) -> bool:
    return str(cls.__dict__.get("__module__", "")).startswith(_BINDING_PREFIXES)


_names: dict[type, frozenset[str]] = {}


def _qt_names(cls: type) -> frozenset[str]:
    """The names a binding class defines (read once per class: ~0.1 ms each)."""
    if cls not in _names:
        _names[cls] = frozenset(vars(cls))
    return _names[cls]


def _guard_overrides() -> None:
    from shiboken6 import Shiboken

    base: Any = Shiboken.Object
    seen: set[type] = set()
    stack = list(base.__subclasses__())
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        guard_class(cls)
        stack.extend(cls.__subclasses__())

    def init_subclass(cls: type, **kwargs: Any) -> None:
        super(base, cls).__init_subclass__(**kwargs)  # the next in the MRO (typing.Generic's, object's)
        guard_class(cls)

    base.__init_subclass__ = classmethod(init_subclass)


def guard_class(cls: type) -> None:
    """Wrap the methods ``cls`` itself defines that override a method of a Qt (binding) class in its MRO."""
    if _is_binding(cls):
        return
    bindings = [klass for klass in cls.__mro__[1:] if _is_binding(klass)]
    for name, value in list(vars(cls).items()):
        if (name.startswith("__") or not isinstance(value, types.FunctionType) or getattr(value, _WRAPPED, False)
                or not any(name in _qt_names(klass) for klass in bindings)):
            continue
        setattr(cls, name, _guarded(value))


def _guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except BaseException:  # noqa: BLE001 - re-raised: caught in Python, it is a normal exception object
            raise

    setattr(call, _WRAPPED, True)
    return call
