"""The window's layout from a 1000 px screen up: its minimum width, nothing cut at the right edge, the step maps'
numbers shown (or a note that says to hover), and hovering never resizing the window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QSettings
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget
from qt_settle import settled

from app.playground.qt.pipeline import STEPS
from app.playground.qt.step_arrows import SMALL_NOTE, best_columns, numbers_fit

TIMEOUT_MS = 60_000


@pytest.fixture
def panel(panel, window, qtbot):
    """The Training tab (conftest's ``panel``) with the untrained model built (paused at step 0: the grid has
    maps)."""
    window.training.reset()
    qtbot.waitUntil(lambda: window.training.shown_snapshot is not None, timeout=TIMEOUT_MS)
    settled(qtbot, window)
    return panel


def resize(window, qtbot, w: int, h: int) -> None:
    window.resize(w, h)
    qtbot.waitUntil(lambda: window.width() == w and window.height() == h, timeout=2000)
    settled(qtbot, window)  # the pipeline's reflow and notes follow the resize on the next turn of the event loop


def cut_at_the_sides(window) -> list[str]:
    """Every shown widget whose rectangle reaches past the window's left or right edge."""
    cut = []
    for w in window.findChildren(QWidget):
        if not w.isVisible() or w.isWindow() or w.width() <= 0:
            continue
        left = w.mapTo(window, QPoint(0, 0)).x()
        if left < 0 or left + w.width() > window.width():
            cut.append(f"{type(w).__name__} {w.objectName()!r}: x {left}..{left + w.width()} of {window.width()}")
    return cut


def test_the_window_fits_a_1000_px_screen_with_both_tabs_built(window, panel):
    assert window.minimumSizeHint().width() <= 1000
    assert window.minimumSizeHint().height() <= 640


@pytest.mark.parametrize("size", [(1024, 640), (1280, 800), (1920, 1080)])
def test_playground_in_cross_mode_with_padding_is_not_cut(window, qtbot, size):
    m = window.playground
    window.edits.apply("cross", lambda m: m.set_mode("projection", "cross"))
    window.edits.apply("Lk", lambda m: m.set_dim("Lk", 5))
    window.edits.apply("padding", lambda m: m.set_mask("padding"))
    assert m.state.dims["Lk"] == 5 and m.mask_mode == "padding"
    resize(window, qtbot, *size)
    assert cut_at_the_sides(window) == []
    boxes = window.controls.padding_boxes
    assert len(boxes) == 5
    rects = [b.geometry().translated(b.parentWidget().mapTo(window, QPoint(0, 0))) for b in boxes]
    for i, a in enumerate(rects):  # the padding check boxes never overlap ("satsa", "✓ k3")
        assert all(not a.intersects(b) for b in rects[i + 1:]), [r.getRect() for r in rects]
        assert a.width() >= boxes[i].minimumSizeHint().width()
    for name, hm in window.pipeline.heatmaps.items():  # numbers, or a note that says to hover
        assert numbers_fit(hm) or SMALL_NOTE in window.pipeline.captions[name].text(), (name, size)


def test_1024x640_shows_every_step_maps_numbers(window, qtbot):
    window.load_preset("cat-sat-mat")
    resize(window, qtbot, 1024, 640)
    assert cut_at_the_sides(window) == []
    for name in STEPS:
        assert numbers_fit(window.pipeline.heatmaps[name]), name
        assert SMALL_NOTE not in window.pipeline.captions[name].text()


def test_a_map_too_small_for_numbers_says_so_and_drops_the_note_when_it_grows(window, qtbot):
    window.load_preset("lesson-random-4x8")
    window.edits.apply("Lq", lambda m: m.set_dim("Lq", 8))
    window.edits.apply("Lk", lambda m: m.set_dim("Lk", 8))
    resize(window, qtbot, 1024, 640)
    small = window.pipeline.small
    assert small and all(SMALL_NOTE in window.pipeline.captions[n].text() for n in small)
    assert all(numbers_fit(window.pipeline.heatmaps[n]) for n in set(STEPS) - small)
    resize(window, qtbot, 1920, 1080)
    window.splitter.setSizes([0, 2000] + [0] * (window.splitter.count() - 2))  # side columns collapsed
    settled(qtbot, window)
    assert window.pipeline.small < small
    assert all(SMALL_NOTE not in window.pipeline.captions[n].text() for n in set(STEPS) - window.pipeline.small)


def test_training_tab_at_1024x640_is_not_cut_and_its_grid_fits(window, panel, qtbot):
    panel.form.causal.setChecked(False)  # the no-causal note: the set-up column must stay whole
    settled(qtbot, window)
    for size in ((1024, 640), (1280, 800)):
        resize(window, qtbot, *size)
        assert cut_at_the_sides(window) == [], size
        view = panel.head_grid.graphics
        assert view.ci.sceneBoundingRect().right() <= view.viewport().width() + 1, size  # the 4th head is whole
        form = panel.form
        assert form.width() >= form.minimumSizeHint().width()  # "equence length" was cut at the left


def test_try_it_never_draws_its_explanation_over_its_map(window, panel, qtbot):
    tryit = panel.tryit
    panel.tabs.setCurrentWidget(tryit)
    tryit.input.setText(" ".join(map(str, window.training.probe or (2, 3, 4, 5, 6, 7))))
    tryit.submit()
    qtbot.waitUntil(lambda: tryit.heatmap.isVisible() and tryit.explain.text() != "", timeout=TIMEOUT_MS)
    for size in ((1024, 640), (1280, 800), (1920, 1080)):
        resize(window, qtbot, *size)
        assert tryit.explain.geometry().top() >= tryit.heatmap.geometry().bottom(), size
        assert tryit.heatmap.height() >= tryit.heatmap.minimumHeight()


def test_steps_reflow_with_the_space_they_get():
    extra = 60  # each map's arrow line and caption
    assert best_columns(600, 460, (3, 3), extra) == 3
    assert best_columns(1500, 330, (3, 3), extra) == 5  # wide and short: one row
    assert best_columns(660, 1000, (3, 3), extra) == 2  # tall and narrow: 2 + 2 + 1
    assert best_columns(200, 100, (3, 3), extra) == 3  # below every map's minimum: the 3 + 2 grid


def hover_everywhere(viewport: QWidget, step: int = 12) -> None:
    for y in range(2, viewport.height(), step):
        for x in range(2, viewport.width(), step):
            QTest.mouseMove(viewport, QPoint(x, y))


def test_hovering_every_heatmap_never_resizes_the_window(window, qtbot):
    window.load_preset("lesson-random-4x8")
    for size in ((1024, 640), (1280, 800)):
        resize(window, qtbot, *size)
        for name, hm in window.pipeline.heatmaps.items():
            hover_everywhere(hm.graphics.viewport())
            settled(qtbot, window)  # what the hovers set off (notes, read-outs) has run: the size is still ours
            assert (window.width(), window.height()) == size, name
    window.edits.apply("2 heads", lambda m: m.set_heads(2))
    window.view_tabs.setCurrentWidget(window.multihead)
    settled(qtbot, window)
    for hm in window.multihead.findChildren(type(window.pipeline.heatmaps["scores"])):
        if hm.isVisible():
            hover_everywhere(hm.graphics.viewport())
    settled(qtbot, window)
    assert (window.width(), window.height()) == (1280, 800)


def test_hovering_the_training_grid_never_resizes_the_window(window, panel, qtbot):
    for size in ((1280, 800), (1024, 640)):
        resize(window, qtbot, *size)
        hovered = []
        panel.head_grid.cellHovered.connect(lambda *a: hovered.append(a))
        view = panel.head_grid.graphics
        hover_everywhere(view.viewport(), 9)
        # the same points as pyqtgraph's scene reports them: QTest's synthetic moves stop reaching the scene once an
        # earlier test in the process has moved the mouse (offscreen; failed once so in the full suite, as
        # tests/playground/views/test_vector_view.py found), and what is checked is the grid's handling of the moves
        for y in range(2, view.height(), 9):
            for x in range(2, view.width(), 9):
                view.scene().sigMouseMoved.emit(view.mapToScene(QPoint(x, y)))
        settled(qtbot, window)
        assert any(a[2] >= 0 for a in hovered), "the mouse never reached a cell"
        assert (window.width(), window.height()) == size


def test_side_columns_collapse_and_are_remembered(window, panel, qtbot, tmp_path):
    window.splitter.setSizes([0, 1000, 250])
    panel.splitter.setSizes([0, 1200])
    panel.main_splitter.setSizes([1000, 0])
    window.close()
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    from app import create_main_window

    again = create_main_window(settings=settings)
    again.confirm_on_close = False
    qtbot.addWidget(again)
    again.resize(1280, 800)
    again.show()
    qtbot.waitExposed(again)
    p = again.training_panel
    again.tabs.setCurrentWidget(p)
    settled(qtbot, again)
    assert again.splitter.sizes()[0] == 0 and again.splitter.sizes()[2] > 0
    assert p.splitter.sizes()[0] == 0 and p.main_splitter.sizes()[1] == 0
    again.close()
