"""One way out to a file from every panel: a small Export button in the panel's corner, its menu of formats, the
save dialog, and the context an exported figure must carry.

Right-click menus are invisible to a newcomer (issue 11), so every map and figure gets a visible button; the
button, the menu, the dialog and the error box are written once here and reused by the heatmaps
(``HeatmapWidget``), the Training tab (head grid, curves, Try it) and the window's File menu (pipeline figure).
A file leaves the window behind, so the Playground's exports name the setting (``playground_context``: preset or
"edited", mask, scale) and the Training tab's name the task, step and accuracy (``app.animation.frame_title``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QStyle, QToolButton, QWidget

from ..models.colour_range import SHARED_STEPS
from ..rendering import ExportContext, colorbar_label, step_title
from .heatmap_export import suggested_filename

if TYPE_CHECKING:
    from ..models.playground import PlaygroundModel
    from .heatmap import HeatmapWidget

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
    start = str(Path(start_dir) / name) if start_dir else str(Path.home() / name)
    path, _ = QFileDialog.getSaveFileName(parent, f"Export {fmt.upper()}", start, FILTERS[fmt])
    if not path:
        return None
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


# ---------------------------------------------------------------- heatmaps
def heatmap_export_button(hm: HeatmapWidget) -> CornerButton:
    """The Export button of one map: PNG, SVG, PDF or CSV through the map's own ``export`` (which adds the
    context its ``export_extras`` provides)."""

    def choose(fmt: str) -> None:
        export_with_dialog(hm, fmt, suggested_filename(hm.title(), fmt), hm.export, hm.export_dir)

    def fill(menu: QMenu) -> None:
        add_format_actions(menu, HEATMAP_FORMATS, choose)
        for act in menu.actions():
            act.setEnabled(hm.values().size > 0)

    return attach_export_button(hm, fill, "Export this map (PNG, SVG, PDF or CSV)…")


def playground_context(model: PlaygroundModel) -> ExportContext:
    """The setting behind the Playground's maps, as an export names it: the preset ("edited" once its inputs
    were changed, none for a session without one), the mask and the scale used (with d_k, so 1/√d_k is named)."""
    preset = model.preset
    name = None if preset is None else ("edited" if _inputs_edited(model) else preset.name)
    steps = model.result
    d_k = int(steps.q.shape[-1])
    return ExportContext(preset=name, mask=str(model.mask_mode), scale=float(steps.scale), d_k=d_k)


def _inputs_edited(model: PlaygroundModel) -> bool:
    """Whether the tokens or matrices differ from the preset's. ``preset_edited`` also counts the scale and the
    mask, which the context names on their own: a preset with the causal mask is still that preset."""
    from ..models.playground_text import story_key

    if not model.preset_edited:
        return False
    now, ref = story_key(model.state), model._preset_key
    return now[:5] + now[7:] != ref[:5] + ref[7:]


def install_playground_exports(pipeline: Any, model: PlaygroundModel) -> None:
    """Give each step map of ``pipeline`` (a ``PipelineView``) its export title ("Scores Q·Kᵀ × 1 (unscaled)"
    when nothing was scaled), its colour bar's unit and the Playground's context."""
    for name, hm in pipeline.heatmaps.items():
        hm.export_extras = lambda n=name: {
            "title": step_title(n, float(model.result.scale)), "context": playground_context(model),
            "colorbar_label": shared_label(n, model), "levels": model.colours.levels.get(n)}


def shared_label(name: str, model: PlaygroundModel) -> str:
    """The colour bar's unit, and, for the maps drawn in one shared range, that the range is shared (so an
    exported ① and ② compare by colour as they do in the window)."""
    label = colorbar_label(name, float(model.result.scale))
    return f"{label} (range shared by steps 1-3)" if model.colours.shared and name in SHARED_STEPS else label


def export_pipeline_figure(path: str | Path, model: PlaygroundModel) -> str:
    """The whole pipeline of the model's current result as one figure (``write_pipeline_figure``), with its
    context; returns the title written."""
    from .pipeline_figure import write_pipeline_figure

    steps = model.result
    return write_pipeline_figure(path, steps, list(model.query_tokens), list(model.key_tokens),
                                 context=playground_context(model))


def export_pipeline_dialog(window: Any) -> str | None:
    """File → Export pipeline figure…: PNG, SVG or PDF (the dialog's filter, or the typed suffix, decides)."""
    start = str(Path(window.settings.last_dir()) / "attention-pipeline.png")
    path, chosen = QFileDialog.getSaveFileName(window, "Export pipeline figure", start,
                                               ";;".join(FILTERS[f] for f in IMAGE_FORMATS))
    if not path:
        return None
    if Path(path).suffix.lower() not in (".png", ".svg", ".pdf"):
        path += "." + next((f for f in IMAGE_FORMATS if FILTERS[f] == chosen), "png")
    if not guarded(window, lambda: export_pipeline_figure(path, window.playground)):
        return None
    window.settings.set_last_dir(path)
    window.statusBar().showMessage(f"Exported the pipeline figure to {path}", 6000)
    return path
