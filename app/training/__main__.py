"""``python -m app.training``: the Training tab alone (its own session; training runs on a worker thread)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from app.training.model.session import TrainingSession
    from app.training.qt.panel import TrainingPanel
    from app.widgets.workers import QtRunner

    return TrainingPanel(TrainingSession(runner=QtRunner()))


if __name__ == "__main__":
    sys.exit(show_alone("Training tab", _build))
