"""The Playground's left column: mode, sizes, token names, the matrix editors and (projection mode) the derived
Q, K, V. Edits go through ``UndoableEdits``; every widget follows the model's events inside signal blockers."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QComboBox, QGridLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from app.playground.model.playground import PlaygroundModel
from app.playground.model.state import MATRIX_SHAPES, MAX_DIM, MAX_TOKENS
from app.playground.qt.commands import UndoableEdits
from app.playground.qt.matrix_editor import MatrixEditor
from app.widgets.frame import after_first_paint
from app.widgets.heatmap.view import HeatmapWidget

MODE_CHOICES = (("qkv", "self", "Q, K, V directly"),
                ("projection", "self", "X → Q, K, V (self-attention)"),
                ("projection", "cross", "X_q, X_kv → Q, K, V (cross)"))
DIM_TIPS = {"Lq": "number of queries (tokens asking)", "Lk": "number of keys/values (tokens answering)",
            "d_k": "width of queries and keys", "d_v": "width of values (and of the output)",
            "d_model": "width of the token vectors X"}


class DerivedMaps(dict[str, HeatmapWidget]):
    """The derived Q, K and V maps by name, built on first need: asking for one builds all three.

    Why: they sit below the fold of the left column, and the first frame (launch within 1.6 x a bare
    pyqtgraph window) has five step maps to build already; they are built right after it (projection mode) or when
    the learner first switches to projection mode. Iterating before then finds none."""

    def __init__(self, build: Callable[[], None]) -> None:
        super().__init__()
        self._build = build

    def __missing__(self, name: str) -> HeatmapWidget:
        self._build()
        return dict.__getitem__(self, name)


def set_visible(widget: QWidget, visible: bool) -> None:
    """setVisible only on change: re-showing a shown widget still costs a layout pass on every edit."""
    if widget.isHidden() == visible:
        widget.setVisible(visible)


class InputsPanel(QWidget):
    def __init__(self, model: PlaygroundModel, edits: UndoableEdits, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model, self.edits = model, edits
        lv = QVBoxLayout(self)
        lv.setContentsMargins(4, 4, 4, 4)
        self.mode_combo = QComboBox()
        self.mode_combo.setToolTip("Edit Q, K, V themselves, or token vectors X and the projections W")
        for _, _, text in MODE_CHOICES:
            self.mode_combo.addItem(text)
        self.mode_combo.activated.connect(self.choose_mode)
        lv.addWidget(self.mode_combo)
        dims = QGridLayout()
        self.dim_spins: dict[str, QSpinBox] = {}
        for n, dim in enumerate(DIM_TIPS):
            spin = QSpinBox()
            spin.setRange(1, MAX_TOKENS if dim in ("Lq", "Lk") else MAX_DIM)
            spin.setKeyboardTracking(False)
            spin.setToolTip(DIM_TIPS[dim])
            spin.setMaximumWidth(70)
            # Qt sizes a spin box for its widest value with room to spare: a third digit (MAX_DIM 128) widened the
            # column by 16 px and pushed a 1280 px window with the Learn dock off the screen. One digit less of
            # room still shows 128 whole (41 px of field for 23 px of text).
            spin.setMinimumWidth(spin.minimumSizeHint().width() - spin.fontMetrics().horizontalAdvance("0"))
            spin.valueChanged.connect(lambda v, d=dim: self._on_dim(d, v))
            lab = QLabel(dim)
            lab.setBuddy(spin)
            dims.addWidget(lab, n // 2, (n % 2) * 2)
            dims.addWidget(spin, n // 2, (n % 2) * 2 + 1)
            self.dim_spins[dim] = spin
        lv.addLayout(dims)
        tok = QGridLayout()
        self.query_tokens_edit, self.key_tokens_edit = QLineEdit(), QLineEdit()
        for r, (side, edit, text) in enumerate((("q", self.query_tokens_edit, "query tokens"),
                                                 ("k", self.key_tokens_edit, "key tokens"))):
            edit.setToolTip("Token names, separated by spaces or commas; press Enter")
            edit.editingFinished.connect(lambda s=side, e=edit: self._on_tokens(s, e.text()))
            tok.addWidget(QLabel(text), r, 0)
            tok.addWidget(edit, r, 1)
        lv.addLayout(tok)
        self.error_label = QLabel()
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        lv.addWidget(self.error_label)
        self.editors: dict[str, MatrixEditor] = {}
        for name in MATRIX_SHAPES:
            ed = MatrixEditor(model, name, edits)
            lv.addWidget(ed)
            self.editors[name] = ed
        self.derived_title = QLabel("<b>Derived</b>  Q = X·W_Q, K = X·W_K, V = X·W_V (read-only)")
        self.derived_title.setWordWrap(True)  # an unwrapped label would widen the panel past its scroll area
        lv.addWidget(self.derived_title)
        self.derived = DerivedMaps(self.build_derived)
        self._column, self._built = lv, False  # (show_state builds the derived maps only once the panel is)
        lv.addStretch(1)
        edits.refused.connect(self.show_error)
        edits.accepted.connect(self.clear_error)
        ev = model.events
        ev.changed.connect(self.clear_error)  # undo, redo, a lesson: the refusal was about the state before
        for event in (ev.mode, ev.dims, ev.tokens, ev.heads):
            event.connect(self.show_state)
        ev.result.connect(self._draw_derived)
        ev.explanation.connect(self._on_explanation)
        self.show_state()
        self._built = True
        if self.model.state.mode == "projection":
            after_first_paint(self, self.build_derived)  # right after the first frame

    def build_derived(self) -> None:
        """The three derived maps under their title (once), drawn and themed as the others."""
        if self.derived:
            return
        lv = self._column
        at = lv.indexOf(self.derived_title) + 1
        projection = self.model.state.mode == "projection"
        for n, name in enumerate(("Q", "K", "V")):
            hm = HeatmapWidget(title=f"{name} (derived)", )
            hm.setMinimumHeight(150)
            lv.insertWidget(at + n, hm)  # (a child now: shown with the panel, never a window of its own)
            hm.setVisible(projection)
            dict.__setitem__(self.derived, name, hm)
        self._draw_derived()

    # ---------------------------------------------------------------- user actions
    def choose_mode(self, index: int) -> None:
        mode, kind, text = MODE_CHOICES[index]
        if not self.edits.apply(text, lambda m: m.set_mode(mode, kind)):
            self.show_state()

    def _on_dim(self, dim: str, value: int) -> None:
        if self.model.dims[dim] != value and not self.edits.apply(f"{dim} = {value}", lambda m: m.set_dim(dim, value)):
            self.show_state()

    def _on_tokens(self, side: str, text: str) -> None:
        if not self.edits.apply("Rename tokens", lambda m: m.set_tokens(side, text)):
            self.show_state()  # refused: the line shows the model's names again

    def show_error(self, message: str) -> None:
        self.error_label.setText(f"⚠ {message}")
        self.error_label.show()

    def clear_error(self) -> None:
        set_visible(self.error_label, False)

    # ---------------------------------------------------------------- model → widgets
    def show_state(self) -> None:
        st = self.model.state
        names = st.matrix_names()
        for name, ed in self.editors.items():
            set_visible(ed, name in names)
        projection = st.mode == "projection"
        set_visible(self.derived_title, projection)
        if projection and self._built:
            self.build_derived()
        for hm in self.derived.values():
            set_visible(hm, projection)
        for dim, spin in self.dim_spins.items():
            with QSignalBlocker(spin):
                spin.setValue(st.dims[dim])
        self.dim_spins["d_model"].setEnabled(projection)
        self.dim_spins["Lk"].setEnabled(not st.tied_tokens)
        with QSignalBlocker(self.mode_combo):
            self.mode_combo.setCurrentIndex(next(i for i, (m, k, _) in enumerate(MODE_CHOICES)
                                                 if m == st.mode and (m == "qkv" or k == st.kind)))
        self.query_tokens_edit.setText(" ".join(st.query_tokens))
        self.key_tokens_edit.setText(" ".join(st.key_tokens))
        self.key_tokens_edit.setEnabled(not st.tied_tokens)

    def _draw_derived(self) -> None:
        st, res = self.model.state, self.model.computation
        if st.mode != "projection" or not self.derived:
            return
        labels = {"Q": st.query_tokens, "K": st.key_tokens, "V": st.key_tokens}
        for name, mat in (("Q", res.q), ("K", res.k), ("V", res.v)):
            prefix = "v" if name == "V" else "k"
            self.derived[name].set_data(mat, labels[name], [f"{prefix}{j}" for j in range(mat.shape[1])],
                                        kind="signed", title=f"{name} (derived)")
        self._on_explanation()

    def _on_explanation(self) -> None:
        for name, hm in self.derived.items():
            rows, cols, _ = self.model.highlights.get(name, ((), (), ()))
            hm.set_highlight(rows, cols)
