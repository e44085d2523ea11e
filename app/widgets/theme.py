"""The one place that knows the theme: its colours, the Qt palette and style sheet, and how a pyqtgraph view is
dressed in it. The window owns a ``ThemeController``; every view follows the theme one way, ``follow_theme``.

Why this shape:

- Colours come from a full ``QPalette`` on the Fusion style, which draws every control from it in both themes:
  spin-box arrows, check marks, tooltips, menus, and disabled controls in their disabled colours. The old dark
  style sheet recoloured ``QWidget`` wholesale, which switched Qt to style-sheet drawing: the arrows vanished and
  disabled buttons looked enabled. The style sheets in ``resources/styles/`` now only style named labels.
- pyqtgraph ignores both the palette and style sheets: ``style_view``, ``style_plot``, ``style_legend`` and
  ``style_label`` give its backgrounds, axes, titles, legends and text items the theme's colours.
- Rich text (coloured words in labels) takes its colours from ``ThemeColors``, so a colour that reads on white
  (dark red) is swapped for one that reads on the dark background (light red), never hard-coded per widget.
- The theme is the application's (its palette is): a view that draws colours of its own calls
  ``follow_theme(self._restyle)`` once, at the end of its ``__init__``; ``_restyle(colors)`` runs then and after every
  change, until the view is deleted. Nobody passes the theme down (no ``set_dark`` chain through the tabs), so a
  view built late (a lazy tab, a lesson's cover) is dressed like the rest. A widget made for a file (an export,
  always light) is given ``dark=False`` and follows nothing.
- "system" follows Qt's colour-scheme hint (``QStyleHints.colorScheme``) and its ``colorSchemeChanged`` signal;
  an unknown scheme (no desktop theme, offscreen) is light.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from app.common.resources import read_style, resource_path
from app.widgets.settings import THEMES

__all__ = ["ThemeColors", "LIGHT", "DARK", "colors_for", "span", "resolve_dark", "system_scheme", "qpalette",
           "style_sheet", "apply_to_application", "ThemeController", "style_view", "style_plot", "style_label",
           "style_legend", "follow_theme", "current_colors"]

AXES = ("left", "bottom", "right", "top")


@dataclass(frozen=True)
class ThemeColors:
    """Every colour the app draws with outside the colour maps (``#rrggbb`` strings)."""

    dark: bool
    # widgets (the QPalette)
    window: str
    base: str
    alt_base: str
    button: str
    text: str
    muted: str  # secondary text: captions, "expected …"
    faint: str  # placeholders: the "·" of tokens not generated yet
    disabled: str  # text of disabled controls
    highlight: str
    # pyqtgraph views
    plot_bg: str
    plot_fg: str  # axes, ticks, grid
    legend_bg: tuple[int, int, int, int]
    spark_bg: str
    # meanings (a colour-blind safe set: blue and orange carry the data, green / red only back up words)
    good: str
    bad: str
    warn: str
    blue: str  # focus, test curves
    orange: str  # reversal score, sequence accuracy
    grey: str  # train-batch curves
    magenta: str  # the shown step (cursor), mirrored inputs
    ideal: str  # the ideal anti-diagonal markers, the strongest key
    goal: str  # the 99 % line


LIGHT = ThemeColors(
    dark=False, window="#efefef", base="#ffffff", alt_base="#f5f5f5", button="#e8e8e8", text="#111111",
    muted="#555555", faint="#a8a8a8", disabled="#9c9c9c", highlight="#2f6fc0",
    plot_bg="#ffffff", plot_fg="#333333", legend_bg=(255, 255, 255, 215), spark_bg="#f4f4f4",
    good="#1a7f37", bad="#c00000", warn="#a35f00", blue="#1b6ac9", orange="#d95f02", grey="#808080",
    magenta="#c000a0", ideal="#0090e0", goal="#2a9d3a",
)
DARK = ThemeColors(
    dark=True, window="#26282c", base="#33363c", alt_base="#2d3035", button="#3a3d43", text="#e8e8e8",
    muted="#a9adb4", faint="#6c7078", disabled="#74777d", highlight="#3d7fd9",
    plot_bg="#1e1f22", plot_fg="#c4c7cc", legend_bg=(38, 40, 44, 220), spark_bg="#2b2d31",
    good="#56c271", bad="#ff6b81", warn="#f0a23b", blue="#5aa2ff", orange="#ff8f3f", grey="#a0a0a0",
    magenta="#ff5ad8", ideal="#3fb0ff", goal="#56c271",
)


def colors_for(dark: bool) -> ThemeColors:
    return DARK if dark else LIGHT


def span(text: str, color: str, bold: bool = False) -> str:
    """``text`` in ``color`` for a rich-text label."""
    tag = "b" if bold else "span"
    return f"<{tag} style='color:{color}'>{text}</{tag}>"


# ====================================================================== the one way a view follows the theme
_current: list[ThemeColors] = [LIGHT]
_followers: list[weakref.WeakMethod[Callable[[ThemeColors], None]]] = []


def current_colors() -> ThemeColors:
    """The application's theme now (light until a window applies one)."""
    return _current[0]


def follow_theme(restyle: Callable[[ThemeColors], None]) -> None:
    """``restyle`` (a bound method of a view) runs now with the theme's colours, then after every change of the
    application's theme, until its object is deleted (held weakly: following keeps nothing alive). The followers
    whose objects Python has freed are dropped here too, so a session that makes views by the thousand without
    ever switching the theme does not pile up dead references."""
    restyle(_current[0])
    _followers[:] = [ref for ref in _followers if ref() is not None]
    _followers.append(weakref.WeakMethod(restyle))


def _restyle_all(c: ThemeColors) -> None:
    """Every living follower, in the order they started following (a child before the view that holds it); one
    that starts following meanwhile (a view built by a restyle) was dressed in ``c`` already."""
    _current[0] = c
    gone = []
    for ref in list(_followers):
        method = ref()
        owner = getattr(method, "__self__", None)
        if method is None or (isinstance(owner, shiboken6.Shiboken.Object) and not shiboken6.isValid(owner)):
            gone.append(ref)
            continue
        method(c)
    for ref in gone:
        _followers.remove(ref)


# ====================================================================== resolving "system"
def system_scheme() -> Qt.ColorScheme:
    """The desktop's colour scheme as Qt reports it (Unknown without a platform theme)."""
    app = QGuiApplication.instance()
    return app.styleHints().colorScheme() if isinstance(app, QGuiApplication) else Qt.ColorScheme.Unknown


def resolve_dark(choice: str, scheme: Qt.ColorScheme | None = None) -> bool:
    """Whether ``choice`` ("light", "dark", "system") means the dark theme under ``scheme`` (default: now)."""
    if choice == "system":
        return (system_scheme() if scheme is None else scheme) == Qt.ColorScheme.Dark
    return choice == "dark"


# ====================================================================== Qt widgets
def qpalette(c: ThemeColors) -> QPalette:
    """A complete palette, with the Disabled group muted: that is what makes disabled controls look disabled."""
    pal = QPalette()
    roles = {
        QPalette.ColorRole.Window: c.window, QPalette.ColorRole.WindowText: c.text,
        QPalette.ColorRole.Base: c.base, QPalette.ColorRole.AlternateBase: c.alt_base,
        QPalette.ColorRole.Text: c.text, QPalette.ColorRole.Button: c.button,
        QPalette.ColorRole.ButtonText: c.text, QPalette.ColorRole.BrightText: "#ffffff",
        QPalette.ColorRole.Highlight: c.highlight, QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.ToolTipBase: c.alt_base if c.dark else "#ffffdc",
        QPalette.ColorRole.ToolTipText: c.text, QPalette.ColorRole.PlaceholderText: c.faint,
        QPalette.ColorRole.Link: c.blue, QPalette.ColorRole.LinkVisited: c.magenta,
    }
    for role, color in roles.items():
        pal.setColor(role, QColor(color))
    # the 3-D shades Fusion draws frames, arrows and slider grooves with
    base = QColor(c.button)
    shades = {QPalette.ColorRole.Light: base.lighter(150), QPalette.ColorRole.Midlight: base.lighter(115),
              QPalette.ColorRole.Mid: base.darker(130), QPalette.ColorRole.Dark: base.darker(160),
              QPalette.ColorRole.Shadow: QColor(0, 0, 0)}
    if c.dark:  # on a dark button the "dark" shade must still be lighter than the window to be seen
        shades[QPalette.ColorRole.Dark] = base.darker(125)
        shades[QPalette.ColorRole.Mid] = base.darker(110)
    for role, shade in shades.items():
        pal.setColor(role, shade)
    dis = QPalette.ColorGroup.Disabled
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        pal.setColor(dis, role, QColor(c.disabled))
    pal.setColor(dis, QPalette.ColorRole.Button, QColor(c.window))
    pal.setColor(dis, QPalette.ColorRole.Base, QColor(c.window))
    pal.setColor(dis, QPalette.ColorRole.Highlight, QColor(c.faint))
    return pal


def style_sheet(dark: bool) -> str:
    """The theme's style sheet (``resources/styles/``), its ``@styles/`` image paths made absolute (Qt resolves
    a relative ``url()`` against the working directory, not the sheet's folder)."""
    folder = resource_path("styles").as_posix()
    return read_style("dark" if dark else "light").replace("@styles/", folder + "/")


def apply_to_application(dark: bool) -> None:
    """Fusion style and the theme's palette for the whole application (dialogs, menus and tooltips too)."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    if app.style().name().lower() != "fusion":  # the native styles ignore a custom palette, in part
        app.setStyle("Fusion")
    app.setPalette(qpalette(colors_for(dark)))


class ThemeController(QObject):
    """Holds the user's choice, resolves "system", and applies the result to ``window`` and the application.

    ``changed(dark)`` is emitted whenever the effective theme is applied (the menus follow it); views follow the
    theme through ``follow_theme``."""

    changed = Signal(bool)

    def __init__(self, window: QWidget, choice: str = "system") -> None:
        super().__init__(window)
        self.window = window
        self.choice = choice if choice in THEMES else "system"
        self.dark = False
        app = QGuiApplication.instance()
        self._following = isinstance(app, QGuiApplication)
        # the application's palette before this window themed it: given back when the window closes
        self._previous = QPalette(app.palette()) if isinstance(app, QApplication) else None
        self._colors_before = current_colors()
        if isinstance(app, QGuiApplication):
            app.styleHints().colorSchemeChanged.connect(self.on_color_scheme_changed)

    def set_choice(self, choice: str) -> None:
        if choice not in THEMES:
            raise ValueError(f"theme must be one of {THEMES}, got {choice!r}")
        self.choice = choice
        self.apply(resolve_dark(choice))

    def on_color_scheme_changed(self, scheme: Qt.ColorScheme) -> None:
        """The desktop switched between light and dark: follow it when the choice is "system"."""
        if self.choice == "system":
            self.apply(resolve_dark("system", scheme))

    def apply(self, dark: bool) -> None:
        self.dark = dark
        apply_to_application(dark)
        sheet = style_sheet(dark)
        if isinstance(QApplication.instance(), QApplication) and self.window.styleSheet() != sheet:
            self.window.setStyleSheet(sheet)  # (the same sheet again would still re-polish every widget)
        if current_colors().dark != dark:
            _restyle_all(colors_for(dark))
        self.changed.emit(dark)

    def release(self) -> None:
        """The window is closing: stop following the desktop and give the application its palette back (a
        script or test that goes on with other widgets gets no dark palette from a closed window). Idempotent."""
        app = QGuiApplication.instance()
        if self._following and isinstance(app, QGuiApplication):
            self._following = False
            app.styleHints().colorSchemeChanged.disconnect(self.on_color_scheme_changed)
        if self._previous is not None and isinstance(app, QApplication):
            app.setPalette(self._previous)
            self._previous = None
            if current_colors() is not self._colors_before:
                _restyle_all(self._colors_before)  # the views still open follow the palette given back


# ====================================================================== pyqtgraph
def style_view(view: Any, c: ThemeColors) -> None:
    """The background of a ``pg.GraphicsView`` / ``GraphicsLayoutWidget``."""
    view.setBackground(c.plot_bg)


def style_plot(plot: Any, c: ThemeColors, *, title_color: str | None = None) -> None:
    """Axes (lines, ticks, tick labels, axis titles, grid) and title of a ``pg.PlotItem`` (a ``ColorBarItem``
    is one too)."""
    pen = pg.mkPen(c.plot_fg)
    for name in AXES:
        ax = plot.getAxis(name)
        ax.setPen(pen)
        ax.setTextPen(pen)  # also recolours the axis title (pyqtgraph keeps it in labelStyle)
    style_label(plot.titleLabel, title_color or c.text)


def style_label(label: Any, color: str) -> None:
    """Recolour a ``pg.LabelItem`` and redraw its current text (``setAttr`` alone waits for the next text)."""
    label.setAttr("color", color)
    label.setText(label.text)


def style_legend(legend: Any, c: ThemeColors) -> None:
    """A ``pg.LegendItem``'s box and every entry's text."""
    legend.setBrush(pg.mkBrush(*c.legend_bg))
    legend.setPen(pg.mkPen(c.plot_fg, width=0.5))
    legend.setLabelTextColor(c.text)
    for _sample, label in legend.items:
        label.setText(label.text)
