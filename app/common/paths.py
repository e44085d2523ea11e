"""Where the app keeps its files, Qt-free: the data folder (sessions, models, lesson progress, crash logs) and the
folder a file dialog opens in the first time (the user's Documents or home, never the hidden data folder).

``app.widgets.settings`` re-exports ``data_dir`` for the Qt side; the CLI's crash handler (``app.common.entry``)
uses it directly, without Qt.
"""

from __future__ import annotations

from pathlib import Path

APP_NAME = "AttentionPlayground"


def data_dir(create: bool = True) -> Path:
    """Where sessions, exports, models and lesson progress go by default (created on first use; ``create=False``
    for a path that is only written later, so merely starting the app leaves no folder behind)."""
    from platformdirs import user_data_dir

    path = Path(user_data_dir(APP_NAME, appauthor=False))
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def default_dir() -> Path:
    """Where a file dialog opens before the user has chosen any folder: their Documents folder where it exists,
    else their home folder."""
    home = Path.home()
    try:
        from platformdirs import user_documents_dir

        documents = Path(user_documents_dir())
    except Exception:  # platformdirs cannot tell (an unusual desktop): home is always right
        return home
    return documents if documents.is_dir() and documents != home else home
