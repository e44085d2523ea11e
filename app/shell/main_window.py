"""The main window: layout and wiring only. Its tabs are listed in one place (``_build_tabs``), each driven by one
Qt-free evented model:

- Playground: ``self.playground`` (``PlaygroundModel``); edits go through ``self.edits`` (undo stack) and every view
  follows the model's events (app/playground/tab.py). Built at once: it is the first frame.
- Training, Experiments, Lab, Model: a ``LazyTabHost`` each (``app/<feature>/qt/host.py``) holds the model and
  builds the tab's widgets when it is first opened. The hosts themselves are created on first use too
  (``app/widgets/tab_host.py``'s ``DeferredHosts``): the tab bar shows their titles from the first frame, and the
  host (its module, its model) is made when its tab is chosen or ``self.training`` (the ``TrainingSession``),
  ``self.training_host``, ``self.experiments``, ``self.lab`` or ``self.inspect`` is first read.
- ``self.learn`` (the Learn dock's wiring, Help → Lessons): right after the first frame; the first-launch offer
  (``self.learn_offer``) is up with the first frame and handed to it.

Nothing the first frame does not show is imported or built before it (``bench_gui_edit.py --launch`` measures it
against a bare pyqtgraph window): no torch; GPUs are listed in the background after it shows
(``app/widgets/workers.py``, the one way to run background work).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QIcon, QKeySequence, QShowEvent, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QInputDialog,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTabWidget,
)

from app.common.resources import resource_path
from app.common.version import __version__
from app.learn.qt.offer import LessonOffer, show_first_launch_offer
from app.playground.model.concealment import Concealment
from app.playground.model.playground import PlaygroundModel
from app.playground.model.session_file import SessionError, load_session, save_session
from app.playground.qt.commands import UndoableEdits
from app.playground.qt.pipeline import STEPS
from app.playground.tab import PlaygroundTab
from app.shell import presentation, slot_guard
from app.shell.help import HELP_TEXT
from app.shell.hosts import HostAttributes, add_hosts
from app.widgets import screen_fit
from app.widgets.frame import after_first_paint
from app.widgets.qt_compat import protect_singletons
from app.widgets.settings import THEMES, Settings, dialog_dir, remember_dialog_path, use_for_dialogs
from app.widgets.status_bar import ElidingStatusBar
from app.widgets.theme import ThemeController
from attention_core.presets import PRESET_NAMES, get_preset, random_preset

if TYPE_CHECKING:
    from app.learn.qt.dock import Learn

class MainWindow(HostAttributes, QMainWindow):
    export_pipeline_action: QAction  # File → Export pipeline figure… (app/shell/presentation.py adds it)

    def __init__(self, settings: QSettings | None = None, preset: str = "cat-sat-mat", *, detect_devices: bool = True,
                 warm_up_torch: bool = True, preview_untrained: bool = True, confirm_on_close: bool = True) -> None:
        """Options a script may switch off (docs/scripting.md): ``detect_devices`` (list GPUs in the background once
        shown), the Training panel's ``warm_up_torch`` and ``preview_untrained``, ``confirm_on_close``."""
        protect_singletons()  # idempotent; covers scripts that build their own QApplication (app/widgets/qt_compat.py)
        super().__init__()
        slot_guard.install(self)  # an exception in a slot or an override: logged, shown here, never a crash
        self.settings = Settings(settings)
        use_for_dialogs(self.settings)  # every file dialog opens in the folder last chosen (app/widgets/settings.py)
        self.playground = PlaygroundModel(preset)
        self.undo_stack = QUndoStack(self)
        self.edits = UndoableEdits(self.playground, self.undo_stack, self)
        self.session_path: Path | None = None
        self._shown_once = self._closed = False
        self._learn: Learn | None = None
        self.detect_devices, self.confirm_on_close = detect_devices, confirm_on_close
        self.warm_up_torch, self.preview_untrained = warm_up_torch, preview_untrained  # handed to the Training tab

        self.setWindowTitle("Attention Playground[*]")
        if (icon := resource_path("icons", "app.png")).is_file():
            self.setWindowIcon(QIcon(str(icon)))
        self.tabs = QTabWidget()
        self.setCentralWidget(self.tabs)
        self.setStatusBar(ElidingStatusBar())  # a long message ends in "…" before the first-launch offer
        self.theme = ThemeController(self, self.settings.theme)
        self.theme.set_choice(self.settings.theme)  # before the widgets: on a built window it re-polishes them all
        self._build_tabs()
        self.tabs.currentChanged.connect(self._show_status)
        # the widgets tests and scripts reach for, by their old names
        t = self.tab
        self.pipeline, self.controls, self.view_tabs = t.pipeline, t.controls, t.view_tabs
        self.explain_label, self.story_label, self.splitter = t.explain_label, t.story_label, t
        self.editors, self.derived, self.error_label = t.inputs.editors, t.inputs.derived, t.inputs.error_label
        self.dim_spins, self.key_tokens_edit = t.inputs.dim_spins, t.inputs.key_tokens_edit
        self._build_menus()
        self.undo_stack.cleanChanged.connect(self._on_clean_changed)
        self.edits.refused.connect(self._show_refusal)
        self.playground.events.result.connect(self._show_status)
        self.resize(1280, 800)
        if (geom := self.settings.geometry()) is not None:
            self.restoreGeometry(geom)
        screen_fit.fit_to_screen(self)  # 1280 x 800, or a size saved on a bigger screen, must not run off this one
        if (split := self.settings.splitter_state()) is not None:
            self.splitter.restoreState(split)
        self.theme_actions[self.theme.choice].setChecked(True)  # (the views followed the theme as they were built)
        self._show_status()
        # the first frame shows the first-launch offer; the Learn dock behind it comes right after (showEvent)
        self.learn_offer: LessonOffer | None = show_first_launch_offer(self)

    # ================================================================== tabs
    def _build_tabs(self) -> None:
        """Every tab, in the order the tab bar shows them: the one place that lists them. The Playground is built
        now (the first frame shows it); the others are placeholders whose hosts are made on first use
        (``app/shell/hosts.py``, in tab-bar order) and build their widgets when the tab is first opened."""
        self.tab = PlaygroundTab(self.playground, self.edits)
        self.tabs.addTab(self.tab, "Playground")
        self.hosts = add_hosts(self)  # app/shell/hosts.py: Training, Experiments, Lab, Model

    @property
    def closed(self) -> bool:
        """True once the window accepted its close (hidden, its hosts shutting down): late work changes nothing."""
        return self._closed

    multihead = property(lambda self: self.tab.multihead, doc="The Playground's Multi-head view (built on first use).")

    @property
    def learn(self) -> Learn:
        """The Learn dock, Help → Lessons, File → Open lesson… (app/learn/qt/dock.py), installed on first read."""
        if self._learn is None:
            from app.learn.qt import dock

            self._learn = dock.install(self)
        return self._learn

    # ================================================================== menus
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
        self._add(file_menu, "Save state as lesson ste&p…", self.save_state_as_step_dialog)
        file_menu.addSeparator()
        self._add(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        edit_menu = mb.addMenu("&Edit")
        self.undo_action = self.undo_stack.createUndoAction(self, "&Undo")
        self.undo_action.setShortcuts([QKeySequence("Ctrl+Z")])
        self.redo_action = self.undo_stack.createRedoAction(self, "&Redo")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit_menu.addAction(self.undo_action)
        edit_menu.addAction(self.redo_action)
        from app.playground.qt.copy_code import install_copy_as_code  # Edit → Copy as code

        self.copy_code_action = install_copy_as_code(self, edit_menu)
        self.preset_menu = mb.addMenu("&Presets")
        self.preset_menu.aboutToShow.connect(self._fill_presets)  # filled when first opened: see there
        view_menu = mb.addMenu("&View")
        group = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for theme in THEMES:
            act = QAction("Follow the &system theme" if theme == "system" else f"&{theme.title()} theme", self,
                          checkable=True)
            act.triggered.connect(lambda _c=False, t=theme: self.set_theme(t))
            group.addAction(act)
            view_menu.addAction(act)
            self.theme_actions[theme] = act
        self.presenter = presentation.install(self, file_menu, view_menu)  # Present (F11), zoom, pipeline figure
        help_menu = mb.addMenu("&Help")
        self._add(help_menu, "&How to use", lambda: QMessageBox.information(self, "How to use", HELP_TEXT),
                  QKeySequence.StandardKey.HelpContents)
        self._add(help_menu, "&About", lambda: QMessageBox.about(
            self, "About Attention Playground",
            f"Attention Playground {__version__}<br>See scaled dot-product attention work, step by step.<br>"
            "All numbers are computed by attention_core (numpy on CPU, torch on CUDA)."))

    def _fill_presets(self) -> None:
        """The presets by title, their stories as tips. Made when the menu first opens: a title and story come from
        building the preset, and the random one imports numpy.random (~25 ms of the launch otherwise)."""
        if self.preset_menu.actions():
            return
        for name in PRESET_NAMES:
            p = get_preset(name)
            act = self._add(self.preset_menu, p.title, partial(self.load_preset, name))
            act.setStatusTip(p.story)
            act.setToolTip(p.story)
        self.preset_menu.setToolTipsVisible(True)
        self.preset_menu.addSeparator()
        self._add(self.preset_menu, "Random (seed…)", self._random_preset_dialog)

    def save_state_as_step_dialog(self) -> None:  # a teacher's tool (app/learn/qt/step_dialog.py), dock or not
        from app.learn.qt.step_dialog import StepDialog
        StepDialog(self.playground, self).open()

    def _add(self, menu: QMenu, text: str, slot: Callable[[], Any], shortcut: Any = None) -> QAction:
        act = QAction(text, self)
        act.triggered.connect(lambda _c=False: slot())
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        menu.addAction(act)
        return act

    # ================================================================== edits that start from a menu
    def load_preset(self, name: str) -> bool:
        return self.edits.apply(f"Preset {name}", lambda m: m.load_preset(name))

    def _random_preset_dialog(self) -> None:
        seed, ok = QInputDialog.getInt(self, "Random preset", "Seed:", 0, 0, 2**31 - 1)
        if ok:
            self.edits.apply(f"Random preset (seed {seed})", lambda m: m.load_preset(random_preset(seed)))

    def _show_refusal(self, message: str) -> None:
        self.statusBar().showMessage(f"⚠ {message}", 8000)

    def _on_clean_changed(self, clean: bool) -> None:
        self.setWindowModified(not clean)

    def _show_status(self, *_: object) -> None:
        """The status line follows the current tab: the playground's result, or the training run's task and state."""
        bar = self.statusBar()  # (the same text again: no message, Qt would repaint the bar at once on every edit)
        if self.tabs.currentWidget() is self.tab and bar.currentMessage() != self.playground.status:
            bar.showMessage(self.playground.status)

    # ================================================================== theme
    def set_theme(self, theme: str, save: bool = True) -> None:
        """"light", "dark" or "system" (follow the desktop, ``self.theme`` tracks it); views follow ``follow_theme``."""
        self.theme.set_choice(theme)
        self.theme_actions[theme].setChecked(True)
        if save:
            self.settings.theme = theme

    # ================================================================== sessions
    def new_session(self) -> None:
        if not self._confirm_discard():
            return
        self.playground.restore(PlaygroundModel().snapshot())
        self.session_path = None
        self.undo_stack.clear()

    def open_session_dialog(self) -> None:
        if not self._confirm_discard():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open session", dialog_dir(),
                                              "Attention Playground session (*.json);;All files (*)")
        if path:
            remember_dialog_path(path)
            self.open_session(path)

    def open_session(self, path: str | Path) -> bool:
        """Load a session file; a bad file is refused with the reason and the current work is kept."""
        try:
            loaded = load_session(path)
        except SessionError as exc:
            QMessageBox.warning(self, "Cannot open session", f"{exc}\n\nYour current work is unchanged.")
            self.edits.refused.emit(str(exc))
            return False
        self.playground.restore(loaded)  # load_session checked that it restores
        self.session_path = Path(path)
        self.undo_stack.clear()
        self.settings.add_recent(str(path))
        self.settings.set_last_dir(str(path))
        self.edits.accepted.emit()
        return True

    def save_session(self) -> bool:
        return self.save_session_as() if self.session_path is None else self.save_session_to(self.session_path)

    def save_session_as(self) -> bool:
        start = str(Path(dialog_dir()) / "session.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save session", start, "Attention Playground session (*.json)")
        if not path:
            return False
        remember_dialog_path(path)
        return self.save_session_to(path if path.lower().endswith(".json") else path + ".json")

    def save_session_to(self, path: str | Path) -> bool:
        try:
            save_session(path, self.playground.snapshot())
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
            self._add(self.recent_menu, f, partial(self._open_recent, f))

    def _open_recent(self, path: str) -> bool:
        return self._confirm_discard() and self.open_session(path)

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
        self.theme.release()
        # the window goes at once; then no thread may outlive it. The start-up warm-up's first optimiser step
        # (torch imports torch._dynamo there, ~2-3 s) cannot be interrupted: waiting for it behind a hidden window
        # is no hang to the user (scripts/close_campaign.py measures both)
        self.hide()
        QApplication.sync()
        for host in self.hosts.hosts.values():  # the hosts made so far
            host.shutdown()
        from app.widgets.workers import wait_for_workers

        wait_for_workers(60)  # device detection, warm-up
        self.settings.save_window(self.saveGeometry(), self.saveState())
        self.settings.set_splitter_state(self.splitter.saveState())
        event.accept()

    # ================================================================== export
    def export_all_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export all steps to folder", dialog_dir())
        if folder:
            remember_dialog_path(folder, is_dir=True)
            written = self.export_all(folder)
            withheld = Concealment.of(self.playground).withheld_message(*STEPS)
            self.statusBar().showMessage(f"Exported {len(written)} files to {folder}"
                                         + (f" ({withheld}: not exported)" if withheld else ""), 8000)

    def export_all(self, folder: str | Path) -> list[Path]:
        """Every step the Steps view shows as PNG, SVG and CSV into ``folder`` (the optional steps that are on too;
        not the maps a lesson's question covers now)."""
        from app.playground.qt.exports import export_all_steps

        return export_all_steps(self.pipeline, self.playground, folder)

    # ================================================================== training tab, devices
    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802
        super().showEvent(event)
        if not self._shown_once:
            self._shown_once = True
            # the Learn menu entries and dock (the first-launch offer is up already): once the first frame is shown
            after_first_paint(self.tabs, lambda: self._closed or self.learn, 150)
            # after the first paint settles: listing GPUs imports torch (~2.5 s), in the background
            QTimer.singleShot(1000, self.start_device_detection)

    def start_device_detection(self) -> None:
        """List GPUs in the background now (1 s after the window first shows otherwise); not when switched off."""
        if not self.detect_devices or self._closed:
            return
        from app.widgets.workers import run_in_background
        from attention_core import available_devices

        def found(devices: list[str]) -> None:
            if not self._closed:
                self.playground.set_available_devices(devices)

        def failed(exc: Exception) -> None:  # no torch, a broken driver: stay on the CPU and say so
            if not self._closed:
                self.playground.device_detection_failed(str(exc).strip().splitlines()[0][:160] if str(exc).strip()
                                                        else type(exc).__name__)

        self.device_worker = run_in_background(available_devices, on_done=found, on_error=failed)

    # ================================================================== self-test
    def self_test(self, out_dir: Path) -> list[Path]:
        """Render the Playground's Steps and Multi-head views and the window to PNG in ``out_dir``, then the
        Training tab (``--self-test`` renders every view: ``app/shell/self_test.py``)."""
        from app.shell.self_test import render_playground

        written = render_playground(self, Path(out_dir))
        written += self.training_host.self_test(Path(out_dir))  # shown first: a tab never shown has no layout
        self.tabs.setCurrentIndex(0)
        return written
