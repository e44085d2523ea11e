"""``python -m app.model_tab [FOLDER]``: the Model tab alone (the models found offline listed; FOLDER loaded at once).
"Open this head in the Playground" needs the whole window: ``python -m app``."""

import sys

from app.widgets.dev_window import show_alone

FOLDER = next((a for a in sys.argv[1:] if not a.startswith("-") and not a.endswith(".png")), None)


def _build():  # type: ignore[no-untyped-def]
    from app.common.paths import data_dir
    from app.model_tab.model.session import InspectSession
    from app.model_tab.qt.tab import ModelTab
    from app.widgets.workers import QtRunner

    session = InspectSession(runner=QtRunner(), own_folders=[data_dir(create=False) / "models"])
    tab = ModelTab(session)
    if FOLDER:
        session.load(FOLDER)
    tab.shutdown = lambda: session.shutdown()  # the development window stops the worker when it closes
    return tab


if __name__ == "__main__":
    sys.exit(show_alone("Model tab", _build, [a for a in sys.argv[1:] if a != FOLDER]))
