"""The training set-up form: task, positions, attention dropout, model size, optimiser, run length, seed, device,
causal mask. Choosing a task fills in its recipe (``attention_core.tiny.experiments.TASK_RECIPES``) and says so.

The form refuses impossible combinations where they are typed: every change rebuilds a ``TrainConfig`` and runs
its ``validate()``; the reason (e.g. "d_model (30) must be divisible by num_heads (4)") is shown in red under the
form and ``configChanged`` carries whether the config is usable, so the panel can disable Start.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.common.validation import MAX_SEED, check_train
from app.training.model.status import NO_POSITIONS_WHY
from attention_core.positions import POSITIONAL_KINDS
from attention_core.tiny.config import TrainConfig
from attention_core.tiny.tasks import MAX_ATTENTION_DROPOUT, TASK_LAYOUTS, TASK_NAMES

CAUSAL_NOTE = (
    "<b>Causal mask off:</b> each position also sees the tokens after it, including the one it must predict. "
    "<b>Teacher-forced</b> accuracy (true sequence fed in) climbs to ~100 % through this leak; <b>greedy</b> "
    "exact-sequence accuracy (no future to copy) falls short. Weight <b>above the dashed line</b> is the leak."
)


def _spin(lo: float, hi: float, value: float, tip: str, step: float | None = None) -> Any:
    """A spin box that takes a value when typing ends; ``step`` given: a QDoubleSpinBox with that step."""
    s: Any = QSpinBox() if step is None else QDoubleSpinBox()
    if step is not None:
        s.setDecimals(2)
        s.setSingleStep(step)
    s.setRange(lo, hi)
    s.setValue(value)
    s.setToolTip(tip)
    s.setKeyboardTracking(False)
    return s


def _combo(items: tuple[str, ...], tip: str) -> QComboBox:
    c = QComboBox()
    c.addItems(list(items))
    c.setToolTip(tip)
    return c


class _Note(QLabel):
    """A wrapped note in the form that keeps the height its lines need at its width (a form row, inside a scroll
    area, otherwise gets the height of one line's worth of layout and clips the text)."""

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)
        self.setObjectName("noteLabel")
        self.setVisible(False)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        need = self.heightForWidth(self.width())
        if need > 0 and need != self.minimumHeight():
            self.setMinimumHeight(need)


def _note() -> QLabel:
    return _Note()


def recipe_text(task: str, overrides: dict[str, Any]) -> str:
    """One line saying which recipe choosing ``task`` filled in."""
    words = {"num_heads": lambda v: f"{v} head{'s' if v != 1 else ''}", "lr": lambda v: f"lr {v:g}",
             "num_layers": lambda v: f"{v} layer{'s' if v != 1 else ''}",
             "steps": lambda v: f"{v} steps"}
    parts = [words[k](v) if k in words else f"{k} {v}" for k, v in overrides.items()]
    return f"{task} recipe filled in: {', '.join(parts) if parts else 'the fast defaults'} (≥ 99 % when trained)."


class TrainingSetupForm(QWidget):
    """Hyper-parameters of a run. ``config()`` returns a validated ``TrainConfig`` or None (see ``error()``)."""

    configChanged = Signal(bool)  # True when the form holds a valid config

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from attention_core.devices import available_devices

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        form = QFormLayout()
        form.setVerticalSpacing(3)
        form.setHorizontalSpacing(6)
        self.task = _combo(TASK_NAMES, "What the model learns; each task's example:\n" + "\n".join(
            f"{t}: {layout}" for t, layout in TASK_LAYOUTS.items()))
        self.recipe_note = _note()
        self.positional = _combo(POSITIONAL_KINDS, "How the model knows where a token sits: a learned vector per "
                                 "position (the lesson's), the sinusoidal table, rotary (q and k rotated by "
                                 "position), or none.")
        self.positions_note = _note()
        self.positions_note.setText(NO_POSITIONS_WHY)
        self.attention_dropout = _spin(0.0, MAX_ATTENTION_DROPOUT, 0.0, "Dropout on the attention weights while "
                                       "training (off when evaluating).", step=0.05)
        self.seq_len = _spin(1, 16, 6, "Input tokens (L). A full example is the task's layout (see Task).")
        self.vocab_size = _spin(3, 256, 16, "Vocabulary size; tokens 0 (PAD) and 1 (SEP) are reserved.")
        self.d_model = _spin(1, 512, 32, "Width of the model (embedding size); must be divisible by heads.")
        self.num_heads = _spin(1, 16, 4, "Attention heads per layer; each gets d_model / heads dimensions.")
        self.num_layers = _spin(1, 8, 2, "Transformer blocks (each has its own heads).")
        self.lr = QDoubleSpinBox()
        self.lr.setDecimals(5)
        self.lr.setRange(0.00001, 1.0)
        self.lr.setSingleStep(0.001)
        self.lr.setValue(0.02)
        self.lr.setKeyboardTracking(False)
        self.lr.setToolTip("Adam learning rate. 0.02 learns in ~20 steps; the lesson's 0.0003 needs epochs.")
        self.batch_size = _spin(1, 4096, 64, "Sequences per training step (one batch).")
        self.length = _spin(1, 1_000_000, 1, "How long to train: epochs (passes over the 5000 training "
                                             "sequences) or steps (batches).")
        self.length_unit = QComboBox()
        self.length_unit.addItems(["epochs", "steps"])
        self.length_unit.setToolTip("1 epoch = ceil(5000 / batch size) steps.")
        length_row = QHBoxLayout()
        length_row.setContentsMargins(0, 0, 0, 0)
        length_row.addWidget(self.length, 1)
        length_row.addWidget(self.length_unit)
        self.total_label = QLabel()
        self.total_label.setObjectName("mutedLabel")  # colours by object name: resources/styles/
        self.seed = _spin(0, MAX_SEED, 0, "Same seed = same initialisation, same data, same batches.")
        self.device = QComboBox()
        devices = available_devices() if _torch_loaded() else ["cpu"]
        self.device.addItems(devices)
        self.device.setToolTip("Where the model trains. CUDA appears when a GPU is visible.")
        self.causal = QCheckBox("causal mask (uncheck to see the leak)")
        self.causal.setChecked(True)
        self.causal.setToolTip("With the mask, position t only attends to positions <= t, as in generation.")
        form.addRow("task", self.task)
        form.addRow(self.recipe_note)
        form.addRow("positions", self.positional)
        form.addRow(self.positions_note)
        form.addRow("attention dropout", self.attention_dropout)
        form.addRow("sequence length", self.seq_len)
        form.addRow("vocabulary", self.vocab_size)
        form.addRow("d_model", self.d_model)
        form.addRow("heads", self.num_heads)
        form.addRow("layers", self.num_layers)
        form.addRow("learning rate", self.lr)
        form.addRow("batch size", self.batch_size)
        form.addRow("train for", length_row)
        form.addRow("", self.total_label)
        form.addRow("seed", self.seed)
        form.addRow("device", self.device)
        outer.addLayout(form)
        outer.addWidget(self.causal)
        self.causal_note = QLabel(CAUSAL_NOTE)
        self.causal_note.setWordWrap(True)
        self.causal_note.setObjectName("noteLabel")
        self.causal_note.setVisible(False)
        outer.addWidget(self.causal_note)
        presets = QHBoxLayout()
        self.fast_button = QPushButton("Fast defaults")
        self.fast_button.setToolTip("Adam 0.02, batch 64, 1 epoch: >= 99 % in a few seconds.")
        self.lesson_button = QPushButton("Lesson recipe")
        self.lesson_button.setToolTip("The lesson's settings: Adam 3e-4, batch 128, 100 epochs (slow to watch).")
        presets.addWidget(self.fast_button)
        presets.addWidget(self.lesson_button)
        outer.addLayout(presets)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setObjectName("errorLabel")
        self.error_label.setVisible(False)
        outer.addWidget(self.error_label)
        self._error = ""
        self._config: TrainConfig | None = None
        for w in (self.seq_len, self.vocab_size, self.d_model, self.num_heads, self.num_layers, self.batch_size,
                  self.length, self.seed):
            w.valueChanged.connect(self._revalidate)
        self.lr.valueChanged.connect(self._revalidate)
        self.attention_dropout.valueChanged.connect(self._revalidate)
        self.positional.currentIndexChanged.connect(self._revalidate)
        self.task.currentIndexChanged.connect(self._on_task)
        self.length_unit.currentIndexChanged.connect(self._revalidate)
        self.device.currentIndexChanged.connect(self._revalidate)
        self.causal.toggled.connect(self._revalidate)
        self.fast_button.clicked.connect(self.set_fast_defaults)
        self.lesson_button.clicked.connect(self.set_lesson_recipe)
        self._revalidate()

    # --- values ---------------------------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        """The raw form values as TrainConfig keyword arguments."""
        unit = self.length_unit.currentText()
        return {
            "seq_len": self.seq_len.value(), "vocab_size": self.vocab_size.value(), "d_model": self.d_model.value(),
            "num_heads": self.num_heads.value(), "num_layers": self.num_layers.value(), "lr": self.lr.value(),
            "batch_size": self.batch_size.value(),
            "epochs": self.length.value() if unit == "epochs" else 1,
            "steps": self.length.value() if unit == "steps" else None,
            "seed": self.seed.value(), "device": self.device.currentText(), "causal": self.causal.isChecked(),
            "task": self.task.currentText(), "positional": self.positional.currentText(),
            "attention_dropout": round(self.attention_dropout.value(), 2),
        }

    def config(self) -> TrainConfig | None:
        """The validated TrainConfig, or None when the form is invalid (``error()`` says why)."""
        return self._config

    def error(self) -> str:
        return self._error

    def set_config(self, config: TrainConfig, recipe_note: str = "") -> None:
        """Show an existing config (after loading a model; ``recipe_note``: the line under Task, "" hides it)."""
        widgets = [self.seq_len, self.vocab_size, self.d_model, self.num_heads, self.num_layers, self.lr,
                   self.batch_size, self.length, self.length_unit, self.seed, self.device, self.causal, self.task,
                   self.positional, self.attention_dropout]
        with ExitStack() as blocked:
            for w in widgets:
                blocked.enter_context(QSignalBlocker(w))
            self.task.setCurrentText(config.task)
            self.positional.setCurrentText(config.positional)
            self.attention_dropout.setValue(config.attention_dropout)
            self.recipe_note.setText(recipe_note)
            self.recipe_note.setVisible(bool(recipe_note))
            self.seq_len.setValue(config.seq_len)
            self.vocab_size.setValue(config.vocab_size)
            self.d_model.setValue(config.d_model)
            self.num_heads.setValue(config.num_heads)
            self.num_layers.setValue(config.num_layers)
            self.lr.setValue(config.lr)
            self.batch_size.setValue(config.batch_size)
            if config.steps is not None:
                self.length_unit.setCurrentText("steps")
                self.length.setValue(config.steps)
            else:
                self.length_unit.setCurrentText("epochs")
                self.length.setValue(config.epochs)
            self.seed.setValue(config.seed)
            if self.device.findText(config.device) < 0:
                self.device.addItem(config.device)
            self.device.setCurrentText(config.device)
            self.causal.setChecked(config.causal)
        self._revalidate()

    def _on_task(self, *_: Any) -> None:
        """A task was chosen: fill in its recipe, keeping seed, device, causal mask, positions and dropout."""
        from attention_core.tiny.experiments import TASK_RECIPES, task_recipe  # imports torch: on a choice only

        task = self.task.currentText()
        keep = {k: v for k, v in self.values().items() if k in ("seed", "device", "causal", "positional",
                                                                "attention_dropout")}
        self.set_config(task_recipe(task, **keep), recipe_text(task, TASK_RECIPES[task]))

    def set_fast_defaults(self) -> None:
        from attention_core.tiny.config import TrainConfig  # torch-free: validating must not import torch

        self.set_config(TrainConfig(seed=self.seed.value(), causal=self.causal.isChecked(),
                                    task=self.task.currentText()))

    def set_lesson_recipe(self) -> None:
        from attention_core.tiny.config import TrainConfig  # torch-free: validating must not import torch

        self.set_config(TrainConfig.lesson_recipe(seed=self.seed.value(), causal=self.causal.isChecked()))

    def refresh_devices(self) -> None:
        """List the GPUs once torch is loaded (listing them needs torch)."""
        from attention_core.devices import available_devices

        current = self.device.currentText()
        with QSignalBlocker(self.device):
            self.device.clear()
            self.device.addItems(available_devices())
            self.device.setCurrentIndex(max(self.device.findText(current), 0))

    def _revalidate(self, *_: Any) -> None:
        from attention_core.tiny.config import TrainConfig  # torch-free: validating must not import torch

        self.causal_note.setVisible(not self.causal.isChecked())
        self.positions_note.setVisible(self.positional.currentText() == "none")
        try:  # the CLI's checks (app/common/validation.py): ranges, the combination, this machine's memory
            cfg = check_train(TrainConfig(**self.values()), flags=False)
        except ValueError as exc:
            self._config, self._error = None, str(exc)
        else:
            self._config, self._error = cfg, ""
        if self._config is not None:
            c = self._config
            self.total_label.setText(f"= {c.total_steps} steps of {c.batch_size} sequences")
        else:
            self.total_label.setText("")
        self.error_label.setText(f"Cannot train: {self._error}" if self._error else "")
        self.error_label.setVisible(bool(self._error))
        self.configChanged.emit(self._config is not None)


def _torch_loaded() -> bool:
    import sys

    return "torch" in sys.modules
