"""``python -m app.flow``: the Playground's Flow view alone, on cat-sat-mat."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from app.flow.qt.view import PlaygroundFlowView
    from app.playground.model.playground import PlaygroundModel

    return PlaygroundFlowView(PlaygroundModel())


if __name__ == "__main__":
    sys.exit(show_alone("Flow view", _build))
