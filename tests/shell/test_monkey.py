"""Window monkey test: a seeded random walk of real Qt events on the main window.

Typing into editors (numbers, garbage, huge and tiny values, unicode), Ctrl+Z / Ctrl+Y, tab switches, combo,
spin-box, slider and check-box changes, hovers and clicks on every heatmap, resizes down to the minimum size and
theme switches. Any uncaught exception or Qt warning fails the test (pytest-qt reports exceptions raised in Qt
slots; a message handler catches warnings). At the end the model and every view agree.

600 events on the day's seed in a normal run, 3,000 under ``CAMPAIGNS=full`` (scripts/campaigns.sh;
tests/campaign_size.py). Reproduce a failure: ``MONKEY_SEED=<seed> MONKEY_EVENTS=<n> pytest
tests/shell/test_monkey.py`` (the seed and the count are in the failure message and printed at the start, so an
exception that pytest-qt reports from a Qt slot shows them too).
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from campaign_size import SEED as DAYS_SEED
from campaign_size import size
from PySide6.QtCore import QEvent, QPointF, Qt, QtMsgType, qInstallMessageHandler
from PySide6.QtGui import QKeyEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractItemView, QApplication, QLineEdit

from app.playground.model.explain import EXPLAIN_HINT

EVENTS = int(os.environ.get("MONKEY_EVENTS") or size(600, 3000))
SEED = int(os.environ.get("MONKEY_SEED") or DAYS_SEED)
IGNORED_WARNINGS = ("propagateSizeHints",)  # the offscreen platform's own notice, not ours
TEXTS = ["0", "1", "-2.5", "3,25", "\u22121.5", "1e308", "1e-320", "-1e-9", "12345.678", "abc", "", "nan", "inf",
         "1e999", "🙂", "٣", "0x10", " 7 ", "--1", "1..2"]


def type_text(widget, text: str) -> None:
    """Real key events; QTest.keyClicks only knows ASCII, so other characters go as key events carrying text."""
    for ch in text:
        if ch.isascii():
            QTest.keyClicks(widget, ch)
        else:
            for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
                QApplication.sendEvent(widget, QKeyEvent(kind, 0, Qt.KeyboardModifier.NoModifier, ch))


class Monkey:
    def __init__(self, window, rng: random.Random) -> None:
        self.w, self.rng = window, rng
        self.counts: dict[str, int] = {}

    def visible_editors(self):
        return [ed for ed in self.w.editors.values() if ed.isVisible()]

    def visible_maps(self):
        maps = [hm for hm in self.w.pipeline.heatmaps.values() if hm.isVisible()]
        maps += [hm for hm in self.w.multihead.heatmaps() if hm.isVisible()]
        maps += [hm for hm in self.w.derived.values() if hm.isVisible()]
        return maps

    def act(self, n: int = -1) -> None:
        """Event ``n``: the first two rounds take every kind of event in turn (a short walk on an unlucky seed still
        types, scrubs, resizes and switches themes), then the seed draws them by their weights."""
        if 0 <= n < 2 * len(self.ACTIONS):
            name, fn = self.ACTIONS[n % len(self.ACTIONS)]
        else:
            name, fn = self.rng.choices(self.ACTIONS, weights=[w for _, _, w in self.ACTIONS_W])[0]
        self.counts[name] = self.counts.get(name, 0) + 1
        fn(self)

    def type_cell(self) -> None:
        eds = self.visible_editors()
        if not eds:
            return
        table = self.rng.choice(eds).table
        m = table.model()
        idx = m.index(self.rng.randrange(m.rowCount()), self.rng.randrange(m.columnCount()))
        table.setCurrentIndex(idx)
        table.edit(idx)
        editors = [e for e in table.viewport().findChildren(QLineEdit) if e.isVisible()]
        if not editors:
            return
        editor = editors[-1]
        editor.selectAll()
        type_text(editor, self.rng.choice(TEXTS))
        QTest.keyClick(editor, Qt.Key.Key_Return)
        for _ in range(20):
            if table.state() != QAbstractItemView.State.EditingState:
                break
            QApplication.processEvents()

    def scrub(self) -> None:
        eds = self.visible_editors()
        if eds:
            table = self.rng.choice(eds).table
            if not table.currentIndex().isValid():
                table.setCurrentIndex(table.model().index(0, 0))
            key = self.rng.choice([Qt.Key.Key_Up, Qt.Key.Key_Down])
            QTest.keyClick(table, key, Qt.KeyboardModifier.ControlModifier)

    def undo_redo(self) -> None:
        mods = Qt.KeyboardModifier.ControlModifier
        QTest.keyClick(self.w, self.rng.choice([Qt.Key.Key_Z, Qt.Key.Key_Y]), mods)

    def view_tab(self) -> None:
        tabs = self.w.view_tabs
        QTest.keyClick(tabs.tabBar(), self.rng.choice([Qt.Key.Key_Left, Qt.Key.Key_Right]))

    def combo(self) -> None:
        c = self.rng.choice([self.w.tab.inputs.mode_combo, self.w.controls.mask_combo])
        QTest.keyClick(c, self.rng.choice([Qt.Key.Key_Up, Qt.Key.Key_Down]))

    def spin(self) -> None:
        spins = [s for s in (*self.w.dim_spins.values(), self.w.controls.heads_spin) if s.isEnabled()]
        QTest.keyClick(self.rng.choice(spins), self.rng.choice([Qt.Key.Key_Up, Qt.Key.Key_Down]))

    def scale(self) -> None:
        c = self.w.controls
        if self.rng.random() < 0.5:
            QTest.mouseClick(self.rng.choice(list(c.scale_buttons.values())), Qt.MouseButton.LeftButton)
        elif c.slider.isEnabled():
            QTest.keyClick(c.slider, self.rng.choice([Qt.Key.Key_Right, Qt.Key.Key_Left, Qt.Key.Key_PageUp]))

    def padding(self) -> None:
        boxes = [b for b in self.w.controls.padding_boxes if b.isVisible()]
        if boxes:
            QTest.mouseClick(self.rng.choice(boxes), Qt.MouseButton.LeftButton)

    def tokens(self) -> None:
        edit = self.rng.choice([self.w.tab.inputs.query_tokens_edit, self.w.key_tokens_edit])
        if not edit.isEnabled():
            return
        edit.selectAll()
        words = self.rng.choice(["a b c", "x y", "é 🙂 z q", "", "one,two,three,four", "p q r s t"])
        type_text(edit, words)
        QTest.keyClick(edit, Qt.Key.Key_Return)

    def mouse(self, click: bool) -> None:
        maps = self.visible_maps()
        if not maps:
            return
        hm = self.rng.choice(maps)
        rows, cols = hm.values().shape if hm.values() is not None else (0, 0)
        if not rows or not cols:
            return
        r, c = self.rng.randrange(rows), self.rng.randrange(cols)
        vb = hm.plot.getViewBox()
        pos = hm.graphics.mapFromScene(vb.mapViewToScene(QPointF(c + 0.5, r + 0.5)))
        QTest.mouseMove(hm.graphics.viewport(), pos)
        if click:
            QTest.mouseClick(hm.graphics.viewport(), Qt.MouseButton.LeftButton, pos=pos)

    def resize(self) -> None:
        ms = self.w.minimumSizeHint()
        self.w.resize(self.rng.randint(ms.width(), 1700), self.rng.randint(ms.height(), 1100))

    def theme(self) -> None:
        self.w.theme_actions[self.rng.choice(["light", "dark"])].trigger()

    def preset(self) -> None:
        self.w.load_preset(self.rng.choice(["cat-sat-mat", "it-animal-street", "magnitude", "lesson-random-4x8"]))

    ACTIONS_W = [("type", type_cell, 30), ("scrub", scrub, 6), ("undo", undo_redo, 12), ("view", view_tab, 5),
                 ("combo", combo, 6), ("spin", spin, 8), ("scale", scale, 5), ("padding", padding, 3),
                 ("tokens", tokens, 3), ("hover", lambda s: s.mouse(False), 12),
                 ("click", lambda s: s.mouse(True), 6), ("resize", resize, 2), ("theme", theme, 1),
                 ("preset", preset, 1)]
    ACTIONS = [(n, f) for n, f, _ in ACTIONS_W]


def assert_views_agree(w) -> None:
    m = w.playground
    w.view_tabs.setCurrentWidget(w.pipeline)  # a view behind another tab catches up when it is shown
    QApplication.processEvents()
    for name, hm in w.pipeline.heatmaps.items():
        np.testing.assert_array_equal(hm.values(), getattr(m.result, name), err_msg=name)
    for name, ed in w.editors.items():
        assert ed.isVisible() == (name in m.state.matrix_names())
        if ed.isVisible():
            shown = np.array([[float(ed.model.data(ed.model.index(r, c), Qt.ItemDataRole.EditRole))
                               for c in range(ed.model.columnCount())] for r in range(ed.model.rowCount())])
            np.testing.assert_array_equal(shown, m.matrices[name])
    if m.mode == "projection":
        np.testing.assert_array_equal(w.derived["Q"].values(), m.computation.q)
    c = w.controls
    assert c.mask_combo.currentData() == m.mask_mode
    assert c.heads_spin.value() == m.num_heads
    assert c.scale_buttons[m.scale_mode].isChecked()
    assert [s.value() for s in w.dim_spins.values()] == [m.dims[d] for d in w.dim_spins]
    assert w.story_label.text() == m.story
    assert w.explain_label.text() == (m.explanation_html or EXPLAIN_HINT)
    if m.num_heads > 1:
        w.view_tabs.setCurrentWidget(w.multihead)
        np.testing.assert_array_equal(w.multihead.head_maps[0].values(), m.computation.heads.heads.weights[0])


@pytest.fixture
def warnings_fail():
    seen: list[str] = []

    def handler(kind, _context, message):
        if kind in (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg) and \
                not any(s in message for s in IGNORED_WARNINGS):
            seen.append(message)

    previous = qInstallMessageHandler(handler)
    yield seen
    qInstallMessageHandler(previous)


def test_random_walk_of_real_events_keeps_every_view_current(window, qtbot, warnings_fail):
    print(f"monkey: MONKEY_SEED={SEED} MONKEY_EVENTS={EVENTS}")
    rng = random.Random(SEED)
    monkey = Monkey(window, rng)
    window.activateWindow()
    for n in range(EVENTS):
        monkey.act(n)
        if n % 50 == 0:
            QApplication.processEvents()
        assert not warnings_fail, f"seed {SEED}, event {n}: Qt warning {warnings_fail}"
    QApplication.processEvents()
    assert sum(monkey.counts.values()) == EVENTS and len(monkey.counts) == len(Monkey.ACTIONS)
    assert window.undo_stack.count() > EVENTS // 60, (SEED, monkey.counts)  # the walk really edited
    assert_views_agree(window)
