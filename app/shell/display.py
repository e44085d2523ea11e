"""Is there a screen to open the window on? Asked before Qt is started, because Qt's own answer to "no" is an
abort (exit 134) with a message about a library (``xcb-cursor0``) that the bundle ships and that is not the cause.

``display_problem()`` returns "" when the window can open, else one line for the user that fits how the app was
started (a source checkout has ``./run.sh`` with its virtual screen; an installed copy and the bundle have no such
script: ``source_checkout``). Linux only;
elsewhere the platform's own window system is always there. Qt-free.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from pathlib import Path


def _frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def _xcb_connects(display: str) -> bool | None:
    """Whether an X server answers at ``display`` (``xcb_connect``, which Qt's xcb platform calls too; the
    authority cookie counts). None when libxcb cannot be loaded (then Qt cannot open X either)."""
    candidates = []
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        candidates.append(str(Path(bundle) / "libxcb.so.1"))
    candidates += ["libxcb.so.1", ctypes.util.find_library("xcb") or ""]
    lib = None
    for name in filter(None, candidates):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return None
    lib.xcb_connect.restype = ctypes.c_void_p
    lib.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    lib.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    lib.xcb_disconnect.argtypes = [ctypes.c_void_p]
    conn = lib.xcb_connect(display.encode(), None)
    try:
        return lib.xcb_connection_has_error(conn) == 0
    finally:
        lib.xcb_disconnect(conn)


def source_checkout() -> Path | None:
    """The source checkout the app runs from, else None: an installed copy (pip, pipx, uv) or the bundle has no
    ``run.sh`` to suggest. Told by where the resources are (``app.common.resources``): a checkout's are its top-level
    ``resources/``, beside ``run.sh``; an install's are ``app/resources`` in site-packages."""
    from app.common.resources import ResourcesMissing, resource_root

    try:
        root = Path(resource_root()).parent
    except (ResourcesMissing, OSError, ValueError):
        return None
    return root if (root / "run.sh").is_file() and (root / "app" / "shell").is_dir() else None


def _how_to_start_headless() -> str:
    if _frozen():
        return ("run it on a desktop; without one the commands still work (attention-playground --help), and "
                "attention-playground --self-test DIR renders the window to files")
    if source_checkout() is None:
        return ("run it on a desktop, or set QT_QPA_PLATFORM=offscreen (no window shown); the commands work "
                "without one (attention-playground --help)")
    return "run it on a desktop, start it with ./run.sh (a virtual screen), or set QT_QPA_PLATFORM=offscreen"


def display_problem() -> str:
    """"" when a window can open here (or Qt's platform was chosen explicitly: QT_QPA_PLATFORM); else why not."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return ""
    display, wayland = os.environ.get("DISPLAY", ""), os.environ.get("WAYLAND_DISPLAY", "")
    if not display and not wayland:
        return f"no display found (DISPLAY is not set): {_how_to_start_headless()}"
    if not display:  # Wayland without XWayland: the bundle carries Qt's xcb platform only
        return "" if not _frozen() else (f"this build needs an X display (XWayland); WAYLAND_DISPLAY={wayland} is "
                                        f"set but DISPLAY is not: {_how_to_start_headless()}")
    answers = _xcb_connects(display)
    if answers is None:
        return (f"cannot open the display {display}: the X11 library libxcb.so.1 is not installed "
                "(apt install libxcb1)")
    if not answers and not (wayland and not _frozen()):
        return (f"cannot open the display {display}: no X server answers there, or it refused this user "
                f"(xhost, XAUTHORITY); {_how_to_start_headless()}")
    return ""
