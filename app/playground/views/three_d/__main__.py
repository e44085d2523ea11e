"""``python -m app.playground.views.three_d``: the 3D view alone, on cat-sat-mat (a message where OpenGL is missing)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from app.playground.model.playground import PlaygroundModel
    from app.playground.views.three_d.view import ThreeDView

    return ThreeDView(PlaygroundModel())


if __name__ == "__main__":
    sys.exit(show_alone("3D view", _build))
