"""Controls: scale (1/√d_k, 1, custom), mask (none/causal/padding/custom), heads, device; saturation readout.

The panel only reports what the user chose (signals); the window turns choices into undoable edits.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QRadioButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from attention_core import attention_entropy

from ..state import PlaygroundState, Result

SLIDER_STEPS = 200  # custom scale slider: log-spaced from 0.01 to 10


def slider_to_scale(pos: int) -> float:
    return float(10 ** (-2 + 3 * pos / SLIDER_STEPS))


def scale_to_slider(scale: float) -> int:
    return int(round((math.log10(min(max(scale, 0.01), 10)) + 2) / 3 * SLIDER_STEPS))


class ControlsPanel(QWidget):
    scale_changed = Signal(str, float)  # mode, custom scale
    mask_changed = Signal(str)
    padding_toggled = Signal(int)
    heads_changed = Signal(int)
    device_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._updating = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)

        scale_box = QGroupBox("Scale")
        sl = QVBoxLayout(scale_box)
        self.scale_group = QButtonGroup(self)
        self.scale_buttons = {}
        for mode, text in (("sqrt", "1/√d_k (standard)"), ("one", "1 (unscaled)"), ("custom", "custom")):
            b = QRadioButton(text)
            b.setToolTip({"sqrt": "Divide scores by √d_k so they do not grow with the dimension.",
                          "one": "No scaling: watch softmax saturate as d_k or the values grow.",
                          "custom": "Any multiplier; its inverse is the softmax temperature."}[mode])
            self.scale_group.addButton(b)
            self.scale_buttons[mode] = b
            sl.addWidget(b)
            b.toggled.connect(lambda on, m=mode: on and self._emit_scale())
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setToolTip("Custom scale, from 0.01 (flat, uniform weights) to 10 (sharp, one-hot)")
        self.slider.valueChanged.connect(self._on_slider)
        self.scale_label = QLabel()
        self.scale_label.setWordWrap(True)
        sl.addWidget(self.slider)
        sl.addWidget(self.scale_label)
        layout.addWidget(scale_box)

        mask_box = QGroupBox("Mask")
        ml = QVBoxLayout(mask_box)
        self.mask_combo = QComboBox()
        for mode, text in (("none", "none"), ("causal", "causal (no looking ahead)"),
                           ("padding", "padding (per-key toggles)"), ("custom", "custom (click cells)")):
            self.mask_combo.addItem(text, mode)
        self.mask_combo.currentIndexChanged.connect(
            lambda _i: not self._updating and self.mask_changed.emit(self.mask_combo.currentData()))
        ml.addWidget(self.mask_combo)
        self.padding_row = QWidget()
        self.padding_layout = QHBoxLayout(self.padding_row)
        self.padding_layout.setContentsMargins(0, 0, 0, 0)
        self.padding_boxes: list[QCheckBox] = []
        ml.addWidget(self.padding_row)
        self.mask_hint = QLabel()
        self.mask_hint.setWordWrap(True)
        ml.addWidget(self.mask_hint)
        layout.addWidget(mask_box)

        form_box = QGroupBox("Heads and device")
        fl = QFormLayout(form_box)
        self.heads_spin = QSpinBox()
        self.heads_spin.setRange(1, 64)
        self.heads_spin.setToolTip("Split d_k and d_v into this many heads (must divide both)")
        self.heads_spin.valueChanged.connect(lambda v: not self._updating and self.heads_changed.emit(v))
        fl.addRow("Heads", self.heads_spin)
        self.device_combo = QComboBox()
        self.device_combo.addItem("cpu")
        self.device_combo.setToolTip("Where attention is computed (CUDA appears when a GPU is present)")
        self.device_combo.currentTextChanged.connect(lambda t: not self._updating and self.device_changed.emit(t))
        fl.addRow("Device", self.device_combo)
        self.time_label = QLabel("—")
        fl.addRow("Last compute", self.time_label)
        layout.addWidget(form_box)

        sat_box = QGroupBox("Saturation (why scale)")
        satl = QVBoxLayout(sat_box)
        self.saturation = QLabel()
        self.saturation.setWordWrap(True)
        self.saturation.setTextFormat(Qt.TextFormat.RichText)
        satl.addWidget(self.saturation)
        layout.addWidget(sat_box)
        layout.addStretch(1)

    def _emit_scale(self) -> None:
        if self._updating:
            return
        mode = next(m for m, b in self.scale_buttons.items() if b.isChecked())
        self.scale_changed.emit(mode, slider_to_scale(self.slider.value()))

    def _on_slider(self, pos: int) -> None:
        if self._updating:
            return
        self.scale_changed.emit("custom", slider_to_scale(pos))

    def set_devices(self, devices: list[str]) -> None:
        self._updating = True
        current = self.device_combo.currentText()
        self.device_combo.clear()
        self.device_combo.addItems(devices)
        if current in devices:
            self.device_combo.setCurrentText(current)
        self._updating = False

    def show_state(self, state: PlaygroundState, result: Result | None) -> None:
        """Reflect the state in the widgets without emitting signals."""
        self._updating = True
        try:
            self.scale_buttons[state.scale_mode].setChecked(True)
            self.slider.setValue(scale_to_slider(state.custom_scale))
            self.slider.setEnabled(state.scale_mode == "custom")
            eff = state.scale()
            self.scale_label.setText(f"scale = {eff:.4g} (temperature τ = {1 / eff:.3g})")
            idx = self.mask_combo.findData(state.mask_mode)
            self.mask_combo.setCurrentIndex(idx)
            square = state.dims["Lq"] == state.dims["Lk"]
            causal_item = self.mask_combo.model().item(self.mask_combo.findData("causal"))
            causal_item.setEnabled(square)
            causal_item.setToolTip("" if square else "needs as many queries as keys")
            self._show_padding(state)
            hints = {"none": "Every query sees every key.",
                     "causal": "Query i sees keys 0…i (True = may attend).",
                     "padding": "Untick a key to mark it as padding: no query may attend to it.",
                     "custom": "Click a cell in ③ Masked or ④ Weights to block or unblock it."}
            self.mask_hint.setText(hints[state.mask_mode])
            self.heads_spin.setValue(state.num_heads)
            valid = state.valid_head_counts()
            self.heads_spin.setToolTip(f"Valid head counts for d_k={state.dims['d_k']}, d_v={state.dims['d_v']}: "
                                       + ", ".join(map(str, valid)))
            if self.device_combo.findText(state.device) >= 0:
                self.device_combo.setCurrentText(state.device)
        finally:
            self._updating = False
        if result is not None:
            self.show_saturation(state, result)

    def _show_padding(self, state: PlaygroundState) -> None:
        lk = state.dims["Lk"]
        if len(self.padding_boxes) != lk or [b.text() for b in self.padding_boxes] != state.key_tokens:
            for b in self.padding_boxes:
                self.padding_layout.removeWidget(b)
                b.deleteLater()
            self.padding_boxes = []
            for j, tok in enumerate(state.key_tokens):
                b = QCheckBox(tok)
                b.toggled.connect(lambda _on, j=j: not self._updating and self.padding_toggled.emit(j))
                self.padding_layout.addWidget(b)
                self.padding_boxes.append(b)
        for b, keep in zip(self.padding_boxes, state.padding_keep):
            b.setChecked(keep)
        if self.padding_row.isHidden() == (state.mask_mode == "padding"):
            self.padding_row.setVisible(state.mask_mode == "padding")

    def show_saturation(self, state: PlaygroundState, result: Result) -> None:
        s = result.steps
        ent = attention_entropy(s.weights)
        rows = []
        for i, tok in enumerate(state.query_tokens[:8]):
            if s.fully_masked[i]:
                rows.append(f"{tok}: <span style='color:#c0392b'>all keys blocked</span>")
                continue
            n_allowed = int(np.isfinite(s.masked[i]).sum())
            max_ent = math.log(n_allowed) if n_allowed > 1 else 0.0
            rows.append(f"{tok}: max {s.weights[i].max():.2f} · H {max(float(ent[i]), 0.0) + 0.0:.2f} of {max_ent:.2f}"
                        + (" (only one key allowed)" if n_allowed == 1 else ""))
        more = "" if len(state.query_tokens) <= 8 else f"<br>… {len(state.query_tokens) - 8} more rows"
        # a row with a single allowed key is 1.0 by construction, not saturated: judge rows with a choice
        choice = np.isfinite(s.masked).sum(axis=-1) > 1
        peak = float(np.max(s.weights[choice])) if s.weights.size and choice.any() else 0.0
        verdict = ("<b>saturated</b>: softmax is nearly one-hot, gradients vanish" if peak > 0.95 else
                   "<b>spread</b>: weights are near uniform" if peak < 1.5 / max(s.weights.shape[1], 1) else
                   "balanced")
        self.saturation.setText("max = largest weight in the row; H = row entropy in nats, of the uniform "
                                "maximum log(n).<br>" + "<br>".join(rows) + more + f"<br>{verdict}")

    def show_time(self, device: str, seconds: float) -> None:
        self.time_label.setText(f"{seconds * 1e6:.0f} µs on {device}")
