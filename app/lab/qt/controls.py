"""The Lab's choices (devices, implementations, dtype, heads, d, largest n, repeats), Run / Cancel and the progress
bar with its ETA. Each change calls the ``ScalingLab``'s ``set_choice``; a refused one is undone on screen and its
reason shown under the choices. The widgets follow the model's events (config, devices, run state, progress).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.common.validation import BENCH_LIMITS
from app.lab.model import ScalingLab
from attention_core.scaling.results import DTYPES, IMPLEMENTATIONS

MAX_NS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
IMPL_TIPS = {
    "steps": "attention_steps: scores, scaled, masked, weights and output all kept (what the Playground shows)",
    "naive-torch": "torch: Q·Kᵀ, softmax, ·V; the n×n weights matrix is built in memory",
    "fused": "attention_core.attention: torch's fused scaled_dot_product_attention, works in tiles",
    "naive-numpy": "numpy: Q·Kᵀ, softmax, ·V on the CPU",
}


class LabControls(QWidget):
    """The left column of the Lab tab."""

    def __init__(self, lab: ScalingLab, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lab = lab
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.device_box = QGroupBox("Devices")
        self.device_layout = QVBoxLayout(self.device_box)
        self.device_checks: dict[str, QCheckBox] = {}
        outer.addWidget(self.device_box)
        impl_box = QGroupBox("Implementations")
        impl_layout = QVBoxLayout(impl_box)
        self.impl_checks: dict[str, QCheckBox] = {}
        for impl in IMPLEMENTATIONS:
            cb = QCheckBox(impl)
            cb.setToolTip(IMPL_TIPS[impl])
            cb.toggled.connect(lambda _on=False: self._choose_impls())
            impl_layout.addWidget(cb)
            self.impl_checks[impl] = cb
        outer.addWidget(impl_box)
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        self.dtype_combo = QComboBox()
        self.dtype_combo.addItems(list(DTYPES))
        self.dtype_combo.setToolTip("float16 / bfloat16 run on CUDA only (the torch paths)")
        self.dtype_combo.currentTextChanged.connect(lambda t: self._choose(dtype=t))
        self.heads_spin = self._spin("heads", "attention heads h (the weights matrix is h·n² per sequence)")
        self.d_spin = self._spin("d", "head dimension d")
        self.repeat_spin = self._spin("repeat", "timed calls per point; the median is plotted")
        self.threads_spin = QSpinBox()
        self.threads_spin.setRange(int(BENCH_LIMITS["threads"].lo), int(BENCH_LIMITS["threads"].hi))
        self.threads_spin.setSpecialValueText("all")
        self.threads_spin.setKeyboardTracking(False)
        self.threads_spin.setToolTip("CPU threads of torch and numpy's BLAS during the run (all = the libraries' "
                                     "own settings). 1 gives steady figures on a busy machine: a parallel kernel "
                                     "waits for its slowest thread")
        self.threads_spin.valueChanged.connect(lambda v: self._choose(threads=int(v) or None))
        self.max_n_combo = QComboBox()
        for n in MAX_NS:
            self.max_n_combo.addItem(str(n), n)
        self.max_n_combo.setToolTip("n runs from 16, doubling, up to this")
        self.max_n_combo.currentIndexChanged.connect(
            lambda i: self._choose(max_n=int(self.max_n_combo.itemData(i))) if i >= 0 else None)
        form.addRow("dtype", self.dtype_combo)
        form.addRow("heads", self.heads_spin)
        form.addRow("d", self.d_spin)
        form.addRow("n up to", self.max_n_combo)
        form.addRow("repeats", self.repeat_spin)
        form.addRow("CPU threads", self.threads_spin)
        outer.addLayout(form)
        self.error_label = QLabel()
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        outer.addWidget(self.error_label)
        self.note_label = QLabel()
        self.note_label.setWordWrap(True)
        self.note_label.setVisible(False)
        outer.addWidget(self.note_label)
        buttons = QHBoxLayout()
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip("Measure every chosen (device, implementation) at each n")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop after the call in flight; the points measured so far stay")
        self.run_button.clicked.connect(self._run)
        self.cancel_button.clicked.connect(lab.cancel)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        outer.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        self.eta_label = QLabel("")
        outer.addWidget(self.progress)
        outer.addWidget(self.eta_label)
        outer.addStretch(1)
        self._syncing = False
        self.show_devices(lab.devices)
        self.show_config()
        self.show_state(lab.run_state)
        self.show_progress()
        lab.events.devices.connect(self.show_devices)
        lab.events.config.connect(lambda _c: self.show_config())
        lab.events.run_state.connect(self.show_state)
        lab.events.progress.connect(self.show_progress)

    def _spin(self, name: str, tip: str) -> QSpinBox:
        """A spin box over the option's range (``app.common.validation.BENCH_LIMITS``, the CLI's too)."""
        spin = QSpinBox()
        spin.setRange(int(BENCH_LIMITS[name].lo), int(BENCH_LIMITS[name].hi))
        spin.setToolTip(tip)
        spin.setKeyboardTracking(False)
        spin.valueChanged.connect(lambda v: self._choose(**{name: int(v)}))
        return spin

    # ---------------------------------------------------------------- user actions
    def _choose(self, **changes: Any) -> bool:
        if self._syncing:
            return False
        try:
            self.lab.set_choice(**changes)
        except ValueError as exc:
            self.show_config()  # the refused choice goes back to the model's
            self.show_error(str(exc))
            return False
        self.show_error("")
        return True

    def _choose_devices(self) -> None:
        self._choose(devices=[d for d, cb in self.device_checks.items() if cb.isChecked()])

    def _choose_impls(self) -> None:
        self._choose(impls=[i for i, cb in self.impl_checks.items() if cb.isChecked()])

    def _run(self) -> None:
        try:
            self.lab.start()
        except ValueError as exc:
            self.show_error(str(exc))

    # ---------------------------------------------------------------- follow the model
    def show_error(self, text: str) -> None:
        self.error_label.setText(f"⚠ {text}" if text else "")
        self.error_label.setVisible(bool(text))

    def show_devices(self, devices: list[str]) -> None:
        for cb in self.device_checks.values():
            self.device_layout.removeWidget(cb)
            cb.deleteLater()
        self.device_checks.clear()
        for dev in devices:
            cb = QCheckBox(dev)
            cb.toggled.connect(lambda _on=False: self._choose_devices())
            self.device_layout.addWidget(cb)
            self.device_checks[dev] = cb
        self.show_config()

    def show_config(self) -> None:
        cfg = self.lab.config
        self._syncing = True
        try:
            for dev, cb in self.device_checks.items():
                cb.setChecked(dev in cfg.devices)
            for impl, cb in self.impl_checks.items():
                cb.setChecked(impl in cfg.impls)
            self.dtype_combo.setCurrentText(cfg.dtype)
            self.heads_spin.setValue(cfg.heads)
            self.d_spin.setValue(cfg.d)
            self.repeat_spin.setValue(cfg.repeat)
            self.threads_spin.setValue(cfg.threads or 0)
            i = self.max_n_combo.findData(cfg.max_n)
            if i < 0:
                self.max_n_combo.addItem(str(cfg.max_n), cfg.max_n)
                i = self.max_n_combo.count() - 1
            self.max_n_combo.setCurrentIndex(i)
        finally:
            self._syncing = False
        notes = self.lab.refusals()
        self.note_label.setText("Skipped with this choice: " + "; ".join(notes) if notes else "")
        self.note_label.setVisible(bool(notes))

    def show_state(self, state: str) -> None:
        running = state in ("running", "cancelling")
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(state == "running")
        for w in (self.device_box, *self.impl_checks.values(), self.dtype_combo, self.heads_spin, self.d_spin,
                  self.max_n_combo, self.repeat_spin, self.threads_spin):
            w.setEnabled(not running)

    def show_progress(self) -> None:
        lab = self.lab
        self.progress.setRange(0, max(lab.total, 1))
        self.progress.setValue(lab.done)
        self.progress.setFormat("%v / %m" if lab.total else "not run yet")
        self.eta_label.setText(lab.eta_text if lab.is_running else "")
