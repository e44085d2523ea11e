"""Presentation mode and text zoom: the window as a teacher shows it to a room.

- Zoom (View → Zoom in / out / Actual size, Ctrl+= / Ctrl+- / Ctrl+0) scales the window's font, which every widget
  and every heatmap's labels and numbers follow; it is remembered (``Settings.zoom``), because the projector is
  there again next lesson. While presenting, zooming in stops (with a word in the status bar) where a map on the
  screen would get cells too small for its numbers at the new size: the words around the maps grow, the maps must
  not give way. Outside presentation mode the zoom is for reading the window and always goes on (a map too small
  for its numbers says so and shows them on hover).
- A map's numbers, token labels and axis titles also grow with its cells (``app.widgets.heatmap``): a 3 × 3 map
  alone on a 1920 × 1080 projector has ~50 px digits.
- Present (View → Present, F11): full screen, fonts a further ``PRESENT_BOOST`` larger, the side panels (inputs,
  controls, the training set-up) hidden; Esc or F11 returns to the layout as it was.
- Double-click a map: it is shown alone over the whole tab area (``SoloView``); ← / → step through the maps of its
  view in reading order (① scores → ② scaled → ③ masked → ④ weights → ⑤ output on the Steps tab); Esc or a
  double-click returns. It mirrors the view's map, so an undo while it is shown redraws it.

Only wiring and layout: the window's models and views are used as they are. ``install`` is the window's one call.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QSignalBlocker, Qt
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QDockWidget, QLabel, QMenu, QVBoxLayout, QWidget

from app.playground.qt.exports import export_pipeline_dialog, install_playground_exports
from app.widgets.heatmap.view import HeatmapWidget
from app.widgets.qt_compat import insert_action
from app.widgets.theme import style_sheet
from app.widgets.window_api import HostWindow

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenuBar

    from app.playground.model.playground import PlaygroundModel
    from app.playground.qt.pipeline import PipelineView
    from app.playground.tab import PlaygroundTab
    from app.playground.views.multihead.view import MultiHeadView
    from app.training.qt.host import TrainingHost

ZOOM_STEP = 1.15
PRESENT_BOOST = 1.3
"""Presentation mode's fonts relative to the zoom: the back row of a classroom."""
SOLO_HINT = "← / → previous / next map · Esc or double-click returns"
ZOOM_STOP = "Zoom stops here: the maps would get too small for their numbers"


class PresenterWindow(HostWindow, Protocol):
    """What presentation mode and the zoom use of the main window: the Playground's tab and maps (hidden columns,
    the solo map), the Training tab's set-up column once built, and the window's own full-screen and font calls."""

    playground: PlaygroundModel
    tab: PlaygroundTab
    pipeline: PipelineView
    export_pipeline_action: QAction

    @property
    def multihead(self) -> MultiHeadView: ...

    @property
    def training_host(self) -> TrainingHost: ...

    def menuBar(self) -> QMenuBar: ...  # noqa: N802 (Qt API)

    def centralWidget(self) -> QWidget | None: ...  # noqa: N802

    def addAction(self, action: QAction, /) -> None: ...  # noqa: N802

    def isFullScreen(self) -> bool: ...  # noqa: N802

    def isMaximized(self) -> bool: ...  # noqa: N802

    def showFullScreen(self) -> None: ...  # noqa: N802

    def showMaximized(self) -> None: ...  # noqa: N802

    def showNormal(self) -> None: ...  # noqa: N802


def install(window: PresenterWindow, file_menu: QMenu, view_menu: QMenu) -> Presenter:
    """Add File → Export pipeline figure… and the View menu's Present and zoom actions; give the Steps maps their
    export context; apply the remembered zoom. Returns the ``Presenter`` (the window keeps it)."""
    act = QAction("Export &pipeline figure…", window.window())
    act.setStatusTip("The five steps with Q, K, V and the operation on each arrow, as one PNG, SVG or PDF.")
    act.triggered.connect(lambda _c=False: export_pipeline_dialog(window))
    actions = file_menu.actions()  # right after "Export all steps…"
    after = next((i for i, a in enumerate(actions) if "Export all" in a.text()), len(actions) - 1)
    insert_action(file_menu, actions[after + 1] if after + 1 < len(actions) else None, act)
    window.export_pipeline_action = act
    install_playground_exports(window.pipeline, window.playground)
    remember_shared_range(window)
    return Presenter(window, view_menu)


def remember_shared_range(window: PresenterWindow) -> None:
    """The "same colour range for ① ② ③" choice is a way of looking, kept in the settings: applied at start,
    saved whenever the model's choice changes (the check box, a script, anything)."""
    settings, model = window.settings, window.playground
    model.set_shared_range(settings.shared_range)

    def save(*_: object) -> None:
        if settings.shared_range != model.shared_range:
            settings.shared_range = model.shared_range

    model.events.colours.connect(save)


class Presenter(QObject):
    """Zoom, presentation mode and the solo map of one window (see the module docstring)."""

    def __init__(self, window: PresenterWindow, view_menu: QMenu) -> None:
        super().__init__(window.window())
        self.window = window
        self.presenting = False
        self._hidden: list[QWidget] = []
        self._was = "normal"
        self._columns: tuple[bool, Any] = (False, None)
        self.solo: SoloView | None = None
        view_menu.addSeparator()
        self.present_action = self._action(view_menu, "&Present", "F11", self.set_presenting, checkable=True)
        self.zoom_in_action = self._action(view_menu, "Zoom &in", ["Ctrl+=", "Ctrl++"], lambda: self.zoom_by(1))
        self.zoom_out_action = self._action(view_menu, "Zoom &out", "Ctrl+-", lambda: self.zoom_by(-1))
        self.zoom_reset_action = self._action(view_menu, "&Actual size", "Ctrl+0", lambda: self.set_zoom(1.0))
        # Esc leaves the solo map, then presentation mode; enabled only then, so it never steals Esc elsewhere
        self.escape_action = self._action(None, "Leave presentation", "Esc", self.escape)
        self.escape_action.setEnabled(False)
        for name, hm in window.pipeline.heatmaps.items():
            hm.doubleClicked.connect(lambda n=name: self.show_alone("steps", n))
        window.tab.when_built("multihead", lambda view: view.mapDoubleClicked.connect(  # built on first use
            lambda n: self.show_alone("multihead", n)))
        window.playground.events.result.connect(self._refresh_solo)
        self.apply_zoom()

    def _action(self, menu: QMenu | None, text: str, keys: Any, slot: Any, checkable: bool = False) -> QAction:
        act = QAction(text, self.window.window())
        act.setCheckable(checkable)
        act.setShortcuts([QKeySequence(k) for k in ([keys] if isinstance(keys, str) else keys)])
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if checkable:
            act.toggled.connect(slot)
        else:
            act.triggered.connect(lambda _c=False: slot())
        if menu is not None:
            menu.addAction(act)
        self.window.addAction(act)  # its shortcut works whatever has the focus (and with the menu bar hidden)
        return act

    # ---------------------------------------------------------------- zoom
    @property
    def zoom(self) -> float:
        return self.window.settings.zoom

    def set_zoom(self, zoom: float) -> None:
        self.window.settings.zoom = zoom  # clamped there
        self.apply_zoom()

    def zoom_by(self, steps: int) -> None:
        """Zoom ``steps`` steps in (or out). While presenting, a step in that would leave a shown map's cells too
        small for its numbers at the new size (the words around the maps take their room) is taken back:
        ``ZOOM_STOP``."""
        old = self.zoom
        holding = self._maps_holding_numbers() if steps > 0 and self.presenting else set()
        self.set_zoom(old * ZOOM_STEP ** steps)
        if holding:
            for _ in range(4):  # the fonts are set; let the layouts (the window's, then the maps') follow
                QCoreApplication.sendPostedEvents()
            if holding - self._maps_holding_numbers():
                self.set_zoom(old)
                self.window.statusBar().showMessage(ZOOM_STOP, 5000)

    def _maps_holding_numbers(self) -> set[HeatmapWidget]:
        """The maps on the screen (only the solo one while it covers the others) that hold their numbers."""
        solo = self.solo.heatmap if self.solo is not None and self.solo.isVisible() else None
        every = self.window.window().findChildren(HeatmapWidget)
        shown = [solo] if solo is not None else [hm for hm in every if hm.isVisible()]
        return {hm for hm in shown if hm.overlay.numbers_at_full_size()}

    def factor(self) -> float:
        """The fonts' scale now: the zoom (× ``PRESENT_BOOST`` while presenting)."""
        return self.zoom * (PRESENT_BOOST if self.presenting else 1.0)

    def apply_zoom(self) -> None:
        """Scale the fonts of the tabs, the menu bar and the status bar. The theme's style sheet fixes the font
        sizes (``QWidget { font-size: 10pt }``), which overrides ``setFont``, so the zoom is a style sheet of its
        own on those three: the theme's font-size rules, scaled (the theme's colours stay the window's). Then the
        heatmaps lay out their labels again for the new size (their numbers are fitted to the cells when
        painted). At zoom 1 outside presentation mode the sheets are empty: the window is exactly as without."""
        f = self.factor()
        sheet = "" if abs(f - 1.0) < 1e-6 else zoomed_font_rules(style_sheet(False), f)
        w = self.window
        for widget in (w.centralWidget(), w.menuBar(), w.statusBar()):
            if widget is not None and widget.styleSheet() != sheet:
                widget.setStyleSheet(sheet)
        for hm in w.window().findChildren(HeatmapWidget):
            hm.refresh_labels()

    # ---------------------------------------------------------------- presentation mode
    def side_panels(self) -> list[QWidget]:
        """What presentation mode hides: the Playground's side columns in the layout in use (the Inputs | Controls
        tabs when narrow, the two columns when wide; never the maps' column), the Training tab's set-up column
        (once built) and any dock widget."""
        w = self.window
        panels: list[QWidget] = list(w.tab.side_columns())
        panels += self._other_panels()
        return panels

    def _other_panels(self) -> list[QWidget]:
        w = self.window
        panels: list[QWidget] = []
        panel = w.training_host.built  # None until the Training tab is first opened
        if panel is not None and (column := panel.splitter.widget(0)) is not None:
            panels.append(column)
        panels += list(w.window().findChildren(QDockWidget))
        return [p for p in panels if p is not None]

    def set_presenting(self, on: bool) -> None:
        on = bool(on)
        if on == self.presenting:
            return
        w = self.window
        self.presenting = on
        if on:
            self._was = "full" if w.isFullScreen() else "max" if w.isMaximized() else "normal"
            self._columns = w.tab.column_state()
            # the Playground's columns through its tab (they change with the layout); the others as they are
            self._hidden = [p for p in self._other_panels() if not p.isHidden()]
            for p in self._hidden:
                p.hide()
            w.tab.set_sides_hidden(True)
            w.showFullScreen()
        else:
            self.close_solo()
            # the fonts back at their size before the columns come back: under the presentation fonts a column
            # at its least width would be held at the larger least width they need
            self.apply_zoom()
            for p in self._hidden:
                p.show()
            self._hidden = []
            if self._was == "max":
                w.showMaximized()
            elif self._was == "normal":
                w.showNormal()
            w.tab.set_sides_hidden(False)
            w.tab.restore_columns(self._columns)  # the columns' widths as they were (now, or once back)
        with QSignalBlocker(self.present_action):
            self.present_action.setChecked(on)
        self._update_escape()
        self.apply_zoom()

    def escape(self) -> None:
        if self.solo is not None and self.solo.isVisible():
            self.close_solo()
        else:
            self.set_presenting(False)

    def _update_escape(self) -> None:
        self.escape_action.setEnabled(self.presenting or (self.solo is not None and self.solo.isVisible()))

    # ---------------------------------------------------------------- one map alone
    def _maps(self, view: str) -> dict[str, HeatmapWidget]:
        w = self.window
        return dict(w.pipeline.heatmaps) if view == "steps" else w.multihead.named_heatmaps()

    def show_alone(self, view: str, name: str) -> None:
        """Show map ``name`` of ``view`` ("steps" or "multihead") alone over the tab area."""
        if self.solo is None:
            self.solo = SoloView(self)
        self.solo.show_map(view, name)
        self._update_escape()

    def close_solo(self) -> None:
        if self.solo is not None and self.solo.isVisible():
            self.solo.hide()
            self.window.tabs.setFocus()
        self._update_escape()

    def step_solo(self, delta: int) -> None:
        """← / →: the previous or next map of the shown one's view, in reading order (stops at the ends)."""
        if self.solo is None or not self.solo.isVisible():
            return
        names = list(self._maps(self.solo.view))
        i = names.index(self.solo.name) if self.solo.name in names else 0
        self.solo.show_map(self.solo.view, names[min(max(i + delta, 0), len(names) - 1)])

    def _refresh_solo(self, *_: object) -> None:
        if self.solo is not None and self.solo.isVisible():
            view = self.window.pipeline if self.solo.view == "steps" else self.window.multihead
            view.redraw()  # it may be waiting for a frame to redraw: the solo copy needs its numbers now
            names = list(self._maps(self.solo.view))
            self.solo.show_map(self.solo.view, self.solo.name if self.solo.name in names else names[0])


_RULE = re.compile(r"([^{}]+)\{([^}]*)\}")
_SIZE = re.compile(r"font-size:\s*([\d.]+)pt")


def zoomed_font_rules(sheet: str, factor: float, default_pt: float = 10.0) -> str:
    """The font-size rules of a style sheet, each size × ``factor`` ("QWidget { font-size: 12pt; }" …); a sheet
    without any gives one rule for every widget from ``default_pt``."""
    sheet = re.sub(r"/\*.*?\*/", "", sheet, flags=re.S)
    rules = [f"{sel.strip()} {{ font-size: {float(m.group(1)) * factor:.2f}pt; }}"
             for sel, body in _RULE.findall(sheet) if (m := _SIZE.search(body))]
    return "\n".join(rules or [f"QWidget {{ font-size: {default_pt * factor:.2f}pt; }}"])


class SoloView(QWidget):
    """One map over the whole tab area: a ``HeatmapWidget`` showing a copy of a view's map, and a hint line."""

    def __init__(self, presenter: Presenter) -> None:
        host = presenter.window.tabs  # the window's central widget: the tab area
        super().__init__(host)
        self.host = host
        self.presenter = presenter
        self.view, self.name = "steps", ""
        self.setObjectName("soloView")
        self.setAutoFillBackground(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        self.heatmap = HeatmapWidget(context_menu=False)  # on screen: it follows the theme
        self.heatmap.set_show_numbers(True)
        self.heatmap.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.heatmap.doubleClicked.connect(presenter.close_solo)
        lay.addWidget(self.heatmap, 1)
        self.hint = QLabel(SOLO_HINT)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(self.hint)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.heatmap.installEventFilter(self)
        host.installEventFilter(self)
        self.setGeometry(host.rect())

    def show_map(self, view: str, name: str) -> None:
        src = self.presenter._maps(view)[name]
        self.view, self.name = view, name
        self.heatmap.set_data(src.values(), src.row_labels(), src.col_labels(), blocked=src.blocked(),
                              kind=src.kind(), title=src.title() or name)
        self.heatmap.set_column_groups(src.overlay.col_groups)
        self.setGeometry(self.host.rect())
        self.show()
        self.raise_()
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self.host and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.host.rect())
        elif watched is self.heatmap and isinstance(event, QKeyEvent):
            return self._key(event.key())
        return False

    def keyPressEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        if not self._key(event.key()):
            super().keyPressEvent(event)

    def _key(self, key: int) -> bool:
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_PageUp):
            self.presenter.step_solo(-1)
        elif key in (Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_PageDown, Qt.Key.Key_Space):
            self.presenter.step_solo(1)
        elif key == Qt.Key.Key_Escape:
            self.presenter.escape()
        else:
            return False
        return True
