"""``python -m app.playground.views.flow``: the Playground's Flow view alone, on cat-sat-mat."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from app.playground.model.playground import PlaygroundModel
    from app.playground.views.flow.view import PlaygroundFlowView

    return PlaygroundFlowView(PlaygroundModel())


if __name__ == "__main__":
    sys.exit(show_alone("Flow view", _build))
