""""Get a model…": the small models of ``CATALOGUE`` (or any repository id) downloaded from the Hugging Face hub into
its cache, with a progress bar, Cancel, and the refusal shown under the buttons; a finished model is listed in the
Model tab and can be opened from here. Layout and wiring only: ``ModelFetch`` downloads off the GUI thread.
Nothing is contacted until Download is pressed."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QDialog,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.get_model import ModelFetch
from app.model_tab.model.sources import CATALOGUE, hub_cache_dir
from app.widgets.theme import ThemeColors, colors_for, follow_theme, span

COLUMNS = ("Model", "Weights", "Licence", "Repository", "What it shows")


def _of(done: int, total: int) -> str:
    """"12.3 of 548.1 MB": both in the total's unit."""
    unit, scale = ("GB", 1e9) if total >= 1e9 else ("MB", 1e6) if total >= 1e6 else ("kB", 1e3)
    return f"{done / scale:,.1f} of {total / scale:,.1f} {unit}"


class GetModelDialog(QDialog):
    """See the module docstring. ``on_listed()`` runs when a download is done (the tab refreshes its list);
    ``on_open(path)`` when "Open it" is pressed."""

    def __init__(self, fetch: ModelFetch, on_listed: Callable[[], object] | None = None,
                 on_open: Callable[[str], object] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fetch, self.on_listed, self.on_open = fetch, on_listed, on_open
        self.setWindowTitle("Get a model")
        self.setMinimumWidth(560)
        v = QVBoxLayout(self)
        intro = QLabel("Small, openly licensed models from the Hugging Face hub. Only the safetensors weights, the "
                       "config and the tokenizer are fetched, into the Hugging Face cache, where other tools find "
                       f"them too: <code>{html.escape(str(hub_cache_dir()))}</code>. Nothing is contacted until you "
                       "press Download; a download stopped (Cancel, a lost connection) resumes where it stopped.")
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        v.addWidget(intro)
        self.table = QTreeWidget()
        self.table.setRootIsDecorated(False)
        self.table.setColumnCount(len(COLUMNS))
        self.table.setHeaderLabels(list(COLUMNS))
        for entry in CATALOGUE:
            item = QTreeWidgetItem([entry.title, entry.size, entry.licence, entry.repo_id, entry.note])
            item.setData(0, Qt.ItemDataRole.UserRole, (entry.repo_id, entry.revision))
            item.setToolTip(0, f"{entry.repo_id} ({entry.family}) — {entry.note}")
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.addTopLevelItem(item)
        header = self.table.header()
        header.setStretchLastSection(True)
        for col in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setSizeAdjustPolicy(QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents)
        rows = self.table.topLevelItemCount()  # every row shown without scrolling
        self.table.setMinimumHeight(header.sizeHint().height() + (rows + 1) * max(self.table.sizeHintForRow(0), 16)
                                    + 2 * self.table.frameWidth())
        self.table.currentItemChanged.connect(self._picked)
        self.table.itemDoubleClicked.connect(lambda *_: self._download())
        v.addWidget(self.table, 1)
        form = QGridLayout()
        form.addWidget(QLabel("Repository"), 0, 0)
        self.repo_edit = QLineEdit()
        self.repo_edit.setPlaceholderText("ORG/NAME, e.g. openai-community/gpt2 — any repository with safetensors")
        self.repo_edit.returnPressed.connect(self._download)
        form.addWidget(self.repo_edit, 0, 1)
        form.addWidget(QLabel("Revision"), 0, 2)
        self.revision_edit = QLineEdit()
        self.revision_edit.setPlaceholderText("main")
        self.revision_edit.setToolTip("A branch, tag or commit (empty: main)")
        self.revision_edit.setMaximumWidth(160)
        form.addWidget(self.revision_edit, 0, 3)
        form.setColumnStretch(1, 1)
        v.addLayout(form)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setFormat("%p%")
        v.addWidget(self.progress)
        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        self.status_label.setTextFormat(Qt.TextFormat.RichText)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # room for two lines from the start (the finished model's path is the second): the dialog never has to grow
        self.status_label.setMinimumHeight(2 * self.status_label.fontMetrics().lineSpacing() + 4)
        v.addWidget(self.status_label)
        buttons = QHBoxLayout()
        self.download_button = QPushButton("Download")
        self.download_button.setDefault(True)
        self.download_button.clicked.connect(self._download)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the download; what arrived is kept and Download resumes from there")
        self.cancel_button.clicked.connect(fetch.cancel)
        self.open_button = QPushButton("Open it")
        self.open_button.setToolTip("Load the downloaded model in the Model tab")
        self.open_button.clicked.connect(self._open)
        self.close_button = QPushButton("Close")
        self.close_button.clicked.connect(self.close)
        buttons.addWidget(self.download_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.close_button)
        v.addLayout(buttons)
        self.dark = False
        fetch.events.state.connect(self._on_state)
        fetch.events.progress.connect(self.refresh)
        follow_theme(self._restyle)
        first = self.table.topLevelItem(0)
        if first is not None:
            self.table.setCurrentItem(first)

    def _restyle(self, c: ThemeColors) -> None:
        self.dark = c.dark
        self.refresh()

    def _picked(self, item: QTreeWidgetItem | None, _previous: object = None) -> None:
        if item is None:
            return
        repo, revision = item.data(0, Qt.ItemDataRole.UserRole)
        self.repo_edit.setText(repo)
        self.revision_edit.setText("" if revision == "main" else revision)

    def _download(self) -> None:
        if not self.fetch.busy:
            self.fetch.start(self.repo_edit.text(), self.revision_edit.text())

    def _open(self) -> None:
        if self.fetch.path is not None and self.on_open is not None:
            self.on_open(str(self.fetch.path))
            self.close()

    def _on_state(self) -> None:
        if self.fetch.state == "done" and self.on_listed is not None:
            self.on_listed()
        self.refresh()

    def refresh(self, *_: object) -> None:
        f = self.fetch
        busy = f.busy
        self.download_button.setEnabled(not busy)
        self.download_button.setText("Download again" if f.state in ("cancelled", "refused") else "Download")
        self.cancel_button.setEnabled(f.state == "working")
        self.open_button.setEnabled(f.state == "done" and self.on_open is not None)
        self.table.setEnabled(not busy)
        self.repo_edit.setEnabled(not busy)
        self.revision_edit.setEnabled(not busy)
        self.progress.setValue(int(1000 * f.done / f.total) if f.total else (1000 if f.state == "done" else 0))
        self.progress.setVisible(f.state != "idle")
        c = colors_for(self.dark)
        if f.state == "refused":
            text = span("⚠ " + html.escape(f.message), c.bad)
        elif f.state == "done":
            text = html.escape(f.message) + f"<br><code>{html.escape(str(f.path or Path()))}</code>"
        elif busy and f.total:
            where = f" — {html.escape(f.file)}" if f.file else ""
            text = f"{html.escape(f.repo_id)}: {_of(f.done, f.total)}{where}"
            if f.state == "cancelling":
                text += " — cancelling…"
        elif busy:
            text = f"Asking the hub about {html.escape(f.repo_id)}…"
        else:
            text = html.escape(f.message)
        self.status_label.setText(text)
        self.status_label.setToolTip(str(f.path) if f.state == "done" and f.path is not None else "")
