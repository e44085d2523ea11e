"""One way out to a file from every panel: a small Export button in the panel's corner, its menu of formats, the
save dialog, and the context an exported figure must carry.

Right-click menus are invisible to a newcomer, so every map and figure gets a visible button; the
button, the menu, the dialog and the error box are written once here and reused by the heatmaps
(``HeatmapWidget``), the Training tab (head grid, curves, Try it) and the window's File menu (pipeline figure).
A file leaves the window behind, so the Playground's exports name the setting
(``app.playground.model.export_context``: preset or "edited", mask, scale) and the Training tab's name the task,
step and accuracy (``app.training.film.frame_title``). Knows no feature: a feature hands it what to write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QStyle, QToolButton, QWidget

from app.widgets.settings import dialog_dir, remember_dialog_path

FORMAT_TEXT = {"png": "PNG image…", "svg": "SVG image…", "pdf": "PDF document…", "csv": "CSV numbers…",
               "gif": "animated GIF…", "mp4": "MP4 video…"}
FILTERS = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "pdf": "PDF document (*.pdf)",
           "csv": "CSV numbers (*.csv)", "gif": "Animated GIF (*.gif)", "mp4": "MP4 video (*.mp4)"}
HEATMAP_FORMATS = ("png", "svg", "pdf", "csv")
IMAGE_FORMATS = ("png", "svg", "pdf")


def add_format_actions(menu: QMenu, formats: Sequence[str], choose: Callable[[str], object],
                       prefix: str = "Export ") -> None:
    """One action per format (its data is the format) calling ``choose(fmt)``."""
    for fmt in formats:
        act = menu.addAction(prefix + FORMAT_TEXT[fmt])
        act.setData(fmt)
        act.triggered.connect(lambda _checked=False, f=fmt: choose(f))


class CornerButton(QToolButton):
    """A small save-icon button pinned to the top-right corner of ``host`` (a child, outside its layout, so the
    host's layout and size hints do not change); its menu is rebuilt by ``fill(menu)`` each time it opens, so
    the entries reflect the moment (e.g. disabled before anything was recorded)."""

    def __init__(self, host: QWidget, fill: Callable[[QMenu], None], tooltip: str = "Export this view…") -> None:
        super().__init__(host)
        self.setObjectName("exportButton")
        self.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_DialogSaveButton))
        self.setText("Export")
        self.setAccessibleName("Export")
        self.setToolTip(tooltip)
        self.setAutoRaise(True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setMenu(QMenu(self))
        self._fill = fill
        self.menu().aboutToShow.connect(self.refill)
        host.installEventFilter(self)
        self._place()
        self.raise_()

    def refill(self) -> QMenu:
        """Rebuild the menu now (tests call it, then trigger an action)."""
        menu = self.menu()
        menu.clear()
        self._fill(menu)
        return menu

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self.parent() and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self._place()
        return False

    def _place(self) -> None:
        host = self.parentWidget()
        if host is None:
            return
        size = self.sizeHint()
        self.resize(size)
        self.move(max(0, host.width() - size.width() - 2), 2)
        self.raise_()


def attach_export_button(host: QWidget, fill: Callable[[QMenu], None], tooltip: str = "Export this view…"
                         ) -> CornerButton:
    return CornerButton(host, fill, tooltip)


def ask_save_path(parent: QWidget | None, fmt: str, name: str, start_dir: str = "") -> str | None:
    """The save dialog for one format, starting at ``start_dir/name``; the path with the format's suffix, or None
    when cancelled."""
    start = str(Path(dialog_dir(start_dir)) / name)  # the folder the user last chose (first time: Documents)
    path, _ = QFileDialog.getSaveFileName(parent, f"Export {fmt.upper()}", start, FILTERS[fmt])
    if not path:
        return None
    remember_dialog_path(path)
    return path if path.lower().endswith("." + fmt) else path + "." + fmt


def guarded(parent: QWidget | None, write: Callable[[], object]) -> bool:
    """Run an export; a disk or format error is shown in a box (the window stays usable), not raised."""
    try:
        write()
    except (OSError, ValueError, RuntimeError) as exc:
        QMessageBox.warning(parent, "Export failed", str(exc))
        return False
    return True


def export_with_dialog(parent: QWidget | None, fmt: str, name: str, write: Callable[[str], object],
                       start_dir: str = "") -> str | None:
    """Ask for a path, write it (errors in a box); the path written or None."""
    path = ask_save_path(parent, fmt, name, start_dir)
    if path is None or not guarded(parent, lambda: write(path)):
        return None
    return path
