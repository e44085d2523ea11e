"""``python -m app.surface``: the 3D surface view alone, on cat-sat-mat (a message where OpenGL is missing)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from app.playground.model.playground import PlaygroundModel
    from app.surface.qt.view import SurfaceView

    return SurfaceView(PlaygroundModel())


if __name__ == "__main__":
    sys.exit(show_alone("3D view", _build))
