"""Themes on the real window (offscreen): light, dark and "follow the system", on both tabs.

What a learner sees is checked on pixels (``QWidget.grab``): every pyqtgraph view's background, the text of
disabled buttons. Text colours (pyqtgraph labels, axes, legends, coloured words in labels) are checked for
contrast against the background they are drawn on (WCAG contrast ratio). The colour maps are checked for what
their docstring claims: diverging around a white 0, lightness monotonic, and still two hues for a viewer with
red-green or blue-yellow colour blindness (Machado et al. 2009 simulation).
"""

from __future__ import annotations

import re

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from qt_settle import settled

from app.widgets.heatmap.style import colormap
from app.widgets.settings import Settings

TIMEOUT_MS = 60_000


# ---------------------------------------------------------------------------------------------------- colour maths
def luminance(c: QColor | str) -> float:
    """WCAG relative luminance of an opaque colour."""
    c = QColor(c)
    lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in (c.redF(), c.greenF(), c.blueF())]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: QColor | str, b: QColor | str) -> float:
    """WCAG contrast ratio, 1 (same) .. 21 (black on white)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def over(fg: QColor, bg: QColor) -> QColor:
    """``fg`` (with alpha) composited over the opaque ``bg``."""
    a = fg.alphaF()
    return QColor.fromRgbF(*(a * f + (1 - a) * b for f, b in zip((fg.redF(), fg.greenF(), fg.blueF()),
                                                                  (bg.redF(), bg.greenF(), bg.blueF()))))


def srgb_to_linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def linear_to_lab(lin: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of linear-RGB rows."""
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


# Machado, Oliveira & Fernandes (2009), severity 1.0, on linear RGB
CVD = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}


def lab_as_seen(rgb: np.ndarray, deficiency: str | None = None) -> np.ndarray:
    lin = srgb_to_linear(np.asarray(rgb, dtype=float))
    if deficiency is not None:
        lin = np.clip(lin @ CVD[deficiency].T, 0, 1)
    return linear_to_lab(lin)


def hex_rgb(*colors: str) -> np.ndarray:
    return np.array([[QColor(c).redF(), QColor(c).greenF(), QColor(c).blueF()] for c in colors])


def sign_split(rgb_of_t) -> float:  # type: ignore[no-untyped-def]
    """Weakest colour difference (ΔE76) between −v and +v on a diverging map, for v in 0.4..1 of the range and
    any kind of colour vision: how well the sign of a number can be read from its colour."""
    t = np.linspace(0.4, 1.0, 7)
    worst = np.inf
    for d in (None, *CVD):
        neg, pos = lab_as_seen(rgb_of_t(0.5 - t / 2), d), lab_as_seen(rgb_of_t(0.5 + t / 2), d)
        worst = min(worst, float(np.min(np.linalg.norm(neg - pos, axis=1))))
    return worst


# ---------------------------------------------------------------------------------------------------- window helpers
def background(view: pg.GraphicsView) -> QColor:
    """The plot background as drawn: the most common of the four corner pixels of a grab (no plot reaches the
    corners: titles, axes and colour bars leave them to the background)."""
    img = view.grab().toImage()
    w, h = img.width(), img.height()
    assert w > 20 and h > 20, f"{view!r} is not laid out ({w}x{h})"
    corners = [img.pixel(x, y) for x, y in ((2, 2), (w - 3, 2), (2, h - 3), (w - 3, h - 3))]
    return QColor.fromRgb(max(set(corners), key=corners.count))


def visible_views(window) -> list[pg.GraphicsView]:
    return [v for v in window.findChildren(pg.GraphicsView) if v.isVisible() and v.width() > 20]


def assert_views_dark(window, minimum: int) -> list[pg.GraphicsView]:
    views = visible_views(window)
    assert len(views) >= minimum, f"{len(views)} visible pyqtgraph views, expected >= {minimum}"
    for v in views:
        bg = background(v)
        assert luminance(bg) < 0.05, f"{type(v.parent()).__name__}: background {bg.name()} is not dark"
    return views


def text_colors(item) -> list[QColor]:  # type: ignore[no-untyped-def]
    """The colours a pg.LabelItem draws its text in: its own and those of coloured words in its HTML."""
    html = item.item.toHtml() if hasattr(item, "item") else ""
    found = [QColor(c) for c in re.findall(r"color:\s*(#[0-9a-fA-F]{6,8})", html)]
    return found or [QColor(item.opts.get("color") or "#969696")]


def assert_plot_text_readable(views: list[pg.GraphicsView], bg_name: str) -> int:
    """Every label, axis text and legend entry in these views has contrast against the background; returns how
    many were checked."""
    checked = 0
    for v in views:
        bg = background(v)
        assert bg.name() == bg_name, f"{type(v.parent()).__name__}: background {bg.name()} != {bg_name}"
        for item in v.scene().items():
            if not item.isVisible():
                continue
            if isinstance(item, pg.LegendItem):
                box = over(item.brush().color(), bg)
                for _sample, label in item.items:
                    for c in text_colors(label):
                        assert contrast(c, box) >= 4.5, f"legend {label.text!r}: {c.name()} on {box.name()}"
                        checked += 1
            elif isinstance(item, pg.LabelItem) and item.text.strip():
                for c in text_colors(item):
                    # coloured words (numbers under a map, an OFF title) may be large-text contrast (3:1)
                    assert contrast(c, bg) >= 3.0, f"label {item.text!r}: {c.name()} on {bg.name()}"
                    checked += 1
            elif isinstance(item, pg.AxisItem) and item.style.get("showValues", True):
                c = item.textPen().color()
                assert contrast(c, bg) >= 4.5, f"axis text {c.name()} on {bg.name()}"
                checked += 1
    return checked


def assert_rich_text_readable(label, minimum: float = 3.0) -> None:  # type: ignore[no-untyped-def]
    """A QLabel's own text colour and every colour in its rich text, against its background."""
    pal = label.palette()
    bg = pal.color(QPalette.ColorRole.Window)
    own = pal.color(QPalette.ColorRole.WindowText)
    assert contrast(own, bg) >= 4.5, f"{label.objectName()}: text {own.name()} on {bg.name()}"
    for c in re.findall(r"color:\s*(#[0-9a-fA-F]{6})", label.text()):
        assert contrast(c, bg) >= minimum, f"{label.objectName() or label.text()[:40]!r}: {c} on {bg.name()}"


def ink_contrast(button) -> float:  # type: ignore[no-untyped-def]
    """Contrast between a button's face (its most common colour) and the pixel of its label that stands out
    most, inside the frame."""
    img = button.grab().toImage()
    px = [QColor(img.pixel(x, y)) for x in range(4, img.width() - 4) for y in range(4, img.height() - 4)]
    names = [c.name() for c in px]
    face = QColor(max(set(names), key=names.count))
    return max(contrast(c, face) for c in px)


def wait_drawn(qtbot) -> None:
    settled(qtbot)  # the grid redraws at ~30 fps, the plots at ~6 per second: until none is waiting


# ---------------------------------------------------------------------------------------------------- tests
def test_dark_theme_darkens_every_plot_and_keeps_text_readable_on_both_tabs(window, panel, qtbot):
    s = window.training
    window.tabs.setCurrentIndex(0)
    window.set_theme("dark")
    settled(qtbot)
    dark_bg = QColor(window.pipeline.heatmaps["weights"].graphics.backgroundBrush().color()).name()
    steps = assert_views_dark(window, minimum=5)  # ① .. ⑤ at least
    assert assert_plot_text_readable(steps, dark_bg) > 20
    window.load_preset("lesson-random-4x8")
    window.controls.heads_spin.setValue(2)
    window.view_tabs.setCurrentWidget(window.multihead)
    settled(qtbot)
    assert_plot_text_readable(assert_views_dark(window, minimum=3), dark_bg)  # 2 heads + the concatenation
    window.view_tabs.setCurrentWidget(window.pipeline)

    window.tabs.setCurrentWidget(panel)
    panel.run_controls.reset_button.click()  # the untrained model at step 0
    qtbot.waitUntil(lambda: len(s.history) == 1, timeout=TIMEOUT_MS)
    wait_drawn(qtbot)
    grid = panel.head_grid.graphics
    untrained = assert_views_dark(window, minimum=2)  # the head grid and the curves
    assert grid in untrained and panel.plots.graphics in untrained
    assert_plot_text_readable(untrained, dark_bg)
    panel.run_controls.start_button.click()
    qtbot.waitUntil(lambda: s.run_state == "finished", timeout=TIMEOUT_MS)
    s.toggle_head(0, 1)  # an OFF head: its title in the theme's red
    panel.tryit.input.setText(" ".join(map(str, s.probe or ())))
    panel.tryit.submit()
    wait_drawn(qtbot)
    trained = assert_views_dark(window, minimum=3)  # + Try it's heatmap
    assert panel.tryit.heatmap.graphics in trained
    assert assert_plot_text_readable(trained, dark_bg) > 30
    # the coloured words of the Training tab's labels, on the dark window
    layer, head = 0, 0
    panel.heads._on_hover(layer, head, 2, 5)  # a future key: the "leak" note in the warning colour
    for label in (panel.heads.legend_label, panel.heads.hover_label, panel.heads.title_label,
                  panel.tryit.result_label, panel.tryit.explain, panel.status_label):
        assert_rich_text_readable(label)
    assert "future position" in panel.heads.hover_label.text()

    window.set_theme("light")  # and back: nothing stays dark
    settled(qtbot)
    for v in visible_views(window):
        assert luminance(background(v)) > 0.8, type(v.parent()).__name__
    assert_plot_text_readable(visible_views(window), "#ffffff")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_disabled_controls_look_disabled(window, panel, qtbot, theme):
    window.set_theme(theme)
    rc = panel.run_controls
    settled(qtbot)
    assert rc.start_button.isEnabled() and rc.step_button.isEnabled()
    assert not rc.pause_button.isEnabled() and not rc.stop_button.isEnabled()  # nothing runs
    enabled = min(ink_contrast(rc.start_button), ink_contrast(rc.step_button))
    disabled = max(ink_contrast(rc.pause_button), ink_contrast(rc.stop_button))
    assert enabled >= 4.5, f"{theme}: enabled label contrast {enabled:.1f}"
    assert disabled < 0.6 * enabled, f"{theme}: disabled {disabled:.1f} vs enabled {enabled:.1f}"
    # a disabled spin box's digits too (the form is disabled while a run goes)
    spin = panel.form.seq_len
    pal = spin.palette()
    on = pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Text)
    off = pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text)
    base = pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Base)
    assert contrast(off, base) < 0.6 * contrast(on, base)
    # spin-box arrows are drawn: the up-arrow area is not one flat colour
    img = spin.grab().toImage()
    arrow = {img.pixel(x, y) for x in range(img.width() - 14, img.width() - 3) for y in range(3, img.height() // 2)}
    assert len(arrow) > 3, f"{theme}: no arrow in the spin box"


def test_errors_in_dark_read_on_the_dark_window(window, panel, qtbot):
    window.set_theme("dark")
    assert not window.training.set_probe("not numbers")
    label = panel.probe_box.error_label
    qtbot.waitUntil(label.isVisible, timeout=2000)
    assert contrast(label.palette().color(QPalette.ColorRole.WindowText),
                    label.palette().color(QPalette.ColorRole.Window)) >= 4.5


def test_system_theme_follows_the_desktop(window, qtbot):
    window.set_theme("system")
    assert window.theme_actions["system"].isChecked() and window.settings.theme == "system"
    hm = window.pipeline.heatmaps["scores"].graphics
    # the desktop turns dark: Qt's signal, as the platform emits it
    QGuiApplication.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    settled(qtbot)
    assert window.theme.dark and luminance(background(hm)) < 0.05
    assert luminance(QGuiApplication.palette().color(QPalette.ColorRole.Window)) < 0.05
    window.theme.on_color_scheme_changed(Qt.ColorScheme.Light)
    settled(qtbot)
    assert not window.theme.dark and luminance(background(hm)) > 0.8
    window.set_theme("light")  # an explicit choice ignores the desktop
    window.theme.on_color_scheme_changed(Qt.ColorScheme.Dark)
    assert not window.theme.dark and luminance(background(hm)) > 0.8


def test_theme_choice_persists(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from app import create_main_window

    ini = str(tmp_path / "settings.ini")

    def open_window():  # type: ignore[no-untyped-def]
        w = create_main_window(settings=QSettings(ini, QSettings.Format.IniFormat))
        w.confirm_on_close = False
        qtbot.addWidget(w)
        return w

    assert Settings(QSettings(ini, QSettings.Format.IniFormat)).theme == "system"  # the default
    w = open_window()
    assert w.theme_actions["system"].isChecked()
    w.theme_actions["dark"].trigger()  # as the View menu does
    assert w.theme.dark
    w.close()
    # the closed window gave the application its palette back
    assert luminance(QGuiApplication.palette().color(QPalette.ColorRole.Window)) > 0.5
    assert Settings(QSettings(ini, QSettings.Format.IniFormat)).theme == "dark"
    w2 = open_window()
    assert w2.theme_actions["dark"].isChecked() and w2.theme.choice == "dark" and w2.theme.dark
    w2.theme_actions["system"].trigger()
    w2.close()
    assert Settings(QSettings(ini, QSettings.Format.IniFormat)).theme == "system"
    q = QSettings(ini, QSettings.Format.IniFormat)
    q.setValue("ui/theme", "purple")  # a damaged file
    assert Settings(q).theme == "system"
    with pytest.raises(ValueError):
        Settings(q).theme = "purple"


# ---------------------------------------------------------------------------------------------------- colour maps
def test_signed_map_diverges_around_white_zero_and_keeps_its_sign_for_colour_blind_eyes():
    cmap = colormap("signed")

    def rgb(t: np.ndarray) -> np.ndarray:
        return cmap.map(np.asarray(t, dtype=float), mode="float")[:, :3]

    lum, a, b = lab_as_seen(rgb(np.array([0.5])))[0]
    assert lum > 88 and np.hypot(a, b) < 6  # 0 is (near) white: light and without hue
    lightness = lab_as_seen(rgb(np.linspace(0, 1, 101)))[:, 0]
    left, right = lightness[:51], lightness[50:]
    assert np.all(np.diff(left) > 0) and np.all(np.diff(right) < 0)  # darker with |v|, both ways
    # perceptually uniform: equal steps in value are near-equal steps in lightness
    for half in (np.abs(np.diff(left)), np.abs(np.diff(right))):
        assert half.max() < 2.0 * half.mean()
    assert np.allclose(left, right[::-1], atol=6)  # ±v equally strong
    assert sign_split(rgb) > 40

    # the check can fail: a red-green diverging map loses the sign for red-green colour-blind eyes
    red_green = pg.ColorMap([0.0, 0.5, 1.0], [(0, 150, 0), (255, 255, 255), (220, 0, 0)])
    assert sign_split(lambda t: red_green.map(t, mode="float")[:, :3]) < 25


def test_weights_map_runs_one_way_in_lightness():
    rgb = colormap("weights").map(np.linspace(0, 1, 101), mode="float")[:, :3]
    lightness = lab_as_seen(rgb)[:, 0]
    assert lightness[0] > 95 and np.all(np.diff(lightness) < 0)  # 0 is white, more weight is darker
    for d in CVD:  # the order survives every kind of colour blindness
        assert np.all(np.diff(lab_as_seen(rgb, d)[:, 0]) < 0.5)


@pytest.mark.parametrize("dark", [False, True])
def test_theme_colours_pair_blue_and_orange_for_every_eye(dark):
    from app.widgets.theme import colors_for

    c = colors_for(dark)
    bg = c.plot_bg
    for name in ("text", "muted", "plot_fg"):
        assert contrast(getattr(c, name), bg) >= 4.5, name
    for name in ("good", "bad", "warn", "blue", "orange", "grey", "magenta", "ideal"):
        assert contrast(getattr(c, name), bg) >= 3.0, name
    for d in (None, *CVD):  # the two series colours (rev / focus, test / sequence) stay apart
        blue, orange = lab_as_seen(hex_rgb(c.blue, c.orange), d)
        assert np.linalg.norm(blue - orange) > 35, d
