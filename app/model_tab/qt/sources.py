"""The Model tab's left column: where a model comes from (Open folder…, Get a model… from the Hugging Face hub, the
models found offline, the models this app trained, the folders opened before), the dtype, loading with a busy bar
and Cancel, and what was loaded."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.model_tab.model.get_model import ModelFetch
from app.model_tab.model.session import DTYPES, InspectSession
from app.model_tab.qt.get_model import GetModelDialog

HELP = ("A Hugging Face model folder (config.json, model.safetensors, tokenizer.json): GPT-2, Llama, Mistral, Qwen2, "
        "Qwen3, SmolLM2, SmolLM3, Phi-3, OLMo-2, Gemma 2, Gemma 3, Pythia, GPT-Neo / TinyStories, or the encoders "
        "BERT, RoBERTa, DistilBERT; or a model trained in this app (Training → Save, or <code>train --out</code>)."
        " The list shows what is on this computer; <b>Get a model…</b> downloads a small one from the Hugging Face"
        " hub.")


class SourcesPanel(QWidget):
    """Open, pick, load and cancel; every widget shows the session's state (``refresh``)."""

    def __init__(self, session: InspectSession, start_dir: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session, self.start_dir = session, start_dir
        v = QVBoxLayout(self)
        v.setContentsMargins(4, 4, 4, 4)
        row = QHBoxLayout()
        self.open_button = QPushButton("Open folder…")
        self.open_button.setToolTip("Open a model folder (or an app-trained .safetensors file's folder)")
        self.open_button.clicked.connect(self.open_dialog)
        row.addWidget(self.open_button)
        self.get_button = QPushButton("Get a model…")
        self.get_button.setToolTip("Download a small model (GPT-2, Pythia, SmolLM2, Qwen3, BERT…) or any repository "
                                   "from the Hugging Face hub into its cache")
        self.get_button.clicked.connect(self.open_get_model)
        row.addWidget(self.get_button)
        v.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("dtype"))
        self.dtype_combo = QComboBox()
        self.dtype_combo.addItems(list(DTYPES))
        self.dtype_combo.setToolTip("float32: exact. bfloat16: half the memory, numbers rounded to ~3 digits.")
        self.dtype_combo.currentTextChanged.connect(session.set_dtype)
        row.addWidget(self.dtype_combo, 1)
        v.addLayout(row)
        self.fetch = ModelFetch(session.runner)  # nothing is contacted before Download is pressed
        self.get_dialog: GetModelDialog | None = None
        head = QHBoxLayout()
        head.addWidget(QLabel("<b>Models on this computer</b>"))
        head.addStretch(1)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(session.refresh_sources)
        head.addWidget(self.refresh_button)
        v.addLayout(head)
        self.list = QListWidget()
        self.list.setToolTip("Double-click (or Enter) to load")
        self.list.itemActivated.connect(lambda item: self.session.load(item.data(Qt.ItemDataRole.UserRole)))
        v.addWidget(self.list, 1)
        self.load_button = QPushButton("Load")
        self.load_button.clicked.connect(self._load_selected)
        v.addWidget(self.load_button)
        busy = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy: a load is one read of the weights
        self.progress.setTextVisible(False)
        busy.addWidget(self.progress, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(session.cancel)
        busy.addWidget(self.cancel_button)
        v.addLayout(busy)
        self.loading_label = QLabel("")
        self.loading_label.setWordWrap(True)
        v.addWidget(self.loading_label)
        self.info_label = QLabel(HELP)
        self.info_label.setObjectName("modelInfo")
        self.info_label.setWordWrap(True)
        self.info_label.setTextFormat(Qt.TextFormat.RichText)
        v.addWidget(self.info_label)
        for name in ("sources", "load"):
            getattr(session.events, name).connect(self.refresh)
        self.refresh()

    def open_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a model folder", self.start_dir or str(Path.home()))
        if folder:
            self.start_dir = str(Path(folder).parent)
            self.session.load(folder)

    def open_get_model(self) -> GetModelDialog:
        """Show "Get a model" (made once, then raised again: a download under way stays visible)."""
        if self.get_dialog is None:
            self.get_dialog = GetModelDialog(self.fetch, on_listed=self.session.refresh_sources,
                                             on_open=self.session.load, parent=self)
            room = self.window().size()  # wide enough for the catalogue's notes, never past the window
            width = max(560, min(980, room.width() - 40))
            layout = self.get_dialog.layout()
            if layout is not None:
                layout.activate()
                self.get_dialog.resize(width, max(self.get_dialog.minimumSizeHint().height(),
                                                  min(self.get_dialog.sizeHint().height(), room.height() - 60)))
        self.get_dialog.show()
        self.get_dialog.raise_()
        self.get_dialog.activateWindow()
        return self.get_dialog

    def _load_selected(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.session.load(item.data(Qt.ItemDataRole.UserRole))

    def refresh(self, *_: object) -> None:
        s = self.session
        with QSignalBlocker(self.list):
            current = self.list.currentItem().data(Qt.ItemDataRole.UserRole) if self.list.currentItem() else None
            self.list.clear()
            for src in s.sources:
                item = QListWidgetItem(src.text)
                item.setData(Qt.ItemDataRole.UserRole, str(src.path))
                item.setToolTip(str(src.path))
                self.list.addItem(item)
                if str(src.path) == current:
                    self.list.setCurrentItem(item)
            if not s.sources:
                empty = QListWidgetItem("(none yet: Get a model…)")
                empty.setFlags(Qt.ItemFlag.NoItemFlags)
                self.list.addItem(empty)
        with QSignalBlocker(self.dtype_combo):
            self.dtype_combo.setCurrentText(s.dtype)
        loading = s.load_state == "loading"
        self.progress.setVisible(loading)
        self.cancel_button.setVisible(loading)
        self.loading_label.setText(s.loading_text if loading else (s.error if s.load_state == "error" else ""))
        self.load_button.setEnabled(bool(s.sources))
        if s.model is not None:
            i = s.model.info
            self.info_label.setText(
                f"<b>{s.model.name}</b> ({i.family}{'' if i.model_type == i.family else ', ' + i.model_type})<br>"
                f"{i.layers} layers × {i.heads} heads ({i.kv_heads} key/value heads), d_model {i.d_model}, "
                f"d_head {i.d_head}<br>{i.parameters:,} parameters, {i.dtype}, {i.bytes / 2**20:.1f} MiB, "
                f"vocabulary {i.vocab:,}, up to {i.max_positions:,} tokens<br>"
                "<i>Layers and heads are numbered from 0, as in the papers.</i>")
        else:
            self.info_label.setText(HELP)
