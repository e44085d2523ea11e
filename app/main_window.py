"""The main window: the Playground tab (edit → state → attention_core → views) and the Training tab.

Every edit goes through ``apply()``, which snapshots the state, mutates it, and pushes an undo command; the command
refreshes the editors and recomputes. torch is never imported on the way to the first window: the Training tab is
built when first opened and GPUs are detected in the background after the window shows.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QIcon, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from attention_core.presets import PRESET_NAMES, get_preset, random_preset

from . import __version__
from .commands import CellCommand, StateCommand
from .explain import EXPLAIN_HINT, MULTIHEAD_VIEWS, explain, explain_multihead, with_projection_sources
from .resources import read_style, resource_path
from .session import SessionError, load_session, save_session
from .settings import Settings
from .state import MAX_DIM, MAX_TOKENS, PlaygroundState, Result
from .views.controls import ControlsPanel
from .views.heatmap import HeatmapWidget
from .views.matrix_editor import MatrixEditor
from .views.multihead_view import MultiHeadView
from .views.pipeline import STEPS, PipelineView

MODE_CHOICES = (("qkv", "self", "Q, K, V directly"),
                ("projection", "self", "X → Q, K, V (self-attention)"),
                ("projection", "cross", "X_q, X_kv → Q, K, V (cross)"))


def _set_visible(widget: QWidget, visible: bool) -> None:
    """setVisible only on change: re-showing a shown widget still costs a layout pass on every edit."""
    if widget.isHidden() == visible:
        widget.setVisible(visible)


class MainWindow(QMainWindow):
    devices_found = Signal(list)

    def __init__(self, settings: QSettings | None = None, preset: str = "cat-sat-mat") -> None:
        from .qt_compat import protect_singletons

        protect_singletons()  # idempotent; covers scripts that build their own QApplication (see app/qt_compat.py)
        super().__init__()
        self.settings = Settings(settings)
        self.state = PlaygroundState()
        self.state.load_preset(get_preset(preset))
        self.undo_stack = QUndoStack(self)
        self.session_path: Path | None = None
        self.result: Result | None = None
        self.pinned: tuple[str, int, int] | None = None
        self._training_panel: Any = None
        self._shown_once = False
        self._editor_shapes: dict[str, tuple[int, int]] = {}
        self.device_thread: threading.Thread | None = None  # lists GPUs (imports torch) after the window shows
        self._closed = False
        self.confirm_on_close = True  # test fixtures and scripts set False: close without the unsaved-changes prompt

        self.setWindowTitle("Attention Playground[*]")
        icon = resource_path("icons", "app.png")
        if icon.is_file():
            self.setWindowIcon(QIcon(str(icon)))
        self.tabs = QTabWidget()
        self.setCentralWidget(self.tabs)
        self.tabs.addTab(self._build_playground(), "Playground")
        self._training_holder = QWidget()
        QVBoxLayout(self._training_holder).addWidget(QLabel("Loading the training panel (imports torch)…"))
        self.tabs.addTab(self._training_holder, "Training")
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self._build_menus()
        self.devices_found.connect(self.controls.set_devices)
        self.undo_stack.cleanChanged.connect(self._on_clean_changed)
        self.resize(1280, 800)
        if (geom := self.settings.geometry()) is not None:
            self.restoreGeometry(geom)
        if (split := self.settings.splitter_state()) is not None:
            self.splitter.restoreState(split)
        self.set_theme(self.settings.theme, save=False)
        self.refresh()

    # ================================================================== layout
    def _build_playground(self) -> QWidget:
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(4, 4, 4, 4)
        self.mode_combo = QComboBox()
        self.mode_combo.setToolTip("Edit Q, K, V themselves, or token vectors X and the projections W")
        for _, _, text in MODE_CHOICES:
            self.mode_combo.addItem(text)
        self.mode_combo.activated.connect(self._on_mode_chosen)
        lv.addWidget(self.mode_combo)
        dims = QGridLayout()
        self.dim_spins: dict[str, QSpinBox] = {}
        labels = {"Lq": "Lq", "Lk": "Lk", "d_k": "d_k", "d_v": "d_v", "d_model": "d_model"}
        tips = {"Lq": "number of queries (tokens asking)", "Lk": "number of keys/values (tokens answering)",
                "d_k": "width of queries and keys", "d_v": "width of values (and of the output)",
                "d_model": "width of the token vectors X"}
        for n, (dim, text) in enumerate(labels.items()):
            spin = QSpinBox()
            spin.setRange(1, MAX_TOKENS if dim in ("Lq", "Lk") else MAX_DIM)
            spin.setKeyboardTracking(False)
            spin.setToolTip(tips[dim])
            spin.setMaximumWidth(70)
            spin.valueChanged.connect(lambda v, d=dim: self._on_dim(d, v))
            lab = QLabel(text)
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
        for name in ("Q", "K", "V", "X", "X_q", "X_kv", "W_Q", "W_K", "W_V", "W_O"):
            ed = MatrixEditor(self.state, name)
            ed.model.edit_requested.connect(self._on_cell_edit)
            ed.model.rejected.connect(self.show_error)
            ed.table.paste_requested.connect(self._on_paste)
            ed.table.scrub_requested.connect(self._on_scrub)
            ed.table.token_rename_requested.connect(self._on_rename_token)
            lv.addWidget(ed)
            self.editors[name] = ed
        self.derived_title = QLabel("<b>Derived</b>  Q = X·W_Q, K = X·W_K, V = X·W_V (read-only)")
        self.derived_title.setWordWrap(True)  # an unwrapped label would widen the panel past its scroll area
        lv.addWidget(self.derived_title)
        self.derived: dict[str, HeatmapWidget] = {}
        for name in ("Q", "K", "V"):
            hm = HeatmapWidget(title=f"{name} (derived)")
            hm.setMinimumHeight(150)
            lv.addWidget(hm)
            self.derived[name] = hm
        lv.addStretch(1)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(left)
        left_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        left_scroll.setMinimumWidth(290)

        center = QWidget()
        cv = QVBoxLayout(center)
        cv.setContentsMargins(0, 0, 0, 0)
        self.story_label = QLabel()
        self.story_label.setObjectName("storyLabel")
        self.story_label.setWordWrap(True)
        cv.addWidget(self.story_label)
        self.view_tabs = QTabWidget()
        self.pipeline = PipelineView()
        self.pipeline.cellHovered.connect(self._on_hover)
        self.pipeline.cellClicked.connect(self._on_click)
        self.multihead = MultiHeadView()
        self.multihead.cellHovered.connect(self._on_hover)
        self.multihead.cellClicked.connect(self._on_click)
        self.view_tabs.addTab(self.pipeline, "Steps")
        self.view_tabs.addTab(self.multihead, "Multi-head")
        self.view_tabs.currentChanged.connect(self._on_view_tab_changed)
        cv.addWidget(self.view_tabs, 1)
        self.explain_label = QLabel(EXPLAIN_HINT)
        self.explain_label.setObjectName("explainLabel")
        self.explain_label.setWordWrap(True)
        self.explain_label.setTextFormat(Qt.TextFormat.RichText)
        self.explain_label.setMinimumHeight(64)
        cv.addWidget(self.explain_label)

        self.controls = ControlsPanel()
        self.controls.scale_changed.connect(
            lambda mode, v: self.apply("Change scale", lambda s: s.set_scale(mode, v), merge_key="scale"))
        self.controls.mask_changed.connect(lambda m: self.apply(f"Mask: {m}", lambda s: s.set_mask_mode(m)))
        self.controls.padding_toggled.connect(
            lambda j: self.apply("Toggle padding key", lambda s: s.toggle_padding(j)))
        self.controls.heads_changed.connect(lambda h: self.apply(f"{h} heads", lambda s: s.set_heads(h)))
        self.controls.device_changed.connect(self._on_device)
        right_scroll = QScrollArea()
        right_scroll.setWidgetResizable(True)
        right_scroll.setWidget(self.controls)
        right_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        right_scroll.setMinimumWidth(215)

        splitter = QSplitter()
        splitter.addWidget(left_scroll)
        splitter.addWidget(center)
        splitter.addWidget(right_scroll)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([310, 740, 230])
        self.splitter = splitter
        return splitter

    def _build_menus(self) -> None:
        mb = self.menuBar()
        file_menu = mb.addMenu("&File")
        self._add(file_menu, "&New", self.new_session, QKeySequence.StandardKey.New)
        self._add(file_menu, "&Open session…", self.open_session_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._add(file_menu, "&Save session", self.save_session, QKeySequence.StandardKey.Save)
        self._add(file_menu, "Save session &as…", self.save_session_as, QKeySequence.StandardKey.SaveAs)
        file_menu.addSeparator()
        self._add(file_menu, "&Export all steps…", self.export_all_dialog, "Ctrl+E")
        file_menu.addSeparator()
        self._add(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        edit_menu = mb.addMenu("&Edit")
        undo = self.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcuts([QKeySequence("Ctrl+Z")])
        redo = self.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit_menu.addAction(undo)
        edit_menu.addAction(redo)
        self.undo_action, self.redo_action = undo, redo
        preset_menu = mb.addMenu("&Presets")
        for name in PRESET_NAMES:
            p = get_preset(name)
            act = self._add(preset_menu, f"{p.title}", lambda n=name: self.load_preset(n))
            act.setStatusTip(p.story)
            act.setToolTip(p.story)
        preset_menu.setToolTipsVisible(True)
        preset_menu.addSeparator()
        self._add(preset_menu, "Random (seed…)", self._random_preset_dialog)
        view_menu = mb.addMenu("&View")
        group = QActionGroup(self)
        self.theme_actions = {}
        for theme in ("light", "dark"):
            act = QAction(f"{theme.title()} theme", self, checkable=True)
            act.triggered.connect(lambda _c=False, t=theme: self.set_theme(t))
            group.addAction(act)
            view_menu.addAction(act)
            self.theme_actions[theme] = act
        help_menu = mb.addMenu("&Help")
        self._add(help_menu, "&How to use", self._show_help, QKeySequence.StandardKey.HelpContents)
        self._add(help_menu, "&About", lambda: QMessageBox.about(
            self, "About Attention Playground",
            f"Attention Playground {__version__}<br>See scaled dot-product attention work, step by step.<br>"
            "All numbers are computed by attention_core (numpy on CPU, torch on CUDA)."))

    def _add(self, menu: Any, text: str, slot: Callable[[], Any], shortcut: Any = None) -> QAction:
        act = QAction(text, self)
        act.triggered.connect(lambda _c=False: slot())
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        menu.addAction(act)
        return act

    def _on_clean_changed(self, clean: bool) -> None:
        self.setWindowModified(not clean)

    # ================================================================== edits
    def apply(self, text: str, fn: Callable[[PlaygroundState], Any], merge_key: str | None = None) -> bool:
        """Run ``fn`` on the state as one undoable step; a ValueError is shown and changes nothing."""
        before = self.state.snapshot()
        try:
            fn(self.state)
        except ValueError as exc:
            self.state.restore(before)
            self.show_error(str(exc))
            self.refresh()
            return False
        after = self.state.snapshot()
        if after == before:
            self.refresh()
            return True
        self.clear_error()
        self.undo_stack.push(StateCommand(self.state, before, after, text, self.refresh, merge_key))
        return True

    def set_cell(self, name: str, row: int, col: int, value: float, merge_key: str | None = None) -> bool:
        """One cell edit as one undo step (scrubs with the same ``merge_key`` merge); bad values are refused."""
        try:
            m = self.state.matrices[name]
            if not (0 <= row < m.shape[0] and 0 <= col < m.shape[1]):
                raise ValueError(f"{name}: cell ({row}, {col}) is outside the {m.shape[0]}×{m.shape[1]} matrix")
            if not math.isfinite(value):
                raise ValueError(f"{name}[{row}, {col}]: {value} is not a finite number")
        except (KeyError, ValueError) as exc:
            self.show_error(str(exc))
            return False
        old = float(m[row, col])
        if old == value:
            return True
        self.clear_error()
        self.undo_stack.push(CellCommand(self.state, name, row, col, old, float(value), self.refresh, merge_key))
        return True

    def _on_cell_edit(self, name: str, row: int, col: int, value: float) -> None:
        self.set_cell(name, row, col, value)

    def _on_scrub(self, name: str, row: int, col: int, value: float, key: str) -> None:
        self.set_cell(name, row, col, value, merge_key=key)

    def _on_paste(self, name: str, row: int, col: int, block: Any) -> None:
        self.apply(f"Paste into {name}", lambda s: s.set_block(name, row, col, block))

    def _on_dim(self, dim: str, value: int) -> None:
        if self._refreshing or self.state.dims[dim] == value:
            return
        self.apply(f"{dim} = {value}", lambda s: s.set_dim(dim, value))

    def _on_tokens(self, side: str, text: str) -> None:
        names = [t for t in re.split(r"[,\s]+", text.strip()) if t]
        current = self.state.query_tokens if side == "q" else self.state.key_tokens
        if names == current:
            return
        if len(names) != len(current):
            self.show_error(f"Give {len(current)} token names (one per row), got {len(names)}; "
                            "change Lq/Lk to add or remove tokens.")
            self.refresh()
            return

        def rename(s: PlaygroundState) -> None:
            for i, n in enumerate(names):
                s.set_token(side, i, n)

        self.apply("Rename tokens", rename)

    def _on_rename_token(self, name: str, row: int) -> None:
        labels = self.state.row_labels(name)
        if name in ("W_Q", "W_K", "W_V"):
            return
        side = "k" if name in ("K", "V", "X_kv") else "q"
        text, ok = QInputDialog.getText(self, "Rename token", f"Name for token {row + 1}:", text=labels[row])
        if ok:
            self.apply("Rename token", lambda s: s.set_token(side, row, text))

    def _on_mode_chosen(self, index: int) -> None:
        mode, kind, text = MODE_CHOICES[index]
        self.apply(text, lambda s: s.set_mode(mode, kind))

    def _on_device(self, device: str) -> None:
        self.state.device = device
        self.refresh()

    def load_preset(self, name: str) -> None:
        preset = get_preset(name)
        self.apply(f"Preset {name}", lambda s: s.load_preset(preset))

    def _random_preset_dialog(self) -> None:
        seed, ok = QInputDialog.getInt(self, "Random preset", "Seed:", 0, 0, 2**31 - 1)
        if ok:
            preset = random_preset(seed)
            self.apply(f"Random preset (seed {seed})", lambda s: s.load_preset(preset))

    # ================================================================== refresh
    _refreshing = False

    def refresh(self) -> None:
        """Bring every widget in line with the state, then recompute and redraw."""
        self._refreshing = True
        try:
            st = self.state
            names = st.matrix_names()
            for name, ed in self.editors.items():
                visible = name in names
                _set_visible(ed, visible)
                if visible:
                    shape = (*st.shape_of(name), tuple(st.row_labels(name)))
                    if self._editor_shapes.get(name) != shape:
                        ed.refresh()
                        self._editor_shapes[name] = shape
                    else:
                        ed.model.sync()  # repaints only the cells that changed
            projection = st.mode == "projection"
            _set_visible(self.derived_title, projection)
            for hm in self.derived.values():
                _set_visible(hm, projection)
            for dim, spin in self.dim_spins.items():
                spin.setValue(st.dims[dim])
            self.dim_spins["d_model"].setEnabled(projection)
            self.dim_spins["Lk"].setEnabled(not st.tied_tokens)
            self.mode_combo.setCurrentIndex(next(i for i, (m, k, _) in enumerate(MODE_CHOICES)
                                                 if m == st.mode and (m == "qkv" or k == st.kind)))
            self.query_tokens_edit.setText(" ".join(st.query_tokens))
            self.key_tokens_edit.setText(" ".join(st.key_tokens))
            self.key_tokens_edit.setEnabled(not st.tied_tokens)
            self.story_label.setText(st.story)
            _set_visible(self.story_label, bool(st.story))
            try:
                self.result = st.compute()
            except ValueError as exc:
                self.show_error(str(exc))
                return
            self.controls.show_state(st, self.result)
            self._draw()
        finally:
            self._refreshing = False

    def _draw(self) -> None:
        """Repaint the views that are visible; the others catch up when shown."""
        if self.result is None:
            return
        st, res = self.state, self.result
        if self.view_tabs.currentWidget() is self.multihead:
            if res.heads is None and st.num_heads > 1:
                res = self.result = st.compute_heads(res)
            self.multihead.show_result(st, res)
        else:
            self.pipeline.show_result(st, res)
        if st.mode == "projection":
            labels = {"Q": st.query_tokens, "K": st.key_tokens, "V": st.key_tokens}
            for name, mat in (("Q", res.q), ("K", res.k), ("V", res.v)):
                prefix = "v" if name == "V" else "k"
                self.derived[name].set_data(mat, labels[name], [f"{prefix}{j}" for j in range(mat.shape[1])],
                                            kind="signed", title=f"{name} (derived)")
        s = res.steps
        self.controls.show_time(s.device, s.seconds)
        self.statusBar().showMessage(
            f"computed on {s.device} in {s.seconds * 1e6:.0f} µs · {s.scores.shape[0]} queries × "
            f"{s.scores.shape[1]} keys · d_k={s.d_k} · d_v={s.output.shape[1]} · scale {s.scale:.4g}")
        if self.pinned is not None:
            self._explain(*self.pinned)

    def _on_view_tab_changed(self, _index: int) -> None:
        if self.pinned is not None:  # a pinned cell of the other tab's maps is out of sight: unpin it
            self.pinned = None
            self.pipeline.set_selected(None, None)
            self.multihead.set_selected(None, None)
        self._draw()
        self._explain_hint()

    # ================================================================== explain
    def _on_hover(self, view: str, i: int, j: int) -> None:
        if i < 0:
            if self.pinned is not None:
                self._explain(*self.pinned)
            return
        self._explain(view, i, j)

    def _on_click(self, view: str, i: int, j: int) -> None:
        if view in ("masked", "weights") and self.state.mask_mode == "custom":
            self.apply("Toggle mask cell", lambda s: s.toggle_custom(i, j))
        self.pinned = (view, i, j)
        self.pipeline.set_selected(view, (i, j))
        self.multihead.set_selected(view, (i, j))
        self._explain(view, i, j)

    def _explain_hint(self) -> None:
        self.explain_label.setText(EXPLAIN_HINT)
        self.pipeline.set_highlights({})
        self.multihead.set_highlights({})
        for ed in self.editors.values():
            ed.model.set_highlight((), ())
        for hm in self.derived.values():
            hm.set_highlight((), ())

    def _explain(self, view: str, i: int, j: int) -> None:
        if self.result is None:
            return
        if view in MULTIHEAD_VIEWS or view.startswith("head:"):
            ex = explain_multihead(view, i, j, self.state, self.result)
        else:
            ex = explain(view, i, j, self.state, self.result)
        if not ex.html:
            self._explain_hint()
            return
        self.explain_label.setText(ex.html)
        highlight = with_projection_sources(ex.highlight, self.state)
        self.pipeline.set_highlights(highlight)
        self.multihead.set_highlights(highlight)
        for name, ed in self.editors.items():
            rows, cols, _ = highlight.get(name, ((), (), ()))
            ed.model.set_highlight(tuple(rows), tuple(cols))
        for name, hm in self.derived.items():
            rows, cols, _ = highlight.get(name, ((), (), ()))
            hm.set_highlight(rows, cols)

    # ================================================================== messages
    def show_error(self, message: str) -> None:
        self.error_label.setText(f"⚠ {message}")
        self.error_label.show()
        self.statusBar().showMessage(f"⚠ {message}", 8000)

    def clear_error(self) -> None:
        _set_visible(self.error_label, False)

    # ================================================================== theme
    def set_theme(self, theme: str, save: bool = True) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            self.setStyleSheet(read_style(theme))
        dark = theme == "dark"
        self.pipeline.set_dark(dark)
        self.multihead.set_dark(dark)
        for hm in self.derived.values():
            hm.apply_theme(dark)
        self.theme_actions[theme].setChecked(True) if hasattr(self, "theme_actions") else None
        if save:
            self.settings.theme = theme

    # ================================================================== sessions
    def new_session(self) -> None:
        if not self._confirm_discard():
            return
        self.state.restore(PlaygroundState().snapshot())
        self.state.load_preset(get_preset("cat-sat-mat"))
        self.session_path = None
        self.undo_stack.clear()
        self.refresh()

    def open_session_dialog(self) -> None:
        if not self._confirm_discard():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open session", self.settings.last_dir(),
                                              "Attention Playground session (*.json);;All files (*)")
        if path:
            self.open_session(path)

    def open_session(self, path: str | Path) -> bool:
        """Load a session file; a bad file is refused with the reason and the current work is kept."""
        try:
            loaded = load_session(path)
        except SessionError as exc:
            QMessageBox.warning(self, "Cannot open session", f"{exc}\n\nYour current work is unchanged.")
            self.show_error(str(exc))
            return False
        self.state.restore(loaded.snapshot())
        self.session_path = Path(path)
        self.undo_stack.clear()
        self.settings.add_recent(str(path))
        self.settings.set_last_dir(str(path))
        self.clear_error()
        self.refresh()
        return True

    def save_session(self) -> bool:
        if self.session_path is None:
            return self.save_session_as()
        return self.save_session_to(self.session_path)

    def save_session_as(self) -> bool:
        start = str(Path(self.settings.last_dir()) / "session.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save session", start, "Attention Playground session (*.json)")
        if not path:
            return False
        if not path.lower().endswith(".json"):
            path += ".json"
        return self.save_session_to(path)

    def save_session_to(self, path: str | Path) -> bool:
        try:
            save_session(path, self.state)
        except OSError as exc:
            QMessageBox.warning(self, "Cannot save", f"Could not save {path}: {exc}")
            return False
        self.session_path = Path(path)
        self.undo_stack.setClean()
        self.settings.add_recent(str(path))
        self.settings.set_last_dir(str(path))
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        files = self.settings.recent_files()
        if not files:
            self.recent_menu.addAction("(none)").setEnabled(False)
        for f in files:
            self._add(self.recent_menu, f, lambda f=f: self._confirm_discard() and self.open_session(f))

    def _confirm_discard(self) -> bool:
        if self.undo_stack.isClean() or not self.isWindowModified():
            return True
        answer = QMessageBox.question(
            self, "Unsaved changes", "Save your changes to this session first?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel)
        if answer == QMessageBox.StandardButton.Save:
            return self.save_session()
        return answer == QMessageBox.StandardButton.Discard

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self.confirm_on_close and not self._confirm_discard():
            event.ignore()
            return
        self._closed = True
        if self._training_panel is not None and hasattr(self._training_panel, "shutdown"):
            self._training_panel.shutdown()
        if self.device_thread is not None and self.device_thread.is_alive():
            self.device_thread.join(timeout=60)
        self.settings.save_window(self.saveGeometry(), self.saveState())
        self.settings.set_splitter_state(self.splitter.saveState())
        event.accept()

    # ================================================================== export
    def export_all_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export all steps to folder", self.settings.last_dir())
        if folder:
            written = self.export_all(folder)
            self.statusBar().showMessage(f"Exported {len(written)} files to {folder}", 6000)

    def export_all(self, folder: str | Path) -> list[Path]:
        """Every step as PNG, SVG and CSV into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        if self.result is not None:
            self.pipeline.show_result(self.state, self.result)
        for n, name in enumerate(STEPS, start=1):
            for suffix in ("png", "svg", "csv"):
                path = folder / f"{n}-{name}.{suffix}"
                self.pipeline.heatmaps[name].export(path)
                written.append(path)
        return written

    # ================================================================== training tab, devices
    @property
    def training_panel(self) -> Any:
        """The Training tab's panel, created on first use (it imports torch)."""
        if self._training_panel is None:
            from .training_panel import TrainingPanel

            panel = TrainingPanel(self)
            idx = self.tabs.indexOf(self._training_holder)
            current = self.tabs.currentIndex()
            self.tabs.blockSignals(True)
            self.tabs.removeTab(idx)
            self.tabs.insertTab(idx, panel, "Training")
            self.tabs.setCurrentIndex(current)
            self.tabs.blockSignals(False)
            self._training_holder.deleteLater()
            self._training_panel = panel
        return self._training_panel

    def _on_tab_changed(self, index: int) -> None:
        if self.tabs.widget(index) is self._training_holder:
            QTimer.singleShot(0, lambda: self.training_panel)
        if index == 0:
            self._draw()  # the status line describes the playground's last computation
        else:
            self.statusBar().showMessage("Training: the reversal task of lesson 2.3 (see the panel's set-up)")

    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)
        if not self._shown_once:
            self._shown_once = True
            # after the first paint settles: listing GPUs imports torch (~2.5 s), in the background
            QTimer.singleShot(1000, self._start_device_detection)

    detect_devices = True
    """List GPUs (which imports torch) in the background 1 s after the window shows. ``--self-test`` switches it
    off: closing waits for the thread, and the self-test is over in about a second."""

    def _start_device_detection(self) -> None:
        if not self.detect_devices or self._closed:
            return
        # not a daemon: a thread still importing torch while the interpreter shuts down can crash it; closing the
        # window waits for this one instead (see closeEvent)
        self.device_thread = threading.Thread(target=self._detect_devices, name="detect-devices")
        self.device_thread.start()

    def _detect_devices(self) -> None:
        try:
            from attention_core import available_devices

            devices = available_devices()
        except Exception:
            devices = ["cpu"]
        try:
            self.devices_found.emit(devices)
        except RuntimeError:  # the window was closed meanwhile
            pass

    # ================================================================== help, self-test
    def _show_help(self) -> None:
        QMessageBox.information(self, "How to use", (
            "• Edit a cell: type a number, Enter or Tab. Ctrl+drag or Ctrl+↑/↓ scrubs a value.\n"
            "• Paste a block from a spreadsheet with Ctrl+V; copy with Ctrl+C.\n"
            "• Hover any heatmap cell to see its formula; click to pin it.\n"
            "• Right-click a heatmap to export PNG, SVG or CSV; File → Export all steps.\n"
            "• Ctrl+Z / Ctrl+Shift+Z undo and redo every edit.\n"
            "• Mask 'custom': click a cell in ③ or ④ to block it."))

    def self_test(self, out_dir: Path) -> list[Path]:
        """Render every view to PNG in ``out_dir`` (used by ``--self-test`` and the bundle's smoke test)."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        QApplication.processEvents()
        written = [p for p in self.export_all(out_dir) if p.suffix == ".png"]
        for p in out_dir.glob("*.svg"):
            p.unlink()
        for p in out_dir.glob("*.csv"):
            p.unlink()
        from .export import export_widget_image

        before = self.state.snapshot()
        try:
            if 2 in self.state.valid_head_counts():
                self.state.set_heads(2)
            self.view_tabs.setCurrentWidget(self.multihead)
            self.refresh()
            path = out_dir / "multihead.png"
            export_widget_image(self.multihead, path)
            written.append(path)
        finally:
            self.state.restore(before)
            self.view_tabs.setCurrentWidget(self.pipeline)
            self.refresh()
        path = out_dir / "window.png"
        self.grab().save(str(path))
        written.append(path)
        panel = self.training_panel
        self.tabs.setCurrentWidget(panel)  # a tab that was never shown has no layout: show it before rendering
        for _ in range(3):
            QApplication.processEvents()
        written += list(panel.self_test(out_dir))
        self.tabs.setCurrentIndex(0)
        return written
