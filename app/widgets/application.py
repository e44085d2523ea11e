"""The one QApplication, named as QSettings and platformdirs expect: the window, the self-test, the CLI's
``lessons --run`` and scripts all start Qt through ``make_application``."""

from __future__ import annotations

import sys


def make_application() -> object:
    """The QApplication with the names QSettings and platformdirs use."""
    from PySide6.QtWidgets import QApplication

    from app.widgets.qt_compat import protect_singletons

    protect_singletons()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("AttentionPlayground")
    app.setApplicationName("Attention Playground")
    from app.common.version import __version__

    app.setApplicationVersion(__version__)
    return app
