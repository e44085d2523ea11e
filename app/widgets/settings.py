"""Typed access to QSettings (window layout, theme, recent files) and the user's data folder."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from app.common.paths import default_dir

__all__ = ["MAX_RECENT", "THEMES", "ZOOM_RANGE", "Settings", "dialog_dir", "remember_dialog_path", "use_for_dialogs"]

THEMES = ("light", "dark", "system")
"""The theme choices: the View menu offers them (``app.widgets.theme``), ``Settings.theme`` stores one."""
MAX_RECENT = 8
ZOOM_RANGE = (0.5, 3.0)
"""The text zoom's limits (``Settings.zoom``): half to three times the desktop's font size."""


class Settings:
    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.q = qsettings or QSettings()

    @property
    def theme(self) -> str:
        """"light", "dark" or "system" (follow the desktop's colour scheme; the default). Anything else that
        found its way into the file reads as "system"."""
        value = str(self.q.value("ui/theme", "system"))
        return value if value in THEMES else "system"

    @theme.setter
    def theme(self, value: str) -> None:
        if value not in THEMES:
            raise ValueError(f"theme must be one of {THEMES}, got {value!r}")
        self.q.setValue("ui/theme", value)

    @property
    def zoom(self) -> float:
        """The text zoom of the window (Ctrl+= / Ctrl+-, ``app.shell.presentation``): 1.0 is the desktop's font size. A
        lecture hall needs it bigger on every start, so it is remembered; values outside ``ZOOM_RANGE`` (or not a
        number) read as the nearest limit (or 1.0)."""
        try:
            value = float(str(self.q.value("ui/zoom", 1.0)))
        except (TypeError, ValueError):
            return 1.0
        if value != value:  # NaN
            return 1.0
        return min(max(value, ZOOM_RANGE[0]), ZOOM_RANGE[1])

    @zoom.setter
    def zoom(self, value: float) -> None:
        self.q.setValue("ui/zoom", min(max(float(value), ZOOM_RANGE[0]), ZOOM_RANGE[1]))

    @property
    def shared_range(self) -> bool:
        """Whether the Steps maps ① ② ③ share one colour range (the default): a way of looking, kept across
        starts like the theme and the zoom."""
        return str(self.q.value("ui/shared_range", "true")).lower() not in ("false", "0", "no")

    @shared_range.setter
    def shared_range(self, value: bool) -> None:
        self.q.setValue("ui/shared_range", "true" if value else "false")

    def recent_files(self) -> list[str]:
        value = self.q.value("files/recent", [])
        files = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return [str(v) for v in files if Path(str(v)).exists()][:MAX_RECENT]

    def add_recent(self, path: str) -> None:
        files = [path] + [f for f in self.recent_files() if f != path]
        self.q.setValue("files/recent", files[:MAX_RECENT])

    def last_dir(self) -> str:
        """The folder the user last chose in a file dialog; before any (or once it is gone): their Documents or
        home folder, never the app's hidden data folder."""
        value = str(self.q.value("files/last_dir", "") or "")
        return value if value and Path(value).is_dir() else str(default_dir())

    def set_last_dir(self, path: str, is_dir: bool = False) -> None:
        """Remember the folder of ``path`` (a chosen file), or ``path`` itself with ``is_dir``."""
        self.q.setValue("files/last_dir", str(Path(path) if is_dir else Path(path).parent))

    def geometry(self) -> QByteArray | None:
        value = self.q.value("window/geometry")
        return value if isinstance(value, QByteArray) else None

    def window_state(self) -> QByteArray | None:
        value = self.q.value("window/state")
        return value if isinstance(value, QByteArray) else None

    def save_window(self, geometry: QByteArray, state: QByteArray) -> None:
        self.q.setValue("window/geometry", geometry)
        self.q.setValue("window/state", state)

    def splitter_state(self, name: str = "") -> QByteArray | None:
        """A splitter's saved sizes: the Playground's (no name), "training", "training-main" and "training-right"
        (the Training tab's splitters, ``app/training/qt/layout.py``). A collapsed side column stays collapsed."""
        value = self.q.value(f"window/splitter-{name}" if name else "window/splitter")
        return value if isinstance(value, QByteArray) else None

    def set_splitter_state(self, state: QByteArray, name: str = "") -> None:
        self.q.setValue(f"window/splitter-{name}" if name else "window/splitter", state)


# ---------------------------------------------------------------- where file dialogs open
_dialogs: Settings | None = None
_chosen = ""


def use_for_dialogs(settings: Settings | None) -> None:
    """Remember the folders chosen in every file dialog in ``settings`` (the window's; None: in memory only)."""
    global _dialogs
    _dialogs = settings


def dialog_dir(start_dir: str = "") -> str:
    """Where a file dialog opens: the folder the user last chose in any of the app's dialogs, else ``start_dir``,
    else their Documents or home folder."""
    if _dialogs is not None:
        chosen = str(_dialogs.q.value("files/last_dir", "") or "")
    else:
        chosen = _chosen
    if chosen and Path(chosen).is_dir():
        return chosen
    return start_dir if start_dir and Path(start_dir).is_dir() else str(default_dir())


def remember_dialog_path(path: str, is_dir: bool = False) -> None:
    """A file dialog returned ``path``: its folder is where the next dialog opens."""
    global _chosen
    if not path:
        return
    _chosen = str(Path(path) if is_dir else Path(path).parent)
    if _dialogs is not None:
        _dialogs.set_last_dir(path, is_dir)
