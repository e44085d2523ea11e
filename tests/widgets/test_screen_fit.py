"""A window larger than its screen is shrunk and moved inside (never below its minimum size); the offscreen platform
(no real screen) is left alone."""

from __future__ import annotations

from app.widgets import screen_fit


def test_a_window_larger_than_the_screen_is_fitted_inside(window, monkeypatch):
    room = window.screen().availableGeometry()  # offscreen: a nominal screen, treated here as a real one
    monkeypatch.setattr(screen_fit.QGuiApplication, "platformName", staticmethod(lambda: "xcb"))
    least = window.minimumSizeHint().expandedTo(window.minimumSize())
    window.resize(room.width() + 500, room.height() + 300)
    window.move(room.left() + 200, room.top() + 100)
    screen_fit.fit_to_screen(window)
    width, height = max(room.width(), least.width()), max(room.height(), least.height())
    assert (window.width(), window.height()) == (width, height)
    assert window.x() == max(room.left(), room.right() + 1 - width) and window.y() == room.top()
    screen_fit.fit_to_screen(window)  # the narrower window may take a narrower layout (a smaller minimum)
    size = (window.width(), window.height())
    assert size[0] <= width and size[1] <= height
    window.move(room.left(), room.top())  # one that fits stays as it is
    screen_fit.fit_to_screen(window)
    assert (window.width(), window.height(), window.x(), window.y()) == (*size, room.left(), room.top())


def test_offscreen_windows_keep_the_size_they_ask_for(window):
    room = window.screen().availableGeometry()
    window.resize(room.width() + 500, room.height() + 300)
    screen_fit.fit_to_screen(window)
    assert window.width() == room.width() + 500
