"""The Training tab's exports: the head grid, one head, the curves, Try it's map, the metrics CSV and the timeline
film, from the panel's Export menu and from an Export button on the grid and on the curves.

Every image names what it shows and when: the task, the step (of the run's total) and the latest test accuracy,
as ``app.training.film.frame_title`` words it for the film's frames, so a still and a frame of the film agree. The
grid goes through ``app.training.film.export_head_grid`` (the film's frame widget, light theme, titled), not a grab
of the window's grid (no title, no step, dark in dark theme).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtWidgets import QMenu, QWidget

from app.widgets.export_button import IMAGE_FORMATS, add_format_actions, attach_export_button, export_with_dialog

if TYPE_CHECKING:
    from app.training.model.session import TrainingSession
    from app.training.qt.film_export import TimelineExport
    from app.widgets.grid.head_grid import HeadGrid


class ExportingPanel(Protocol):
    """What the exports need of the Training tab (``TrainingPanel`` is one; declared here so this module never
    imports the panel that builds it): its session and the widgets whose Export buttons it adds."""

    session: TrainingSession

    @property
    def head_grid(self) -> HeadGrid: ...

    @property
    def plots(self) -> QWidget: ...

    @property
    def tryit(self) -> Any: ...

    def window(self) -> QWidget:
        """The panel's window (Qt's ``QWidget.window()``): the parent of the export dialogs and messages."""
        ...


class TrainingExports:
    """Export actions of one ``TrainingPanel``; ``fill_menu`` builds its Export menu."""

    def __init__(self, panel: ExportingPanel) -> None:
        self.panel = panel
        self.session = panel.session
        self.last_timeline: TimelineExport | None = None  # the running or last one (tests watch it)
        self.fallback_box: Any = None  # the note shown when an MP4 was saved as a GIF (no ffmpeg)
        self.grid_button = attach_export_button(panel.head_grid, self._fill_grid_menu,
                                                "Export the head grid at the shown step…")
        self.plots_button = attach_export_button(panel.plots, self._fill_plots_menu, "Export the curves…")
        panel.tryit.heatmap.export_extras = lambda: {"context": self.context_line()}

    # ---------------------------------------------------------------- context
    def context_line(self) -> str:
        """"reversal task · step 12 / 79 · test sequence accuracy 45% (at step 12) · probe …" for the shown step
        (the task the shown run was trained on)."""
        from app.training.film import frame_title

        s = self.session
        if not len(s.history):
            cfg = s.model_config
            return f"{cfg.task if cfg is not None else 'reversal'} task · no step recorded yet"
        title, line = frame_title(s.history, s.shown_index, s.total_steps)
        step = title.removeprefix("Heads at ")
        return f"{step} · {line}"

    # ---------------------------------------------------------------- menus
    def _has(self) -> bool:
        return self.session.shown_snapshot is not None

    def _fill_grid_menu(self, menu: QMenu) -> None:
        add_format_actions(menu, IMAGE_FORMATS, lambda f: self.dialog("grid", f), "Head grid as ")
        for act in menu.actions():
            act.setEnabled(self._has())

    def _fill_plots_menu(self, menu: QMenu) -> None:
        add_format_actions(menu, IMAGE_FORMATS, lambda f: self.dialog("plots", f), "Curves as ")
        menu.addAction("Metrics history as CSV…", lambda: self.dialog("csv", "csv"))
        for act in menu.actions():
            act.setEnabled(self._has())

    def fill_menu(self, menu: QMenu) -> None:
        """The panel's Export ▾ menu: grid, one head, curves, the timeline film, the metrics CSV."""
        menu.clear()
        has = self._has()
        self._fill_grid_menu(menu)
        heads = menu.addMenu("One head (PNG, SVG, PDF or CSV)")
        heads.setEnabled(has)
        layers, nh = self.panel.head_grid.shape
        for li in range(layers if has else 0):
            for h in range(nh):
                heads.addAction(f"layer {li + 1} · head {h + 1}…", partial(self.dialog, "head", "png", (li, h)))
        add_format_actions(menu, IMAGE_FORMATS, lambda f: self.dialog("plots", f), "Curves as ")
        menu.addSeparator()
        busy = self.session.is_running
        from app.training.film import mp4_problem

        no_mp4 = mp4_problem()  # no ffmpeg (the bundle ships none): the MP4 entry says it saves a GIF instead
        for fmt in ("gif", "mp4"):
            label = "animated GIF" if fmt == "gif" else "MP4 video" + (" (no ffmpeg: saved as GIF)" if no_mp4 else "")
            act = menu.addAction(f"Timeline as {label}…", partial(self.dialog, "timeline", fmt))
            act.setEnabled(has and not busy)
            act.setToolTip("One frame per recorded step" + (" (pause or wait for the run to end)" if busy else "")
                           + (f". {no_mp4}." if fmt == "mp4" and no_mp4 else ""))
        menu.setToolTipsVisible(True)
        menu.addSeparator()
        menu.addAction("Metrics history as CSV…", lambda: self.dialog("csv", "csv")).setEnabled(has)

    def dialog(self, what: str, fmt: str, head: tuple[int, int] = (0, 0)) -> str | None:
        step = self.session.shown_step or 0
        name = {"grid": f"heads-step{step}.{fmt}", "plots": f"training-curves-step{step}.{fmt}",
                "csv": "training-history.csv", "timeline": f"{self._task()}-timeline.{fmt}",
                "head": f"layer{head[0] + 1}-head{head[1] + 1}-step{step}.{fmt}"}[what]
        write = {"grid": self.export_grid, "plots": self.export_plots, "csv": self.export_history_csv,
                 "timeline": self.export_timeline, "head": lambda p: self.export_head(*head, p)}[what]
        return export_with_dialog(self.panel.window(), fmt, name, write)

    def _task(self) -> str:
        snap = self.session.shown_snapshot
        return snap.task if snap is not None else "reversal"

    # ---------------------------------------------------------------- files
    def export_grid(self, path: str | Path) -> str:
        """The head grid at the shown step (PNG, SVG or PDF), titled with step, task and accuracy."""
        from app.training.film import export_head_grid

        s = self.session
        if not len(s.history):
            raise ValueError("nothing to export yet: train or load a model first")
        return export_head_grid(path, s.history, s.shown_index, total_steps=s.total_steps)

    def export_head(self, layer: int, head: int, path: str | Path) -> str:
        """One head's map at the shown step as PNG, SVG, PDF or CSV."""
        from app.widgets.heatmap.view import write_heatmap_file  # views write through the view layer (import contract)
        from attention_core.masks import causal_mask

        snap = self.session.shown_snapshot
        if snap is None:
            raise ValueError("nothing to export yet")
        vals = snap.probe_weights[layer][head]
        blocked = ~causal_mask(vals.shape[0]) if snap.causal else None
        title = f"Layer {layer + 1} · head {head + 1} attention"
        return write_heatmap_file(path, vals, snap.labels, snap.labels, title, blocked=blocked, kind="weights",
                                  row_title="query position", col_title="key position",
                                  context=self.context_line(), colorbar_label="weight")

    def export_plots(self, path: str | Path) -> str:
        """The loss and accuracy curves with the shown step marked, titled (``plots.write_plots``)."""
        from app.training.qt.plots import write_plots

        s = self.session
        latest = s.history.latest
        return write_plots(path, s.history, shown_step=s.shown_step or 0,
                           max_step=max(s.total_steps, latest.step if latest is not None else 0),
                           context=self.context_line())

    def export_history_csv(self, path: str | Path) -> Path:
        from attention_core.tiny.report import write_history_csv

        write_history_csv(path, self.session.history.reports())
        return Path(path)

    def export_timeline(self, path: str | Path) -> Path | None:
        """The recorded history as a GIF or MP4, one frame per step, with a progress dialog and Cancel (see
        ``film_export``). None when cancelled (then no file was written)."""
        from app.training.film import mp4_fallback_note
        from app.training.qt.film_export import TimelineExport

        s = self.session
        if not len(s.history):
            raise ValueError("nothing recorded yet: train or load a model first")
        if s.is_running:
            raise ValueError("pause or stop the run first: the film is made of the recorded steps")
        self.last_timeline = job = TimelineExport(self.panel.window(), s.history, path, total_steps=s.total_steps)
        written = job.run()
        if written is not None and (note := mp4_fallback_note(path, written)):
            from PySide6.QtWidgets import QMessageBox

            self.fallback_box = box = QMessageBox(QMessageBox.Icon.Information, "Saved as GIF", note,
                                                  QMessageBox.StandardButton.Ok, self.panel.window())
            box.open()  # says so without blocking (the film is written)
        return written
