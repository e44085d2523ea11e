"""The Playground's ways out to a file: each step map's export title and context, the whole pipeline as one
figure, and File → Export pipeline figure…"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QFileDialog

from app.common.titles import step_title
from app.playground.model.concealment import Concealment
from app.playground.model.export_context import playground_context, shared_label
from app.widgets.export_button import FILTERS, IMAGE_FORMATS, guarded
from app.widgets.settings import dialog_dir, remember_dialog_path
from attention_core import STEP_NAMES

if TYPE_CHECKING:
    from app.playground.model.playground import PlaygroundModel
    from app.playground.qt.copy_code import PlaygroundWindow


OPTIONAL_UNITS = {"biased": "biased score", "capped": "soft-capped score", "q_angles": "angle (rad)",
                  "k_angles": "angle (rad)"}
"""The colour bar's unit of the optional steps' maps (the five's come from ``shared_label``; Q and K: "value")."""


def install_playground_exports(pipeline: Any, model: PlaygroundModel) -> None:
    """Give each map of ``pipeline`` (a ``PipelineView``: the five steps, and the optional steps' maps and the
    rotate step's whenever they are built) its export title ("Scores Q·Kᵀ × 1 (unscaled)" when nothing was
    scaled; "Q rotated (rotary positions)"), its colour bar's unit and the Playground's context, which names every
    option on. The rotate step's titles are read at export time: its module is imported when rotary is first on,
    never by the first frame."""
    concealment = Concealment.of(model)

    def extras(name: str, hm: Any) -> dict[str, Any]:
        from app.playground.qt.rotary_step import EXPORT_TITLES

        if concealment.hides(name):  # a lesson's question covers this map: refused, with why
            raise ValueError(concealment.withheld_message(name))
        levels = model.colours.levels
        return {"title": EXPORT_TITLES.get(name) or step_title(name, float(model.result.scale)),
                "context": playground_context(model),
                "colorbar_label": OPTIONAL_UNITS.get(name) or shared_label(name, model),
                "levels": levels[name] if name in levels else hm.levels() if name in EXPORT_TITLES else None}

    pipeline.set_export_extras(extras)


def export_pipeline_figure(path: str | Path, model: PlaygroundModel) -> str:
    """The whole pipeline of the model's current result as one figure (``write_pipeline_figure``), with its
    context; returns the title written."""
    from app.playground.qt.pipeline_figure import write_pipeline_figure

    withheld = Concealment.of(model).withheld_message(*STEP_NAMES)
    if withheld:  # the figure shows every step
        raise ValueError(withheld)
    steps = model.result
    return write_pipeline_figure(path, steps, list(model.query_tokens), list(model.key_tokens),
                                 context=playground_context(model))


def export_pipeline_dialog(window: PlaygroundWindow) -> str | None:
    """File → Export pipeline figure…: PNG, SVG or PDF (the dialog's filter, or the typed suffix, decides)."""
    start = str(Path(dialog_dir()) / "attention-pipeline.png")
    path, chosen = QFileDialog.getSaveFileName(window.window(), "Export pipeline figure", start,
                                               ";;".join(FILTERS[f] for f in IMAGE_FORMATS))
    if not path:
        return None
    remember_dialog_path(path)
    if Path(path).suffix.lower() not in (".png", ".svg", ".pdf"):
        path += "." + next((f for f in IMAGE_FORMATS if FILTERS[f] == chosen), "png")
    if not guarded(window.window(), lambda: export_pipeline_figure(path, window.playground)):
        return None
    window.statusBar().showMessage(f"Exported the pipeline figure to {path}", 6000)
    return path


OPTIONAL_FILES = {"q_rotated": "0-q_rotated", "k_rotated": "0-k_rotated", "capped": "2a-capped", "biased": "2b-biased"}
"""File names of the optional steps' maps in File → Export all steps: the five keep their numbers (1-scores …
5-output) whatever is on; the rotated Q and K come before ①, the soft-cap and then the bias between ② and ③ (the
order computed: a folder sorted by name reads in that order)."""


def export_all_steps(pipeline: Any, model: PlaygroundModel, folder: str | Path) -> list[Path]:
    """Every step the Steps view shows as PNG, SVG and CSV into ``folder``: the five, and the optional steps that
    are on (rotated Q and K, soft-capped, biased scores), each with its export title and the Playground's setting;
    not the maps a lesson's question covers now."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pipeline.redraw()  # the Steps view may be hidden behind another view: draw the current result
    concealment = Concealment.of(model)
    maps = [(f"{n}-{name}", name, pipeline.heatmaps[name]) for n, name in enumerate(STEP_NAMES, start=1)]
    maps += [(OPTIONAL_FILES[name], name, hm) for name, hm in pipeline.heatmaps.items() if name in OPTIONAL_FILES]
    if pipeline.rotary is not None and model.rotary_base is not None:
        maps += [(OPTIONAL_FILES[name], name, pipeline.rotary.maps[name]) for name in ("q_rotated", "k_rotated")
                 if name in pipeline.rotary.maps]
    written = []
    for stem, name, hm in maps:
        if concealment.hides(name):
            continue
        for suffix in ("png", "svg", "csv"):
            path = folder / f"{stem}.{suffix}"
            hm.export(path)
            written.append(path)
    return written
