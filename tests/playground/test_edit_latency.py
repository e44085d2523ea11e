"""An edit repaints what it changed and lays nothing out again (edit latency within a frame).

The first versions relaid out the whole window on most keystrokes: the story line, "Last compute" and the saturation
texts change with the numbers, a new ``QLabel`` text asks for a new layout, the request climbed to the window's tab
widget, and that repainted all of itself. The smallest matrix was the slowest to edit
(benchmarks/bench_gui_edit.py). These tests count the layout requests an edit causes and check that the texts still
say the numbers of the state now, and that a text that does need more room still gets it."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication
from qt_settle import settled

from attention_core.presets import random_preset


class LayoutRequests(QObject):
    """Counts the layout requests each widget receives while installed on the application."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[QObject] = []

    def eventFilter(self, watched, event):  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.LayoutRequest:
            self.seen.append(watched)
        return False


def settle(qtbot) -> None:
    for _ in range(5):
        QApplication.processEvents()
    settled(qtbot)


def edit_small_matrix(window, qtbot):
    """A 3 x 4 preset, edited once: its story is now the "edited" one (another text, maybe another height)."""
    window.edits.apply("preset", lambda s: s.load_preset(random_preset(1, n_tokens=3, d_model=4)))
    window.edits.apply("mode", lambda s: s.set_mode("qkv"))
    window.edits.set_cell("Q", 0, 0, float(window.playground.state.matrices["Q"][0, 0]) + 0.1)
    # the window's background look for devices (it fills the Device box once done) is not an edit: let it finish
    def devices_known():
        worker = getattr(window, "device_worker", None)
        return not window.detect_devices or (worker is not None and not worker.is_running)

    qtbot.waitUntil(devices_known, timeout=30_000)
    settle(qtbot)


def test_edits_that_change_only_numbers_lay_nothing_out(window, qtbot):
    edit_small_matrix(window, qtbot)
    tab, controls = window.tab, window.controls
    counter = LayoutRequests()
    stories, times, saturations = set(), set(), set()
    QApplication.instance().installEventFilter(counter)
    try:
        for n in range(12):
            i, j = n % 3, (n * 3) % 4
            value = float(window.playground.state.matrices["Q"][i, j]) + (0.3 if n % 2 == 0 else -0.5)
            window.edits.set_cell("Q", i, j, value)
            settle(qtbot)
            # every text says the state now
            assert tab.story_label.text() == window.playground.story
            assert controls.saturation.text() == window.playground.saturation
            stories.add(tab.story_label.text())
            times.add(controls.time_label.text())
            saturations.add(controls.saturation.text())
    finally:
        QApplication.instance().removeEventFilter(counter)
    assert len(stories) > 3 and len(times) > 3 and len(saturations) > 3  # the texts did change
    climbed = [w for w in counter.seen if w in (window, window.tabs, tab, tab.view_tabs, controls)]
    first = [f"{type(w).__name__}:{w.objectName()}" for w in counter.seen[:4]]
    assert climbed == [], f"{len(climbed)} layout requests reached {sorted({type(w).__name__ for w in climbed})}; " \
                          f"the first went to {first}"


def test_a_story_that_needs_another_line_still_gets_it(window, qtbot):
    edit_small_matrix(window, qtbot)
    label = window.tab.story_label
    label.setText("short")
    settle(qtbot)
    one_line = label.height()
    assert one_line == label.heightForWidth(label.width())
    label.setText(" ".join(["a long story that wraps"] * 40))
    settle(qtbot)
    assert label.height() > one_line and label.height() >= label.heightForWidth(label.width())
    label.setText("short")
    settle(qtbot)
    assert label.height() == one_line


def test_a_longer_time_still_fits(window, qtbot):
    edit_small_matrix(window, qtbot)
    label = window.controls.time_label
    label.setText("123456789 µs on cuda:0 (a long device name)")
    settle(qtbot)
    assert label.width() >= label.sizeHint().width()


def test_a_hidden_story_takes_no_room(window, qtbot):
    """The story line is hidden when there is no story: its box goes with it (no empty line above the maps), and
    comes back with the next story."""
    edit_small_matrix(window, qtbot)
    label = window.tab.story_label
    box = label.parentWidget()
    label.setVisible(False)
    settle(qtbot)
    assert box.isHidden()
    label.setVisible(True)
    settle(qtbot)
    assert box.isVisible() and label.isVisible() and label.height() == label.heightForWidth(label.width())
