"""The Steps view applies the model's colour ranges: ① and ② share one range, so the scale shows in colour, and
an edit that leaves the range alone leaves every unedited row's colours alone (checked on the colours
pyqtgraph paints: the image data through its levels and colour map)."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QApplication

from app.playground.model.colour_range import SHARED_STEPS
from app.widgets.heatmap.style import colormap
from attention_core import STEP_NAMES


def painted(hm) -> np.ndarray:
    """The RGB of every cell as the map paints it."""
    lo, hi = hm.image.getLevels()
    norm = np.clip((np.asarray(hm.image.image) - lo) / (hi - lo), 0, 1)
    return colormap(hm.kind()).map(norm.ravel(), mode="float")[:, :3].reshape(*norm.shape, 3)


def setup(window, scale=0.5):
    m = window.playground
    m.load_preset("cat-sat-mat")
    m.set_mode("qkv")  # Q edited directly: an edit of Q's row 0 changes row 0 of the scores only
    m.set_scale(scale)
    return m


def test_shared_range_colours_scores_and_scaled_differently(window):
    setup(window, 0.5)
    hm = window.pipeline.heatmaps
    assert window.tab.shared_range.isChecked()
    assert hm["scores"].levels() == hm["scaled"].levels() == hm["masked"].levels()
    a, b = painted(hm["scores"]), painted(hm["scaled"])
    assert np.abs(a[0, 0] - b[0, 0]).max() > 0.05  # the same cell, visibly different
    assert "shared" in hm["scores"].range_note()


def test_switching_the_shared_range_off_gives_each_map_its_own(window):
    m = setup(window, 0.5)
    window.tab.shared_range.setChecked(False)
    assert not m.shared_range
    hm = window.pipeline.heatmaps
    assert hm["scaled"].levels()[1] < hm["scores"].levels()[1]
    m.set_shared_range(True)  # the model is the truth: the box follows it
    assert window.tab.shared_range.isChecked()
    assert hm["scaled"].levels() == hm["scores"].levels()


def test_editing_row_0_keeps_row_2_colours_when_the_range_holds(window):
    m = setup(window, 0.5)
    hm = window.pipeline.heatmaps
    before = {name: painted(hm[name]) for name in ("scores", "scaled", "masked")}
    levels = hm["scores"].levels()
    m.set_cell("Q", 0, 1, 0.6)
    assert hm["scores"].levels() == levels
    for name, old in before.items():
        new = painted(hm[name])
        np.testing.assert_array_equal(new[1:], old[1:])  # rows 1 and 2: exactly the same colours
        assert not np.array_equal(new[0], old[0])  # row 0 did change
    assert "changed" not in hm["scores"].range_note()


def shown_shared_bars(window) -> list[str]:
    return [n for n in SHARED_STEPS if window.pipeline.heatmaps[n].colorbar.isVisible()]


def test_a_range_that_moves_is_said_on_the_colour_bar(window):
    m = setup(window, 0.5)
    m.set_cell("Q", 0, 0, 5.0)
    assert window.pipeline.heatmaps["scaled"].range_note().startswith("⚠ range changed")
    bars = shown_shared_bars(window)
    assert bars  # the shared bar is shown somewhere, and says the range moved
    for name in bars:
        axis = window.pipeline.heatmaps[name].colorbar.getAxis("left")
        assert axis.label.isVisible() and "changed" in axis.labelText


def test_a_shared_range_shows_its_colour_bar_once_per_row(window):
    setup(window, 0.5)
    pipe = window.pipeline
    for width in (1000, 1900):  # 3 + 2 (or 2 + 2 + 1) and one row
        window.resize(width, 800)
        QApplication.processEvents()
        rows = [list(STEP_NAMES[i:i + pipe.columns]) for i in range(0, 5, pipe.columns)]
        for row in rows:
            sharers = [n for n in row if n in SHARED_STEPS]
            shown = [n for n in sharers if pipe.heatmaps[n].colorbar.isVisible()]
            assert shown == sharers[-1:]  # once, on the last of them
        for name in ("weights", "output"):
            assert pipe.heatmaps[name].colorbar.isVisible()
    window.tab.shared_range.setChecked(False)  # own ranges: every map needs its own bar again
    assert all(pipe.heatmaps[n].colorbar.isVisible() for n in STEP_NAMES)


def test_an_exported_map_keeps_the_shared_range(window, tmp_path, monkeypatch):
    setup(window, 0.5)
    seen = {}

    def capture(target, values, rows, cols, title, **kw):
        seen[target.name] = kw
        return title

    monkeypatch.setattr("app.widgets.heatmap.file.write_heatmap_image", capture)
    for name in ("scores", "scaled"):
        window.pipeline.heatmaps[name].export(tmp_path / f"{name}.png")
    levels = window.playground.colours.levels
    assert seen["scores.png"]["levels"] == seen["scaled.png"]["levels"] == levels["scores"]
    assert "shared" in seen["scaled.png"]["colorbar_label"]


def test_the_shared_range_choice_is_remembered(window, qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from app import create_main_window

    window.tab.shared_range.setChecked(False)
    assert window.settings.shared_range is False
    again = create_main_window(settings=window.settings.q)  # the next start, same settings file
    again.confirm_on_close = False
    qtbot.addWidget(again)
    assert not again.playground.shared_range and not again.tab.shared_range.isChecked()
    hm = again.pipeline.heatmaps
    assert hm["scaled"].levels() != hm["scores"].levels()  # each its own range, as chosen
    fresh = create_main_window(settings=QSettings(str(tmp_path / "fresh.ini"), QSettings.Format.IniFormat))
    fresh.confirm_on_close = False
    qtbot.addWidget(fresh)
    assert fresh.playground.shared_range  # the default


def test_too_small_notes_follow_the_colour_bars_coming_and_going(window, qtbot):
    """Switching the shared range gives ① and ② their colour bars back (narrower cells): the "too small for
    numbers" notes must describe the cells as they are drawn afterwards, not as they were."""
    from app.playground.qt.step_arrows import SMALL_NOTE, numbers_fit

    m = window.playground
    m.set_mode("projection", "cross")
    m.set_dim("Lk", 5)
    window.resize(1024, 640)
    qtbot.waitUntil(lambda: window.width() == 1024, timeout=2000)
    pipe = window.pipeline
    def notes_describe_the_cells() -> None:
        for name, hm in pipe.heatmaps.items():
            fits = numbers_fit(hm)
            assert (name in pipe.small) == (not fits)
            assert (SMALL_NOTE in pipe.captions[name].text()) == (not fits)

    for shared in (False, True, False):
        m.set_shared_range(shared)
        # laid out, then the notes: at once on a quiet machine (~150 ms), later under a neighbour's load
        qtbot.waitUntil(notes_describe_the_cells, timeout=3000)
