"""Learn mode in the window: the Learn dock beside the tabs, Help → Lessons, File → Open lesson…, and
the one-line offer at first launch (dismissed for good with a setting).

Only wiring: lessons are data (resources/lessons/*.json, ``app.learn.model.schema``), walked by
``app.learn.model.engine.LessonRun`` over the window's own ``PlaygroundModel``; every change a lesson makes goes
through the window's ``UndoableEdits`` (so Undo walks it back), and the maps a predict step names are covered
(``app.learn.qt.cover.Cover``) until the learner answers. ``install`` is the window's one call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QEventLoop, QObject, QRect, Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMenu,
    QMessageBox,
    QWidget,
)

from app.learn.model.engine import LessonRun
from app.learn.model.files import JsonStore, Lesson, ProgressStore, bundled_lessons, load_lesson
from app.learn.model.library import LessonLibrary
from app.learn.model.schema import LessonFileError
from app.learn.model.walk import dry_run
from app.learn.qt.cover import Cover, cover_widgets
from app.learn.qt.offer import OFFER_KEY, LessonOffer, install_offer, offer_dismissed
from app.learn.qt.panel import LearnPanel
from app.playground.model.concealment import COVER_TEXT, SATURATION_REVEALS, STORY_REVEALS, Concealment
from app.playground.views.registry import VIEWS as PLAYGROUND_VIEWS
from app.widgets.qt_compat import insert_action
from app.widgets.screen_fit import fit_to_screen

if TYPE_CHECKING:
    from app.learn.qt.window import LearnWindow

WIDE_SCREEN = 1600
"""The screen width from which the Learn dock opens by itself at first launch (below it, the offer alone)."""
DOCK_ROOM = 1180
"""Below this screen width the dock floats at the right instead of docking: docked, the window (its playground in
the narrow layout) needs ~1130 px (measured at 1024×640; 1006 px at 1280×800 with the side columns)."""
CENTRAL_ROOM = 860
"""The width the window's tabs keep beside a docked Learn panel: narrower, the dock floats (and docks again once the
window is wide enough). Measured under Xvfb: with 887 px all five Steps maps show their numbers; with 773 px (a
1180 px window, the dock 401 px) the maps' titles ran into each other and the weights map lost its numbers."""
REDOCK_SLACK = 40
"""How much wider than needed the window must be before a dock floated for room docks again (no flip-flopping)."""


def install(window: LearnWindow, store: ProgressStore | None = None) -> Learn:
    """Add the Learn dock and its menu entries to ``window``; show it with the offer on a first launch."""
    return Learn(window, store)


def _menu(window: LearnWindow, title: str) -> QMenu | None:
    for act in window.menuBar().actions():
        if act.text().replace("&", "") == title and act.menu() is not None:
            return act.menu()  # type: ignore[return-value]
    return None


class Learn(QObject):
    def __init__(self, window: LearnWindow, store: ProgressStore | None = None) -> None:
        super().__init__(window.window())
        self.window = window
        self._window_widget: QObject = window.window()  # compared by identity: no Qt call once it is deleted
        if store is None:
            from app.common.paths import data_dir

            store = JsonStore(data_dir(create=False) / "lesson-progress.json")  # the folder: at the first save
        self.store = store
        self.library = LessonLibrary.default()  # "My lessons" and the files opened before: listed again
        self._covers: dict[int, Cover] = {}
        self.concealment = Concealment.of(window.playground)
        self.concealment.events.changed.connect(self._place_covers)
        self._panel: LearnPanel | None = None
        self._dock: QDockWidget | None = None
        self.floated_for_room = False
        """The dock floats because the window became too narrow for it (it docks again when there is room)."""
        self.lessons_action = QAction("&Lessons", window.window())
        self.lessons_action.setStatusTip("Guided lessons: look, do, predict, then see the real numbers.")
        self.lessons_action.triggered.connect(self.show)
        self.open_action = QAction("Open &lesson…", window.window())
        self.open_action.setStatusTip("Open a lesson file (JSON) written by a teacher.")
        self.open_action.triggered.connect(lambda _c=False: self.open_dialog())
        help_menu, file_menu = _menu(window, "Help"), _menu(window, "File")
        if help_menu is not None:
            insert_action(help_menu, help_menu.actions()[0] if help_menu.actions() else None, self.lessons_action)
        if file_menu is not None:
            acts = file_menu.actions()
            after = next((i for i, a in enumerate(acts) if a.text().replace("&", "").startswith("Open session")), 0)
            insert_action(file_menu, acts[after + 1] if after + 1 < len(acts) else None, self.open_action)
        self.offer = self._status_offer()
        if not self.offer_dismissed:
            # the one-line offer, always; the dock itself only where it fits beside the playground (a dock on a
            # small screen would push the window past the screen's edge)
            self.offer.show()
            screen = window.screen()
            if screen is not None and screen.availableGeometry().width() >= WIDE_SCREEN:
                self.panel.show_offer(True)
                self.show()

    # ------------------------------------------------------------------ the dock, built when first shown
    @property
    def panel(self) -> LearnPanel:
        if self._panel is None:
            self._build()
        assert self._panel is not None
        return self._panel

    @property
    def dock(self) -> QDockWidget:
        if self._dock is None:
            self._build()
        assert self._dock is not None
        return self._dock

    @property
    def built(self) -> bool:
        """Whether the dock exists yet (it is built when first shown: an unused one costs nothing)."""
        return self._dock is not None

    def _build(self) -> None:
        window = self.window
        try:
            lessons = bundled_lessons()
        except LessonFileError as exc:  # a broken install: say so, keep the app running
            lessons = []
            window.statusBar().showMessage(f"⚠ a bundled lesson is broken: {exc}", 10000)
        mine, notes = self.library.lessons()
        lessons = [x for x in lessons if x.id not in {m.id for m in mine}] + mine  # as File → Open lesson… does
        if notes:  # a remembered lesson file that vanished (or broke): dropped from the list, said once
            window.statusBar().showMessage("Lessons: " + "; ".join(notes), 15000)
        self._panel = panel = LearnPanel(lessons, self.make_run, self.store, self.cover)
        self._dock = dock = QDockWidget("Learn", window.window())
        dock.setObjectName("learnDock")
        dock.setWidget(panel)
        dock.hide()
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        dock.visibilityChanged.connect(self._on_visibility)
        dock.topLevelChanged.connect(self._on_top_level)
        window.installEventFilter(self)
        window.tab.pipeline.cellClicked.connect(panel.click_cell)
        panel.dismiss_button.clicked.connect(self.dismiss_offer)

    # ------------------------------------------------------------------ lessons
    def make_run(self, lesson: Lesson) -> LessonRun:
        w = self.window
        if w.tabs.currentWidget() is not w.tab:
            w.tabs.setCurrentWidget(w.tab)
        run = LessonRun(lesson, w.playground, w.edits.apply, self.store, training=w.training, wait=qt_wait,
                        lab=w.lab.model, inspect=w.inspect.model)
        run.events.step.connect(lambda: self._show_view(run))
        return run

    def _show_view(self, run: LessonRun) -> None:
        """Bring the view the step talks about to the front (the Steps maps, the Multi-head view …)."""
        w, tab = self.window, self.window.tab
        if run.view == "lab":  # the scaling lab: measured on this machine
            w.tabs.setCurrentWidget(w.lab.tab)
            return
        if run.view in ("model", "detect", "generate"):  # the Model tab (its Detect view: the head detectors)
            model_tab = w.inspect.show()
            if run.view != "model":
                model_tab.views.setCurrentWidget(model_tab.detect if run.view == "detect" else model_tab.generate)
            return
        if run.view in ("training", "ablate"):  # the Training tab (built on first use: it imports torch)
            panel = w.training_panel
            w.tabs.setCurrentWidget(panel)
            if run.view == "ablate":
                panel.tabs.setCurrentWidget(panel.ablation)
            return
        names = {v.name for v in PLAYGROUND_VIEWS}  # the views behind Steps, by the registry's names
        target = tab.pipeline if run.view == "steps" else getattr(tab, run.view) if run.view in names else None
        if target is not None:
            w.tabs.setCurrentWidget(tab)
            tab.view_tabs.setCurrentWidget(target)

    def open(self, lesson: Lesson, index: int | None = None) -> LessonRun:
        self.show()
        return self.panel.open(lesson, index)

    def open_file(self, path: str) -> Lesson | None:
        """Load, check (schema and a dry run) and open a lesson file; a bad one is refused with file, line and
        reason in a message box. A teacher's draft (fewer steps than a lesson has) opens to try, marked as a draft.
        Returns the lesson, or None when refused."""
        try:
            lesson = load_lesson(path, drafts=True)
            problems = [p.format(path) for p in dry_run(lesson)]
        except LessonFileError as exc:
            problems = [p.format(exc.file) for p in exc.problems]
        if problems:
            QMessageBox.warning(self.window.window(), "This lesson cannot be opened", "\n".join(problems[:12]))
            return None
        self.show()
        self.panel.add_lesson(lesson)
        self.library.remember(path)  # listed again after a restart
        return lesson

    def open_dialog(self) -> None:
        from app.widgets.settings import dialog_dir, remember_dialog_path

        path, _ = QFileDialog.getOpenFileName(self.window.window(), "Open lesson", dialog_dir(),
                                              "Lessons (*.json);;All files (*)")
        if path:
            remember_dialog_path(path)
            self.open_file(path)

    @property
    def run(self) -> LessonRun | None:
        return self._panel.run if self._panel is not None else None

    # ------------------------------------------------------------------ the dock and the offer
    def _status_offer(self) -> LessonOffer:
        """The window's offer (``app.learn.qt.offer``: put up with the first frame) or, for a window without one,
        a new one in its status bar; its buttons come here."""
        offer = getattr(self.window, "learn_offer", None)
        if not isinstance(offer, LessonOffer):
            offer = install_offer(self.window.statusBar(), self.take_offer, self.dismiss_offer)
        self.take_button, self.never_button = offer.take_button, offer.never_button
        return offer

    def take_offer(self) -> None:
        """"Take a guided lesson": the dock, without the offer."""
        self.offer.hide()
        self.show()

    def show(self) -> None:
        self.offer.hide()  # taken: the offer comes back next launch only if not dismissed
        dock = self.dock
        screen = self.window.screen()
        if screen is not None and not dock.isVisible() and not dock.isFloating():
            room = screen.availableGeometry()
            if room.width() < DOCK_ROOM:
                # docked, it would push the window past a small screen's edge: float it at the right instead
                self._float_at_right()
        dock.show()
        dock.raise_()
        # docked, it may have widened the window past the screen
        QTimer.singleShot(0, lambda: fit_to_screen(self.window.window()))
        QTimer.singleShot(0, self.fit_dock)

    def _float_at_right(self) -> None:
        dock, screen = self.dock, self.window.screen()
        dock.setFloating(True)
        if screen is not None:
            self.place_floating(screen.availableGeometry())

    def place_floating(self, room: QRect) -> None:
        """The floating panel at the right of ``room`` (a screen's free area), wholly inside it, frame included: a
        third of the width asked for less than the panel's minimum at 1024 px, which pushed it off."""
        dock = self.dock
        least = dock.minimumSizeHint().expandedTo(dock.minimumSize())
        frame = dock.frameGeometry()
        fw, fh = frame.width() - dock.width(), frame.height() - dock.height()  # 0 before the frame exists
        width = min(max(min(360, room.width() // 3), least.width()), room.width() - fw)
        height = min(max(min(640, room.height() - 80), least.height()), room.height() - fh)
        top = room.top() + max(min(40, room.height() - fh - height), 0)
        dock.setGeometry(room.right() + 1 - width, top, width, height)
        placed = dock.frameGeometry()  # then the frame's right and top edges on the room's
        dock.move(dock.x() + room.right() - placed.right(), dock.y() + top - placed.top())

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if obj is self._window_widget and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self.fit_dock)  # once the resize is laid out
        return False

    def fit_dock(self) -> None:
        """A window made narrower than its tabs plus the docked panel need floats the panel instead of squeezing
        the playground's maps; once the window is wide enough again, a panel floated for that reason docks back."""
        dock, w = self._dock, self.window
        if dock is None or not dock.isVisible():
            return
        if not dock.isFloating():
            if w.width() - dock.width() < CENTRAL_ROOM:
                self._float_at_right()
                self.floated_for_room = True
        elif self.floated_for_room and w.width() - dock.width() >= CENTRAL_ROOM + REDOCK_SLACK:
            dock.setFloating(False)
            self.floated_for_room = False

    def _on_top_level(self, floating: bool) -> None:
        if not floating:  # docked again (by the learner, or by ``fit_dock``)
            self.floated_for_room = False

    @property
    def offer_dismissed(self) -> bool:
        return offer_dismissed(self.window.settings.q)

    def dismiss_offer(self) -> None:
        self.window.settings.q.setValue(OFFER_KEY, "true")
        self.offer.hide()
        if self._panel is not None:
            self._panel.show_offer(False)
            if self.run is None:
                self.dock.hide()

    def _on_visibility(self, visible: bool) -> None:
        if not visible:
            self.cover(())
        elif self.run is not None:
            self.cover(self.run.covered)

    # ------------------------------------------------------------------ covering
    def cover(self, names: tuple[str, ...]) -> None:
        """Hide the named maps until the predict step is answered: the lesson declares them to the playground's
        ``Concealment`` (which every view asks: Vectors, Flow, 3D, Multi-head, exports …; ``_place_covers``
        follows it here) while the dock is open."""
        visible = self._dock is not None and self._dock.isVisible()
        self.concealment.hide(names if visible else ())
        self._place_covers()

    def _place_covers(self) -> None:
        """Cards over the hidden step maps, and over what would give them away (the story line, the explanation,
        the saturation read-out)."""
        tab, names = self.window.tab, tuple(self.concealment.hidden)
        targets: list[QWidget] = []
        if names:
            pipeline = tab.pipeline
            steps = list(pipeline.heatmaps)
            targets = [pipeline.boxes[steps.index(n)] for n in names if n in steps]
            if "multihead" in names:
                targets.append(tab.multihead)
            if self.concealment.hides(*STORY_REVEALS):
                targets += [tab.story_label, tab.explain_label]
            if self.concealment.hides(*SATURATION_REVEALS):
                targets.append(tab.controls.saturation)
        cover_widgets(targets, self._covers, COVER_TEXT)

    @property
    def covered_widgets(self) -> list[QWidget]:
        return [c.target for c in self._covers.values()]


def qt_wait(done: Callable[[], bool], timeout_s: float) -> bool:
    """Spin the Qt event loop (a training run's steps arrive through it) until ``done()`` or ``timeout_s``, or
    until a stop is asked for (Ctrl+C in ``lessons --run``: the command raises it between two steps)."""
    from app.common import stopping

    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline or stopping.pending():
            return False
        loop = QEventLoop()
        QTimer.singleShot(20, loop.quit)
        loop.exec()
    return True


def run_lines(learn: Learn, lesson: Lesson, right: bool) -> Any:
    """Drive ``lesson`` through the window's Learn panel (no auto-advance: the walk sets the pace): the records of
    ``app.learn.model.walk.step_records``."""
    from app.learn.model.walk import step_records

    learn.panel.auto_advance = False
    run = learn.open(lesson, 0)
    yield from step_records(run, right)
