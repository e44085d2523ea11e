"""The Detect view in the real window, on an induction model trained here: the score grid is ``head_scores``, a
clicked head's pattern has the detector's ideal cells circled, the loss curve is ``repeated_tokens``, the scan grid
is ``ablation_scan`` (and Cancel stops it and says so), and heads switched off in the list change the rest of the tab
(as ``forward(ablate=)``) until "Switch all back on" restores the original trace exactly."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt
from qt_settle import settled

from tests.tolerance import assert_close


def open_detect(window, qtbot, path):
    host = window.inspect
    tab = host.show()
    session = host.model
    session.load(path)
    qtbot.waitUntil(lambda: session.trace is not None and not session.tracing, timeout=60_000)
    index = tab.views.indexOf(tab.detect)  # (the Generate view comes after it)
    view = tab.views.widget(index)
    assert tab.views.tabText(index) == "Detect"
    tab.views.setCurrentWidget(view)  # shown: the detectors start
    qtbot.waitUntil(lambda: session.heads.detection is not None and not session.heads.busy, timeout=60_000)
    settled(qtbot)
    return session, tab, view


def idle(session, qtbot):
    qtbot.waitUntil(lambda: not session.tracing and not session.heads.busy, timeout=60_000)
    settled(qtbot)


def test_scores_pattern_and_loss_curve_are_the_librarys(window, qtbot, induction_model):
    from attention_core.phenomena import head_scores, repeated_tokens

    session, tab, view = open_detect(window, qtbot, induction_model)
    model, a = session.model, session.heads
    ref = head_scores(model, "induction", seed=0, batch=4, keep_attentions=True)
    assert_close(view.scores.values(), ref.scores)
    assert set(view.scores.overlay.highlight_cells) == set(ref.heads_above()) and len(ref.heads_above()) >= 1
    assert view.scores.title() == "induction score of every head"
    assert "Every head is on." in view.off_label.text() and "Detectors run in" in view.status_label.text()
    # click the best head: the session picks it, its pattern on the first probe sequence, the induction keys circled
    best = ref.best()
    view.scores.cellClicked.emit(*best)
    assert session.selected == best
    assert_close(view.pattern.values(), ref.attentions[0][best])
    assert view.pattern.row_labels() == model.token_strings(ref.ids[0].tolist())
    assert view.pattern.marks() == [(q, q - 4) for q in range(5, 10)]  # S = 5: key q - S + 1
    assert f"head {best[0]}.{best[1]}: induction" in view.pattern.title()
    # the curve: mean loss per predicted position; the halves' means in the key under it
    rep = repeated_tokens(model, seed=0, batch=4)
    x, y = view.curve.curve.getData()
    np.testing.assert_array_equal(x, np.arange(1, 10))
    assert_close(y, rep.losses.mean(axis=0))
    _, first = view.curve.first_line.getData()
    assert first[0] == pytest.approx(rep.first_half_loss, abs=1e-5)
    assert f"second copy {rep.second_half_loss:.2f}" in view.curve.caption.text()
    # another detector: another grid and other circles, no new run
    detection = a.detection
    view.kind_box.setCurrentText("previous-token")
    assert a.kind == "previous-token" and a.detection is detection
    assert_close(view.scores.values(), head_scores(model, "previous-token").scores)
    assert view.pattern.marks() == [(q, q - 1) for q in range(1, 10)]
    view.kind_box.setCurrentText("induction")


def test_heads_off_change_the_whole_tab_and_all_back_on_restores_it(window, qtbot, induction_model):
    session, tab, view = open_detect(window, qtbot, induction_model)
    model, a = session.model, session.heads
    original = session.trace
    rows = view.heads.rows()
    assert len(rows) == 8 and all(on for *_, on in rows)
    li, h, text, _ = rows[0]  # best first: the strongest induction head
    assert text.startswith(f"{li}.{h}") and (li, h) == a.heads_above()[0]
    view.heads.list.item(0).setCheckState(Qt.CheckState.Unchecked)
    assert a.off == ((li, h),)
    idle(session, qtbot)
    t = session.trace
    assert t.ablated == ((li, h),)
    assert_close(t.logits, model.forward(t.ids, ablate={(li, h): "zero"}).logits[0].numpy())
    name = f"1 head off: {li}.{h}"
    assert name in view.off_label.text() and name in tab.next_label.text()
    tab.views.setCurrentWidget(tab.grid)  # hidden views catch up when shown
    settled(qtbot)
    for layer in range(2):
        np.testing.assert_array_equal(tab.grid.values(layer, 1), t.attentions[layer, 1])
    assert tab.grid.overlay.off == {(li, h)}  # greyed on the mosaic
    assert tab.grid.overlay.marked == set(a.heads_above())  # the detector's heads above 0.4, outlined
    session.select_head(li, h)
    tab.views.setCurrentWidget(tab.head_map)
    settled(qtbot)
    assert name in tab.head_map.title()
    np.testing.assert_array_equal(tab.head_map.values(), t.attentions[li, h])
    tab.views.setCurrentWidget(tab.flow)
    settled(qtbot)
    assert name in tab.flow.current_data().title
    tab.views.setCurrentWidget(view)
    idle(session, qtbot)
    assert a.detection.off == ((li, h),) and view.scores.blocked()[li, h]
    assert not view.heads.rows()[[r[:2] for r in view.heads.rows()].index((li, h))][3]
    # switch off every head above 0.4, then all back on: the original trace, number for number
    view.heads.above_button.click()
    idle(session, qtbot)
    assert set(session.trace.ablated) >= set(a.heads_above()) | {(li, h)}
    assert view.heads.all_on_button.isEnabled()
    view.heads.all_on_button.click()
    idle(session, qtbot)
    assert a.off == () and session.trace.ablated == ()
    np.testing.assert_array_equal(session.trace.logits, original.logits)
    np.testing.assert_array_equal(session.trace.attentions, original.attentions)
    assert "Every head is on." in view.off_label.text() and "off" not in tab.next_label.text()
    assert not view.heads.all_on_button.isEnabled()
    tab.views.setCurrentWidget(tab.grid)
    settled(qtbot)
    assert tab.grid.overlay.off == set()
    np.testing.assert_array_equal(tab.grid.values(0, 0), original.attentions[0, 0])


def test_the_scan_grid_is_ablation_scan_and_toggles_heads(window, qtbot, induction_model):
    from attention_core.phenomena import ablation_scan

    session, tab, view = open_detect(window, qtbot, induction_model)
    scan = view.scan
    assert view.left.tabText(1) == "Ablation scan"
    view.left.setCurrentWidget(scan)
    assert scan.placeholder.isVisible() and not scan.grid.isVisible()
    scan.scan_button.click()
    idle(session, qtbot)
    ref = ablation_scan(session.model, session.trace.ids, "zero")
    assert_close(scan.grid.values(), ref.repeat_change, scale=ref.repeat_loss)
    assert scan.grid.isVisible() and scan.progress.value() == scan.progress.maximum() == 8
    assert scan.progress.format() == "done: 8 heads"
    scan.measure_box.setCurrentIndex(1)
    assert_close(scan.grid.values(), ref.text_change, scale=ref.text_loss)
    assert "your text" in scan.caption.text()
    scan.measure_box.setCurrentIndex(0)
    scan.grid.cellClicked.emit(0, 3)  # clicking the scan grid switches that head off
    assert session.heads.off == ((0, 3),)
    idle(session, qtbot)
    assert "scan again" in scan.caption.text() and scan.grid.overlay.highlight_cells == ((0, 3),)
    scan.grid.cellClicked.emit(0, 3)
    idle(session, qtbot)
    assert session.heads.off == () and session.trace.ablated == ()


def test_cancel_stops_a_scan_without_freezing_the_window_and_the_grid_says_so(window, qtbot, induction_model,
                                                                               monkeypatch):
    import attention_core.phenomena as phenomena

    session, tab, view = open_detect(window, qtbot, induction_model)
    real = phenomena.ablation_scan
    reached, release = threading.Event(), threading.Event()

    def slow(*args, progress, **kw):
        def report(done, total):
            progress(done, total)
            if done == 2:
                reached.set()
                release.wait(20)

        return real(*args, progress=report, **kw)

    monkeypatch.setattr(phenomena, "ablation_scan", slow)
    import app.model_tab.model.detect as detect_model

    real_items, ran_on = detect_model.scan_items, []

    def items_noting_their_thread(run):
        ran_on.append(threading.get_ident())
        yield from real_items(run)

    monkeypatch.setattr(detect_model, "scan_items", items_noting_their_thread)
    scan = view.scan
    view.left.setCurrentWidget(scan)
    scan.scan_button.click()
    # the scan runs off the GUI thread: the click returned while the scan is held at its second head (on the GUI
    # thread it would have returned only after the whole scan), and the scan's loop runs on another thread
    assert session.heads.scanning and not release.is_set()
    assert reached.wait(20)
    assert ran_on and threading.get_ident() not in ran_on
    qtbot.waitUntil(lambda: scan.progress.value() == 2, timeout=5000)  # progress arrives while the scan waits
    assert scan.progress.format() == "2 of 8 heads" and not scan.scan_button.isEnabled()
    assert scan.cancel_button.isEnabled()
    scan.cancel_button.click()
    assert not scan.cancel_button.isEnabled() and scan.progress.format().startswith("cancelling")
    release.set()
    idle(session, qtbot)
    r = session.heads.scan
    assert not r.scan.completed and np.isfinite(scan.grid.values()).sum() == 2
    assert "cancelled after 2 of 8 heads" in scan.caption.text()
    assert scan.progress.format() == "cancelled at 2 of 8" and scan.scan_button.isEnabled()
    assert "Scan cancelled after 2 of 8 heads." in view.status_label.text()
