"""Workarounds for PySide6 bugs: a reference-count guard for shiboken6 6.12.0, and an orderly window teardown (and
``insert_action``: a Qt call PySide's type stubs refuse).

Teardown: PySide deletes every C++ object still owned by a Python wrapper in an ``atexit`` hook, in no fixed
order. A pyqtgraph item deleted there can be re-parented by its parent's destructor, which calls a Python
override during interpreter finalisation; shiboken then crashes in ``PepException_GetArgs`` (SIGSEGV at exit, in
12–30 % of runs of a script that closes the window right after opening it; seen in CI). ``delete_now`` deletes a
widget tree while the interpreter is healthy, so nothing of it is left for that hook.

Reference counts:

shiboken 6.12.0 returns ``None`` from every void C++ call (``setText``, ``update``, ``processEvents`` …) and
``True`` from ``Signal.emit`` without taking a new reference. From Python 3.12 these objects are immortal; on 3.11
each call drops one reference, and after a few thousand calls the interpreter aborts with "Fatal Python error:
none_dealloc". pyproject.toml excludes 6.12.0 (6.11.3 is fine); this guard covers an environment that has it anyway
by giving the three singletons a huge reference count, which makes them effectively immortal as on 3.12.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMenu

_PROTECTED = False


def needs_guard() -> bool:
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    try:
        import shiboken6
    except ImportError:
        return False
    return str(getattr(shiboken6, "__version__", "")).startswith("6.12.0")


def protect_singletons(force: bool = False) -> bool:
    """Apply the guard once when needed (or when ``force``); returns True if it was applied by this call."""
    global _PROTECTED
    if _PROTECTED or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    if not (force or needs_guard()):
        return False
    import ctypes

    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += 1 << 40
    _PROTECTED = True
    return True


def delete_now(widget: Any, *, flush: bool = False) -> None:  # any Qt object, or None
    """Close ``widget`` if it is still open and delete its C++ object (and children) now, not in PySide's exit hook.

    ``flush`` also runs pending ``deleteLater`` requests; use it only outside event handlers (after ``exec``
    returns), where nothing that asked for a deferred delete is still on the stack.
    """
    import gc

    import shiboken6
    from PySide6.QtCore import QCoreApplication, QEvent

    if widget is not None and shiboken6.isValid(widget):
        if getattr(widget, "isVisible", lambda: False)():
            widget.close()  # a closed window is not asked again (its closeEvent may prompt for unsaved work)
        shiboken6.delete(widget)
    if flush:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


_DELETE_AT_EXIT: list[Any] = []


def delete_at_exit(widget: object) -> None:
    """Delete ``widget`` (if still alive) in an ``atexit`` hook that runs before PySide's own.

    atexit runs hooks last-registered-first, and PySide registers its hook when QtCore is imported, so this one,
    registered later, runs earlier: a script that keeps the window in a global variable exits cleanly too.
    """
    import atexit
    import weakref

    if not _DELETE_AT_EXIT:
        atexit.register(_delete_registered)
    _DELETE_AT_EXIT.append(weakref.ref(widget))


def _delete_registered() -> None:
    for ref in reversed(_DELETE_AT_EXIT):
        widget = ref()
        if widget is not None:
            try:
                if hasattr(widget, "confirm_on_close"):
                    widget.confirm_on_close = False  # no event loop is left to answer an unsaved-work prompt
                delete_now(widget)
            except Exception:  # exiting anyway; never turn a clean exit into a traceback
                pass
    _DELETE_AT_EXIT.clear()


def insert_action(menu: QMenu, before: QAction | None, action: QAction) -> None:
    """``action`` in ``menu`` before ``before``, or last: Qt's ``insertAction(nullptr, …)``, which PySide's type
    stubs do not allow."""
    if before is None:
        menu.addAction(action)
    else:
        menu.insertAction(before, action)
