"""``python -m app.<feature>``: one feature's Qt part alone in a window, on its default state, for development.

Each feature's ``__main__`` builds its model and its tab and hands them to ``show_alone``. ``--grab FILE.png``
renders the window to a file once it is laid out and exits (the architecture test opens every feature this way);
without it the window stays until closed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QWidget


def show_alone(title: str, build: Callable[[], QWidget], argv: list[str] | None = None) -> int:
    """Open ``build()`` (called once the QApplication exists) in a window titled ``title``; 0 when closed (or
    grabbed with ``--grab FILE``)."""
    parser = argparse.ArgumentParser(prog=f"python -m app.<feature> ({title})",
                                     description=f"Open the {title} alone in a window, for development.")
    parser.add_argument("--grab", metavar="FILE.png", help="render the window to FILE.png once shown, then exit")
    parser.add_argument("--size", default="1100x720", help="window size WIDTHxHEIGHT (default 1100x720)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    width, _, height = args.size.partition("x")
    if args.grab:
        import os

        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from app.widgets.application import make_application
    from app.widgets.qt_compat import delete_now

    qt_app: Any = make_application()
    widget = build()
    widget.setWindowTitle(f"Attention Playground — {title} (development window)")
    widget.resize(int(width), int(height))
    widget.show()
    if args.grab:
        for _ in range(5):
            QApplication.processEvents()
        ok = widget.grab().save(args.grab)
        _close(widget)
        delete_now(widget)
        return 0 if ok else 1
    code = int(qt_app.exec())
    _close(widget)
    return code


def _close(widget: QWidget) -> None:
    """Stop the widget's background work (a panel's ``shutdown``) before it goes."""
    shutdown = getattr(widget, "shutdown", None)
    if callable(shutdown):
        shutdown()
    widget.close()
