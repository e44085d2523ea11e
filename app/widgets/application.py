"""The one QApplication, named as QSettings and platformdirs expect: the window, the self-test, the CLI's
``lessons --run`` and scripts all start Qt through ``make_application``."""

from __future__ import annotations

import sys
from typing import Any

OFFSCREEN_NOTICES = ("This plugin does not support",)
"""Qt messages of the offscreen platform that say nothing to the user ("This plugin does not support
propagateSizeHints()", printed whenever a hidden widget's size hint changes: once per frame of a film, 18 times in a
``--self-test``; "… does not support raise()", "… grabbing the keyboard")."""
_filtering = False


def hide_offscreen_notices() -> None:
    """Drop ``OFFSCREEN_NOTICES`` from stderr (the offscreen platform: the CLI's renders, ``--self-test``,
    scripts), so a log shows the progress lines and the real warnings; every other message still reaches stderr.
    Installed once per process."""
    global _filtering
    if _filtering:
        return
    from PySide6.QtCore import qInstallMessageHandler

    previous = None

    def handler(mode: Any, context: Any, message: str) -> None:
        if any(notice in message for notice in OFFSCREEN_NOTICES):
            return
        if previous is not None:
            previous(mode, context, message)
        else:
            sys.stderr.write(message + "\n")

    previous = qInstallMessageHandler(handler)
    _filtering = True


def prefer_utf8_locale() -> None:
    """Switch a process whose locale is not UTF-8 (``LC_ALL=C``, ``LANG=C`` with Python's coercion off) to C.UTF-8
    before Qt starts. Qt depends on a UTF-8 locale: it makes the same switch itself, but prints four lines of
    warning ("Detected locale "C" with character encoding "ANSI_X3.4-1968" …") on every start. Linux only (macOS
    and Windows have no such check); a UTF-8 locale is left as it is."""
    import locale
    import os

    if not sys.platform.startswith("linux"):
        return
    try:
        locale.setlocale(locale.LC_CTYPE, "")
        if locale.nl_langinfo(locale.CODESET).replace("-", "").upper() == "UTF8":
            return
        os.environ["LC_ALL" if os.environ.get("LC_ALL") else "LC_CTYPE"] = "C.UTF-8"
        locale.setlocale(locale.LC_CTYPE, "C.UTF-8")
    except (locale.Error, ValueError, AttributeError):
        return  # no C.UTF-8 here: Qt says what it does


def make_application() -> object:
    """The QApplication with the names QSettings and platformdirs use."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from app.widgets.qt_compat import protect_singletons

    protect_singletons()
    if QApplication.instance() is None:
        prefer_utf8_locale()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("AttentionPlayground")
    app.setApplicationName("Attention Playground")
    from app.common.version import __version__

    app.setApplicationVersion(__version__)
    if QGuiApplication.platformName() == "offscreen":
        hide_offscreen_notices()
    return app
