"""The Training tab's film export: ``app.training.film.write_timeline`` driven from the GUI with a progress dialog.

Frames are rendered from Qt widgets, so they must be drawn on the GUI thread; instead of a worker thread, the
export processes the window's events after every frame (and before each, when it asks whether to cancel). The
window keeps repainting and answering, and the dialog's Cancel is read between frames; ``write_timeline`` writes
to a temporary file, so a cancelled export leaves nothing behind and an older file at the path untouched. The
dialog is window-modal: the learner cannot start a run (which would change the history being filmed) meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication, QProgressDialog, QWidget


class TimelineExport(QObject):
    """One export of ``history`` to ``path`` (.gif or .mp4). ``progressed(done, total)`` after each frame (tests
    press Cancel from it); ``dialog`` is the progress dialog while it runs."""

    progressed = Signal(int, int)

    def __init__(self, parent: QWidget, history: Any, path: str | Path, *, total_steps: int | None = None) -> None:
        super().__init__(parent)
        self.parent_widget, self.history, self.path, self.total_steps = parent, history, Path(path), total_steps
        self.dialog: QProgressDialog | None = None

    def cancel(self) -> None:
        if self.dialog is not None:
            self.dialog.cancel()

    def run(self) -> Path | None:
        """Write the film; the path, or None when cancelled. Errors propagate (the caller shows them)."""
        from app.training.film import write_timeline

        n = len(self.history)
        dialog = QProgressDialog(f"Rendering {n} frames to {self.path.name}…", "Cancel", 0, n, self.parent_widget)
        dialog.setWindowTitle("Export timeline")
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.setMinimumDuration(0)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.setValue(0)
        dialog.show()
        self.dialog = dialog

        def progress(done: int, total: int) -> None:
            dialog.setValue(done)
            if done == total:
                dialog.setLabelText(f"Writing {self.path.name}…")
            self.progressed.emit(done, total)
            QApplication.processEvents()

        def cancelled() -> bool:
            QApplication.processEvents()
            return dialog.wasCanceled()

        try:
            return write_timeline(self.path, self.history, total_steps=self.total_steps, progress=progress,
                                  cancelled=cancelled)
        finally:
            self.dialog = None
            dialog.close()
            dialog.deleteLater()
