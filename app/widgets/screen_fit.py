"""Keep a top-level window on its screen: the main window's default 1280 x 800, or a size saved on a bigger screen,
ran off a 1024 x 640 one (seen under Xvfb: the Output map and the right column were cut off). The Learn dock uses it
too when docking widens the window.
"""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget


def fit_to_screen(window: QWidget) -> None:
    """Shrink ``window`` to its screen's free area (never below its minimum size) and move it back inside. Not on
    the offscreen platform, whose "screen" is a nominal 800 x 800 that nothing is shown on (headless exports and
    ``lessons --run`` keep the sizes they ask for), nor for a maximised or full-screen window."""
    screen = window.screen()
    if screen is None or QGuiApplication.platformName() == "offscreen" or window.isFullScreen() \
            or window.isMaximized():
        return
    room = screen.availableGeometry()
    least = window.minimumSizeHint().expandedTo(window.minimumSize())
    width = max(min(window.width(), room.width()), least.width())
    height = max(min(window.height(), room.height()), least.height())
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
    x = min(max(window.x(), room.left()), max(room.left(), room.right() + 1 - width))
    y = min(max(window.y(), room.top()), max(room.top(), room.bottom() + 1 - height))
    if (x, y) != (window.x(), window.y()):
        window.move(x, y)
