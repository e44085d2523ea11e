"""Controls: scale (1/√d_k, 1, custom), mask (none/causal/padding/custom/sliding window), the positions and
scores options (``option_controls``), heads, device; saturation readout.

User choices go through ``UndoableEdits`` (one undo step each; the slider's drag merges); the widgets follow the
model's events, written inside signal blockers so a model update never echoes back as an edit. Every text shown
here is derived by the model.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QRadioButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.playground.model.concealment import SATURATION_REVEALS, Concealment
from app.playground.model.playground import PlaygroundModel
from app.playground.model.state import MAX_DIM
from app.playground.model.texts import MASK_HINTS, heads_tooltip, scale_text, time_text
from app.playground.qt.commands import UndoableEdits
from app.playground.qt.label_box import LabelBox
from app.playground.qt.option_controls import PositionOptions, WindowRow

SLIDER_STEPS = 200  # custom scale slider: log-spaced from 0.01 to 10
PADDING_COLUMNS = 3  # padding check boxes per row


def slider_to_scale(pos: int) -> float:
    return float(10 ** (-2 + 3 * pos / SLIDER_STEPS))


def scale_to_slider(scale: float) -> int:
    return int(round((math.log10(min(max(scale, 0.01), 10)) + 2) / 3 * SLIDER_STEPS))


class ControlsPanel(QWidget):
    def __init__(self, model: PlaygroundModel, edits: UndoableEdits, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model, self.edits = model, edits
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
            b.toggled.connect(lambda on: self._emit_scale() if on else None)
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
                           ("padding", "padding (per-key toggles)"), ("custom", "custom (click cells)"),
                           ("sliding", "sliding window")):  # its W and S below it
            self.mask_combo.addItem(text, mode)
        self.mask_combo.currentIndexChanged.connect(lambda _i: self._on_mask_chosen())
        ml.addWidget(self.mask_combo)
        self.padding_row = QWidget()
        # a grid, PADDING_COLUMNS to a row: in one row, 5 keys overlapped ("satsa", "✓ k3") or widened the column
        self.padding_layout = QGridLayout(self.padding_row)
        self.padding_layout.setContentsMargins(0, 0, 0, 0)
        self.padding_boxes: list[QCheckBox] = []
        ml.addWidget(self.padding_row)
        self.window_row = WindowRow(model, edits)  # W and S, while the mask is a sliding window
        ml.addWidget(self.window_row)
        self.mask_hint = QLabel()
        self.mask_hint.setWordWrap(True)
        ml.addWidget(self.mask_hint)
        layout.addWidget(mask_box)
        self.positions = PositionOptions(model, edits)
        layout.addWidget(self.positions)

        form_box = QGroupBox("Heads and device")
        fl = QFormLayout(form_box)
        self.heads_spin = QSpinBox()
        self.heads_spin.setRange(1, MAX_DIM)
        hint = self.heads_spin.minimumSizeHint().width()  # one digit less of spare room (see inputs_panel's dims)
        self.heads_spin.setMinimumWidth(hint - self.heads_spin.fontMetrics().horizontalAdvance("0"))
        self.heads_spin.setToolTip("Split d_k and d_v into this many heads (must divide both)")
        self.heads_spin.setKeyboardTracking(False)
        self.heads_spin.valueChanged.connect(self._on_heads_chosen)
        fl.addRow("Heads", self.heads_spin)
        self.heads_error = QLabel()  # a refused head count is said here, next to the control that asked for it
        self.heads_error.setObjectName("errorLabel")
        self.heads_error.setWordWrap(True)
        self.heads_error.hide()
        fl.addRow(self.heads_error)
        self.device_combo = QComboBox()
        self.device_combo.addItem("cpu")
        self.device_combo.setToolTip("Where attention is computed (CUDA appears when a GPU is present)")
        self.device_combo.currentTextChanged.connect(self._on_device_chosen)
        fl.addRow("Device", self.device_combo)
        self.device_note = QLabel()
        self.device_note.setObjectName("errorLabel")
        self.device_note.setWordWrap(True)
        self.device_note.hide()
        fl.addRow(self.device_note)
        self.time_label = QLabel("—")
        fl.addRow("Last compute", LabelBox(self.time_label))  # a new time, or saturation, relays nothing out
        layout.addWidget(form_box)

        sat_box = QGroupBox("Saturation (why scale)")
        satl = QVBoxLayout(sat_box)
        self.saturation = QLabel()
        self.saturation.setWordWrap(True)
        self.saturation.setTextFormat(Qt.TextFormat.RichText)
        satl.addWidget(LabelBox(self.saturation))
        layout.addWidget(sat_box)
        layout.addStretch(1)
        ev = model.events
        for event in (ev.scale, ev.dims, ev.mask, ev.tokens, ev.heads, ev.device, ev.devices):
            event.connect(self.show_state)
        ev.result.connect(self._on_result)
        self.concealment = Concealment.of(model)
        self.concealment.events.changed.connect(self._on_result)
        self.show_state()
        self._on_result()

    # ---------------------------------------------------------------- user choices → undoable edits
    def _emit_scale(self) -> None:
        if self._updating:
            return
        mode = next(m for m, b in self.scale_buttons.items() if b.isChecked())
        custom = slider_to_scale(self.slider.value())
        self.edits.apply(f"Scale: {mode}", lambda m: m.set_scale_mode(mode, custom))

    def _on_slider(self, pos: int) -> None:
        if self._updating:
            return
        # one drag of the slider is one undo step
        self.edits.apply("Change scale", lambda m: m.set_scale_mode("custom", slider_to_scale(pos)),
                         merge_key="scale-slider" if self.slider.isSliderDown() else None)

    def _on_mask_chosen(self) -> None:
        if not self._updating:
            mode = self.mask_combo.currentData()
            if not self.edits.apply(f"Mask: {mode}", lambda m: m.set_mask(mode)):
                self.show_state()  # refused: the combo goes back to the model's mask

    def _on_heads_chosen(self, h: int) -> None:
        """Ask for ``h`` heads. A refusal is shown under the Heads box (``on_refused``), not in the left column's
        error line that ``UndoableEdits.refused`` feeds; nothing is changed or pushed."""
        if self._updating or h == self.model.num_heads:
            return
        refusal: list[str] = []
        self.edits.apply(f"{h} heads", lambda m: m.set_heads(h), on_refused=refusal.append)
        if refusal:
            self.show_state()  # the spin box goes back to the model's count
        self.heads_error.setText(f"⚠ {refusal[0]}" if refusal else "")
        if self.heads_error.isHidden() == bool(refusal):
            self.heads_error.setVisible(bool(refusal))

    def _on_device_chosen(self, device: str) -> None:
        if not self._updating and device and device != self.model.device:
            self.edits.apply(f"Device: {device}", lambda m: m.set_device(device))

    def _on_padding_toggled(self, key: int) -> None:
        if not self._updating:
            self.edits.apply("Toggle padding key", lambda m: m.toggle_padding(key))

    # ---------------------------------------------------------------- model → widgets
    def show_state(self) -> None:
        """Reflect the model in the widgets without emitting anything."""
        state = self.model.state
        self._updating = True
        blockers = [QSignalBlocker(w) for w in (self.slider, self.mask_combo, self.heads_spin, self.device_combo,
                                                *self.scale_buttons.values())]
        try:
            self.scale_buttons[state.scale_mode].setChecked(True)
            self.slider.setValue(scale_to_slider(state.custom_scale))
            self.slider.setEnabled(state.scale_mode == "custom")
            self.scale_label.setText(scale_text(state))
            self.mask_combo.setCurrentIndex(self.mask_combo.findData(state.mask_mode))
            square = state.dims["Lq"] == state.dims["Lk"]
            causal_item = self.mask_combo.model().item(self.mask_combo.findData("causal"))  # type: ignore[attr-defined]
            causal_item.setEnabled(square)
            causal_item.setToolTip("" if square else "needs as many queries as keys")
            self._show_padding()
            self.mask_hint.setText(MASK_HINTS.get(state.mask_mode, ""))
            self.heads_spin.setValue(state.num_heads)
            self.heads_error.hide()  # the model moved on: an old refusal no longer describes the control
            self.heads_spin.setToolTip(heads_tooltip(state))
            devices = self.model.devices
            if [self.device_combo.itemText(i) for i in range(self.device_combo.count())] != devices:
                self.device_combo.clear()
                self.device_combo.addItems(devices)
            self.device_combo.setCurrentText(state.device)
            self.device_note.setText(f"⚠ {self.model.device_note}")
            self.device_note.setVisible(bool(self.model.device_note))
        finally:
            del blockers
            self._updating = False

    def _on_result(self) -> None:
        # the largest weight and the entropy of each row: withheld while a lesson's question covers the weights
        # or what they are made from
        hidden = self.concealment.withheld_message(*SATURATION_REVEALS)
        self.saturation.setText(f"<i>{hidden}.</i>" if hidden else self.model.saturation)
        self.time_label.setText(time_text(self.model.computation))

    def _show_padding(self) -> None:
        state = self.model.state
        lk = state.dims["Lk"]
        if len(self.padding_boxes) != lk or [b.text() for b in self.padding_boxes] != state.key_tokens:
            for b in self.padding_boxes:
                self.padding_layout.removeWidget(b)
                b.deleteLater()
            self.padding_boxes = []
            for j, tok in enumerate(state.key_tokens):
                b = QCheckBox(tok)
                b.toggled.connect(lambda _on, j=j: self._on_padding_toggled(j))
                self.padding_layout.addWidget(b, *divmod(j, PADDING_COLUMNS))
                self.padding_boxes.append(b)
        for b, keep in zip(self.padding_boxes, state.padding_keep):
            with QSignalBlocker(b):
                b.setChecked(keep)
        if self.padding_row.isHidden() == (state.mask_mode == "padding"):
            self.padding_row.setVisible(state.mask_mode == "padding")
