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


def make_application() -> object:
    """The QApplication with the names QSettings and platformdirs use."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from app.widgets.qt_compat import protect_singletons

    protect_singletons()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("AttentionPlayground")
    app.setApplicationName("Attention Playground")
    from app.common.version import __version__

    app.setApplicationVersion(__version__)
    if QGuiApplication.platformName() == "offscreen":
        hide_offscreen_notices()
    return app
