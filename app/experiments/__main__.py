"""``python -m app.experiments``: the Experiments tab alone (its first preset, nothing run)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from app.experiments.model.session import ExperimentSession
    from app.experiments.qt.tab import ExperimentTab
    from app.widgets.workers import QtRunner

    return ExperimentTab(ExperimentSession(runner=QtRunner()))


if __name__ == "__main__":
    sys.exit(show_alone("Experiments tab", _build))
