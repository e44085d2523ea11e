"""``python -m app.lab``: the Lab tab alone (CPU only: no device detection)."""

import sys

from app.widgets.dev_window import show_alone


def _build():  # type: ignore[no-untyped-def]
    from app.lab.model import ScalingLab
    from app.lab.qt.tab import LabTab
    from app.widgets.workers import QtRunner

    return LabTab(ScalingLab(runner=QtRunner()))


if __name__ == "__main__":
    sys.exit(show_alone("Lab tab", _build))
