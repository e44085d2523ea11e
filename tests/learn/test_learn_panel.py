"""The Learn dock in a real window: a predict step covers the maps that give the answer away and the answer
reveals them; a do step advances from a real edit through the undo stack; the first-launch offer; File → Open
lesson refuses a bad file with its line."""

from __future__ import annotations

import json

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QPushButton

from app.learn.model.files import MemoryStore, find_lesson
from app.learn.qt.dock import WIDE_SCREEN


def _fresh(window):
    learn = window.learn
    learn.store = learn.panel.store = MemoryStore()
    return learn


def _covered(window):
    return set(map(id, window.learn.covered_widgets))


def test_predict_covers_the_maps_until_answered(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("softmax-cat-sat-mat"), 1)  # "compute sat·mat"
    qtbot.waitUntil(lambda: learn.dock.isVisible())
    boxes = window.pipeline.boxes
    assert _covered(window) >= {id(b) for b in boxes} | {id(window.tab.story_label), id(window.tab.explain_label)}
    on_maps = [c for c in learn._covers.values() if c.target in boxes]
    assert len(on_maps) == 5
    qtbot.waitUntil(lambda: all(c.isVisible() and c.geometry() == c.target.rect() for c in on_maps))
    panel = learn.panel
    panel.number.setText("0.65")  # the guide's printed value
    next(b for b in panel.inputs.findChildren(QPushButton) if b.text() == "Check").click()
    x = np.array([[1.0, 0.5, 0.2, 0.8], [0.3, 0.9, 0.1, 0.4], [0.6, 0.2, 0.7, 0.3]])
    fb = run.feedback[1]
    assert not fb.correct and f"the answer is {x[1] @ x[2]:.2f}." in panel.feedback.text()
    assert _covered(window) == set()  # revealed
    assert panel.next_button.isEnabled()
    assert run.first_try == {1: False}


def test_cell_ask_is_answered_by_clicking_a_map(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("softmax-cat-sat-mat"), 3)  # "where does 'sat' look?" (weights covered)
    assert run.covered == ("weights", "output")
    window.pipeline.cellClicked.emit("weights", 1, 0)  # a covered map: ignored
    assert 3 not in run.feedback
    w = window.playground.result.weights
    window.pipeline.cellClicked.emit("scores", 1, int(np.argmax(w[1])))  # row 'sat' of a visible map
    assert run.feedback[3].correct
    assert _covered(window) == set()


def test_do_step_advances_from_a_real_edit(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("scaling"), 3)  # "set the scale to 1"
    assert run.kind == "do" and not run.done
    depth = window.undo_stack.count()
    window.controls.scale_buttons["one"].click()  # the learner's own click on "1 (unscaled)"
    assert window.playground.result.scale == 1.0
    assert run.done and window.undo_stack.count() > depth
    qtbot.waitUntil(lambda: run.index == 4, timeout=3000)  # moves on by itself
    assert run.kind == "predict"
    item = learn.panel.list.currentItem()  # the list names the step the lesson is at, like the panel's title
    assert item.data(Qt.ItemDataRole.UserRole) == "scaling" and f"step 5/{run.total}" in item.text()
    window.undo_stack.undo()  # the learner's edit is an ordinary undo step
    assert window.playground.scale_mode == "sqrt"


def test_show_me_performs_the_step_through_the_undo_stack(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("dot-product"), 5)  # point Q[it] at street
    learn.panel.auto_advance = False
    depth = window.undo_stack.count()
    learn.panel.show_me_button.click()
    w = window.playground.result.weights[0]
    assert run.done and int(np.argmax(w)) == window.playground.key_tokens.index("street")
    assert window.undo_stack.count() == depth + 1
    assert learn.panel.next_button.isEnabled()
    assert learn.panel.feedback.text() == "Done: the playground shows it."


def test_first_launch_offer_and_menus(window, qtbot):
    learn = window.learn
    assert learn.offer.isVisible()  # a fresh settings file: first launch
    wide = window.screen().availableGeometry().width() >= WIDE_SCREEN
    assert learn.built == wide  # the dock is built when first shown: at first launch only on a wide screen
    learn.take_button.click()
    assert learn.dock.isVisible() and not learn.offer.isVisible()
    learn.panel.dismiss_button.click()
    assert not learn.dock.isVisible() and learn.offer_dismissed
    assert str(window.settings.q.value("learn/offer_dismissed")) == "true"
    learn.lessons_action.trigger()
    assert learn.dock.isVisible()
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    assert learn.lessons_action in help_menu.actions()
    file_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&File")
    assert learn.open_action in file_menu.actions()
    learn.panel.show_offer(True)  # the dock's own "Pick a lesson below" (shown when it opens at first launch) …
    learn.open(learn.panel.lessons[0])
    assert not learn.panel.offer.isVisibleTo(learn.panel)  # … goes once a lesson is open: it no longer applies


def test_the_dock_keeps_the_window_on_a_1280_px_screen(window, qtbot):
    window.learn.open(find_lesson("masks"), 0)
    assert window.learn.dock.isVisible()
    assert window.minimumSizeHint().width() <= 1280


def test_open_lesson_refuses_a_bad_file(window, tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: shown.append(a[2]))
    data = json.loads(open(find_lesson("dot-product").file).read())
    data["steps"][2]["ask"]["answer"] = "argmax(weights[nobody])"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, indent=1))
    assert window.learn.open_file(str(path)) is None
    line = next(i for i, s in enumerate(path.read_text().splitlines(), 1) if "nobody" in s)
    assert shown and shown[0].startswith(f"{path}:{line}: step 3:")
    data["id"] = "my-lesson"
    data["steps"][2]["ask"]["answer"] = "argmax(weights[it])"
    path.write_text(json.dumps(data))
    assert window.learn.open_file(str(path)).id == "my-lesson"
    assert window.learn.run.lesson.id == "my-lesson"


def test_multi_head_lesson_shows_and_covers_the_multi_head_view(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("multi-head"), 2)  # resumed after "set Heads to 2": the split
    assert window.playground.num_heads == 2
    assert window.view_tabs.currentWidget() is window.multihead
    run.next()  # "same focus?": the Multi-head view is covered
    assert id(window.multihead) in _covered(window)
    heads = window.playground.computation.heads.heads.weights
    same = int(np.argmax(heads[0, 1])) == int(np.argmax(heads[1, 1]))
    assert learn.panel.choose("yes" if same else "no").correct
    assert id(window.multihead) not in _covered(window)


def test_a_step_the_playground_cannot_take_is_refused_in_the_panel(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("masks"), 1)
    learn.panel.auto_advance = False
    run.answer(run.sample_answer(True))
    # the learner makes the causal mask impossible: cross attention with 3 queries and 4 keys
    assert window.edits.apply("cross", lambda m: m.set_mode("projection", "cross"))
    assert window.edits.apply("Lk", lambda m: m.set_dim("Lk", 4))
    learn.panel.next_button.click()  # step 3: "mask the future"
    assert run.index == 2 and run.kind == "do"
    learn.panel.show_me_button.click()
    assert not run.done and window.playground.mask_mode != "causal"
    assert learn.panel.feedback.text()  # says why, nothing raised
    learn.panel.restart_button.click()  # Restart puts the lesson's own state back
    assert run.index == 0 and window.playground.mask_mode == "none" and window.playground.dims["Lk"] == 3


def test_cost_lesson_ends_on_the_lab_tab(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("cost"), run_last := len(find_lesson("cost").steps) - 1)
    assert run.index == run_last and window.tabs.tabText(window.tabs.currentIndex()) == "Lab"
    assert window.playground.result.weights.shape == (8, 8)  # the replayed "four times the map" step
    run.go(0)
    assert window.tabs.currentWidget() is window.tab and window.view_tabs.currentWidget() is window.pipeline


def test_reversal_lesson_brings_the_training_tab_and_its_ablate_tab(window, qtbot, monkeypatch):
    window.training_host.warm_up_torch = False  # nothing trains here: no torch warm-up to wait for
    learn = _fresh(window)
    lesson = find_lesson("reversal")
    ablate = next(i for i, s in enumerate(lesson.steps) if s.get("view") == "ablate")
    run = learn.open(lesson, ablate)  # resumed past the training step: nothing trained in this window yet
    panel = window.training_panel
    assert window.tabs.currentWidget() is panel and panel.tabs.currentWidget() is panel.ablation
    assert "no trained model yet" in learn.panel.text.text()
    assert learn.panel._done_text() == "Done: the Training tab's Ablate view shows it."  # not "the playground"
    run.go(0)  # the first step: the Training tab, its figures from the tab's settings
    cfg = window.training.config
    assert window.tabs.currentWidget() is panel
    assert f"({cfg.num_layers} layers × {cfg.num_heads} heads) to write {cfg.seq_len} tokens" in learn.panel.text.text()


def test_ctrl_z_of_a_do_step_reopens_it_in_the_panel(window, qtbot):
    """Masks lesson: causal chosen, the lesson moved on; Ctrl+Z puts the mask back to none: step 4 no longer
    describes a causal mask, Next waits, Show me makes the mask again."""
    learn = _fresh(window)
    run = learn.open(find_lesson("masks"), 2)
    panel = learn.panel
    panel.auto_advance = False
    window.controls.mask_combo.setCurrentIndex(window.controls.mask_combo.findData("causal"))
    assert run.done and panel.next_button.isEnabled()
    panel.next_button.click()
    assert run.index == 3 and "The causal mask sets" in panel.text.text()
    window.undo_action.trigger()  # Ctrl+Z
    assert window.playground.mask_mode == "none"
    assert "The causal mask sets" not in panel.text.text() and "step 3" in panel.text.text()
    assert not panel.next_button.isEnabled() and panel.show_me_button.isEnabled()
    window.redo_action.trigger()
    assert "The causal mask sets" in panel.text.text() and panel.next_button.isEnabled()
    window.undo_action.trigger()
    panel.back_button.click()  # back at the do step: open again
    assert run.index == 2 and not run.done and not panel.next_button.isEnabled()


def test_feedback_follows_a_later_edit_in_the_panel(window, qtbot):
    learn = _fresh(window)
    run = learn.open(find_lesson("softmax-cat-sat-mat"), 7)  # output[sat][0]
    then = run.expected()
    learn.panel.number.setText(f"{then:.2f}")
    learn.panel.number.returnPressed.emit()
    assert run.feedback[7].correct
    window.edits.apply("edit", lambda m: m.set_cell("X", 1, 0, 2.0))
    assert f"now {run.expected():.2f}" in learn.panel.feedback.text()


def test_a_refused_answer_says_why_and_goes_when_the_numbers_change(window):
    """Found by the currency oracle: after the learner switched to Q, K, V, an answer to "how many parameters in
    W_Q, W_K, W_V, W_O?" showed "unknown name 'W_Q'", and that line stayed whatever changed next."""
    from app.learn.model.files import find_lesson

    learn = window.learn
    learn.open(find_lesson("multi-head"), 6)
    window.tab.inputs.choose_mode(0)  # Q, K, V directly: no projections
    panel = learn.panel
    assert panel.answer("64") is None
    said = panel.feedback.text()
    assert "unknown name" not in said and "no projections" in said and "cannot be checked now" in said
    window.edits.set_cell("Q", 0, 0, 0.5)
    assert panel.feedback.text() == ""  # the refusal was about the numbers then
