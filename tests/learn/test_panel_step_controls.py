"""The Learn panel draws only the current step's controls. Before: the last step's were taken out of the layout
and left to a deferred delete, and the new ones were shown by a queued call, so every frame painted before the
event loop came round (a busy one under X11: seconds) showed the old controls, not the new: a Check button over a
click-the-cell step, the "e" of a Check button between a yes/no question's buttons.

Each check is made right after the learner's click, before Qt processes any event: what a frame painted then shows.
"""

from __future__ import annotations

import json

from PySide6.QtWidgets import QAbstractButton, QLabel, QLineEdit, QPushButton, QWidget
from qt_settle import settled

from app.learn.model.files import MemoryStore, parse_lesson
from app.learn.qt.cell_grid import CellGrid

COVER = ["weights", "output"]
LESSON = {
    "id": "controls", "title": "Controls", "preset": "cat-sat-mat",
    "steps": [
        {"kind": "predict", "text": "The weight of sat on mat?", "cover": COVER,
         "ask": {"type": "number", "answer": "weights[sat][mat]", "tolerance": 0.01}},
        {"kind": "predict", "text": "More than 0.3?", "cover": COVER,
         "ask": {"type": "choice", "choices": ["yes", "no"], "answer": "choose(weights[sat][mat] > 0.3, 'yes', 'no')"}},
        {"kind": "predict", "text": "Where does sat look?", "cover": COVER,
         "ask": {"type": "cell", "map": "weights", "row": "sat", "answer": "argmax(weights[sat])"}},
        {"kind": "look", "text": "sat·mat = {scores[sat][mat]}"},
        {"kind": "do", "text": "Set the scale to 1.", "goal": {"scale": 1}},
    ],
}


def _shown(panel) -> list[QWidget]:
    """The controls a frame painted now would show in the step's input area."""
    return [w for w in panel.inputs.findChildren(QWidget) if w.isVisible()]


def _texts(panel) -> list[str]:
    return [w.text() for w in _shown(panel) if isinstance(w, (QAbstractButton, QLabel, QLineEdit))
            and not isinstance(w.parentWidget(), CellGrid)]


def _placed(panel) -> bool:
    """Every shown control where the layout puts it: inside the input area, none over another."""
    tops = [w for w in _shown(panel) if w.parentWidget() is panel.inputs]
    rects = [w.geometry() for w in tops]
    return all(panel.inputs.rect().contains(r) for r in rects) and not any(
        a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])


def test_only_the_current_steps_controls_are_shown(window, qtbot):
    learn = window.learn
    learn.store = learn.panel.store = MemoryStore()
    panel = learn.panel
    panel.auto_advance = False
    learn.show()
    qtbot.waitUntil(lambda: learn.dock.isVisible())
    settled(qtbot)
    assert not panel.number.isVisible() and _shown(panel) == []  # no lesson yet: no control
    run = learn.open(parse_lesson(json.dumps(LESSON)), 0)
    settled(qtbot)
    # a number question: the line edit and its Check button
    assert panel.number.isVisible() and _texts(panel) == ["", "Check"] and _placed(panel)
    panel.number.setText("0.3")
    next(b for b in panel.inputs.findChildren(QPushButton) if b.text() == "Check").click()
    assert 0 in run.feedback and _shown(panel) == []  # answered: no control left
    panel.next_button.click()
    # a yes/no question: its two buttons, nothing between them (no Check button left from the step before)
    assert run.index == 1 and _texts(panel) == ["yes", "no"] and not panel.number.isVisible()
    assert _placed(panel)
    panel.choice_buttons[0].click()
    panel.next_button.click()
    # a click-the-cell question over a covered map: its hint and grid, no Check, yes or no
    assert run.index == 2 and panel.cell_grid is not None and panel.cell_grid.isVisible()
    assert len(_texts(panel)) == 1 and _texts(panel)[0].startswith("Click the cell of row 'sat'")
    assert _placed(panel)
    run.go(3)
    assert _shown(panel) == []  # a look step: no control
    run.go(2)
    assert panel.cell_grid is not None and panel.cell_grid.isVisible()
    panel.restart_button.click()
    # back at the number question, afresh: the line edit and Check only (no cell grid left over)
    assert run.index == 0 and panel.number.isVisible() and _texts(panel) == ["", "Check"] and _placed(panel)
    settled(qtbot)  # and once the event loop has run, still only these
    assert _texts(panel) == ["", "Check"] and not any(isinstance(w, CellGrid) for w in _shown(panel))
