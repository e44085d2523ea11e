"""Controls of the modern attention options: rotary positions (on, base, dims), ALiBi, soft-cap, and the sliding
window's W and S beside the mask choice.

Each user choice is one undo step through ``UndoableEdits.apply`` calling the model's setter; a refusal (a base of
1, odd dims, a soft-cap ≤ 0, a window of 0) is said in the line under the control that asked, and the control goes
back to the model's value. The widgets follow the model's ``options``/``mask``/``dims`` events (undo, redo, a
session, a real head), written inside signal blockers so a model update never echoes back as an edit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from app.playground.model.playground import PlaygroundModel
from app.playground.model.state import MAX_DIM, MAX_TOKENS, parse_number
from app.playground.qt.commands import UndoableEdits

DEFAULT_BASE = 10000.0
"""The base rotary starts from (Llama's, RoFormer's)."""
DEFAULT_SOFTCAP = 5.0
"""Gemma 2 caps at 50, far beyond the Playground's scores: 5 shows the curve bend on its numbers."""


def error_label() -> QLabel:
    """The line under a control that says why it was refused (hidden while there is nothing to say)."""
    label = QLabel()
    label.setObjectName("errorLabel")
    label.setWordWrap(True)
    label.hide()
    return label


def say(label: QLabel, message: str) -> None:
    label.setText(f"⚠ {message}" if message else "")
    if label.isHidden() == bool(message):
        label.setVisible(bool(message))


class OptionGuard:
    """Runs one edit as an undo step and says a refusal under its control (the control's owner then shows the
    model's value again)."""

    def __init__(self, edits: UndoableEdits, follow: Callable[[], None]) -> None:
        self.edits, self.follow = edits, follow

    def __call__(self, label: QLabel, text: str, fn: Callable[[PlaygroundModel], Any]) -> bool:
        refusal: list[str] = []
        done = self.edits.apply(text, fn, on_refused=refusal.append)
        if refusal:
            self.follow()  # the control goes back to the model's value ...
        say(label, refusal[0] if refusal else "")  # ... and says why, under itself
        return done


class PositionOptions(QGroupBox):
    """Rotary positions (on/off, base, dims), ALiBi (on/off) and the soft-cap (off/value)."""

    def __init__(self, model: PlaygroundModel, edits: UndoableEdits, parent: QWidget | None = None) -> None:
        super().__init__("Positions and scores", parent)
        self.model = model
        self.guard = OptionGuard(edits, self.show_state)
        form = QFormLayout(self)
        self.rotary_check = QCheckBox("rotary (RoPE)")
        self.rotary_check.setToolTip("Turn each pair of Q and K columns by an angle that grows with the token's "
                                     "position: the scores then depend on how far apart two tokens are")
        self.rotary_check.toggled.connect(self._on_rotary_toggled)
        form.addRow(self.rotary_check)
        self.base_edit = QLineEdit()
        self.base_edit.setToolTip("The rotary base: pair p turns by position × base^(−2p/dims) (Llama: 10000 or "
                                  "500000); above 1")
        self.base_edit.editingFinished.connect(self._on_base)
        self.dims_spin = QSpinBox()
        self.dims_spin.setRange(0, MAX_DIM)
        self.dims_spin.setSpecialValueText("all")
        self.dims_spin.setKeyboardTracking(False)
        self.dims_spin.setToolTip("How many columns of Q and K turn (even; partial rotary: the first ones); "
                                  "'all' for every column of d_k")
        self.dims_spin.valueChanged.connect(lambda _v: self._on_base())
        row = QHBoxLayout()
        row.addWidget(QLabel("base"))
        row.addWidget(self.base_edit, 1)
        row.addWidget(QLabel("dims"))
        row.addWidget(self.dims_spin)
        form.addRow(row)
        self.rotary_error = error_label()
        form.addRow(self.rotary_error)
        self.alibi_check = QCheckBox("ALiBi bias")  # short: a longer label widened the column past a 1280 px screen
        self.alibi_check.setToolTip("Add −slope × distance, a bias that falls with the distance from query to key "
                                    "(BLOOM, MPT), after scaling (and the soft-cap), before the mask")
        self.alibi_check.toggled.connect(self._on_alibi)
        form.addRow(self.alibi_check)
        self.alibi_error = error_label()
        form.addRow(self.alibi_error)
        self.softcap_check = QCheckBox("soft-cap at ±")
        self.softcap_check.setToolTip("c·tanh(x / c): squash the scaled scores smoothly into ±c, before the bias "
                                      "and the mask (Gemma 2, FlashAttention)")
        self.softcap_check.toggled.connect(self._on_softcap)
        self.softcap_edit = QLineEdit()
        self.softcap_edit.setToolTip("The cap c (above 0)")
        self.softcap_edit.editingFinished.connect(self._on_softcap)
        cap_row = QHBoxLayout()
        cap_row.addWidget(self.softcap_check)
        cap_row.addWidget(self.softcap_edit, 1)
        form.addRow(cap_row)
        self.softcap_error = error_label()
        form.addRow(self.softcap_error)
        ev = model.events
        for event in (ev.options, ev.dims):
            event.connect(self.show_state)
        self.show_state()

    # ---------------------------------------------------------------- user choices → undoable edits
    def _rotary_dims(self) -> int | None:
        return self.dims_spin.value() or None

    def _on_rotary_toggled(self, on: bool) -> None:
        if not on:
            self.guard(self.rotary_error, "Rotary off", lambda m: m.set_rotary(None))
            return
        self._on_base()

    def _on_base(self) -> None:
        if not self.rotary_check.isChecked():
            return
        text = self.base_edit.text().strip() or f"{DEFAULT_BASE:g}"
        dims = self._rotary_dims()
        if self.model.rotary_base is not None and text == f"{self.model.rotary_base:g}" \
                and dims == self.model.rotary_dims:
            return  # nothing changed (focus left the line)

        def change(m: PlaygroundModel) -> None:
            m.set_rotary(parse_number(text), dims)

        self.guard(self.rotary_error, f"Rotary: base {text}" + (f", {dims} dims" if dims else ""), change)

    def _on_alibi(self, on: bool) -> None:
        self.guard(self.alibi_error, f"ALiBi {'on' if on else 'off'}", lambda m: m.set_alibi(bool(on)))

    def _on_softcap(self) -> None:
        if not self.softcap_check.isChecked():
            if self.model.softcap is not None:
                self.guard(self.softcap_error, "Soft-cap off", lambda m: m.set_softcap(None))
            return
        text = self.softcap_edit.text().strip() or f"{DEFAULT_SOFTCAP:g}"
        if self.model.softcap is not None and text == f"{self.model.softcap:g}":
            return
        self.guard(self.softcap_error, f"Soft-cap {text}", lambda m: m.set_softcap(parse_number(text)))

    # ---------------------------------------------------------------- model → widgets
    def show_state(self, *_args: Any) -> None:
        """The model's options in the widgets, emitting nothing; an old refusal no longer describes them."""
        m = self.model
        for label in (self.rotary_error, self.alibi_error, self.softcap_error):
            say(label, "")
        widgets = (self.rotary_check, self.base_edit, self.dims_spin, self.alibi_check, self.softcap_check,
                   self.softcap_edit)
        blockers = [QSignalBlocker(w) for w in widgets]
        try:
            rotary = m.rotary_base is not None
            self.rotary_check.setChecked(rotary)
            if rotary or not self.base_edit.text():
                self.base_edit.setText(f"{m.rotary_base if rotary else DEFAULT_BASE:g}")
            self.dims_spin.setMaximum(max(m.dims["d_k"], 2))
            if rotary:
                self.dims_spin.setValue(m.rotary_dims or 0)
            self.base_edit.setEnabled(rotary)
            self.dims_spin.setEnabled(rotary)
            self.alibi_check.setChecked(bool(m.alibi))
            capped = m.softcap is not None
            self.softcap_check.setChecked(capped)
            if capped or not self.softcap_edit.text():
                self.softcap_edit.setText(f"{m.softcap if capped else DEFAULT_SOFTCAP:g}")
            self.softcap_edit.setEnabled(capped)
        finally:
            del blockers


class WindowRow(QWidget):
    """The sliding window's W (window) and S (sinks), under the mask choice while it is "sliding"."""

    def __init__(self, model: PlaygroundModel, edits: UndoableEdits, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.guard = OptionGuard(edits, self.show_state)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.window_spin, self.sinks_spin = QSpinBox(), QSpinBox()
        for spin, lo, tip in ((self.window_spin, 0, "W: a query sees itself and the W − 1 keys before it"),
                              (self.sinks_spin, 0, "S: the first S keys, which every query sees (attention "
                                                    "sinks)")):
            spin.setRange(lo, MAX_TOKENS)
            spin.setKeyboardTracking(False)
            spin.setToolTip(tip)
            spin.valueChanged.connect(lambda _v: self._on_changed())
        row.addWidget(QLabel("W"))
        row.addWidget(self.window_spin)
        row.addWidget(QLabel("sinks S"))
        row.addWidget(self.sinks_spin)
        row.addStretch(1)
        form.addRow(row)
        self.error = error_label()
        form.addRow(self.error)
        for event in (model.events.options, model.events.mask):
            event.connect(self.show_state)
        self.show_state()

    def _on_changed(self) -> None:
        w, s = self.window_spin.value(), self.sinks_spin.value()
        if (w, s) != (self.model.window, self.model.sinks):
            self.guard(self.error, f"Window {w}, sinks {s}", lambda m: m.set_window(w, s))

    def show_state(self, *_args: Any) -> None:
        say(self.error, "")
        with QSignalBlocker(self.window_spin), QSignalBlocker(self.sinks_spin):
            self.window_spin.setValue(int(self.model.window))
            self.sinks_spin.setValue(int(self.model.sinks))
        # Hidden explicitly unless sliding: built before it has a parent, a row not hidden by hand shows with its
        # parent (W and S showed under "none" at first launch); shown only in a parent (never as a window of its own)
        if self.model.mask_mode != "sliding":
            self.hide()
        elif self.parentWidget() is not None:
            self.show()
