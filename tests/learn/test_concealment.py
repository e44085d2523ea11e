"""While a predict step covers a map, no view shows its numbers — not the Vectors labels or hover, not
Flow, the Multi-head view, 3D, the explanation or story lines, the status bar — and an export of a covered map is
refused with a message. One rule: ``Concealment.of(model)``, which the lesson sets and every view asks."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QMessageBox

from app.learn.model.files import MemoryStore, find_lesson
from app.playground.model.concealment import COVER_TEXT, Concealment
from app.playground.model.playground import PlaygroundModel


def _open_weights_question(window):
    """Lesson 3, "where does 'sat' look?": weights and output covered until answered."""
    learn = window.learn
    learn.store = learn.panel.store = MemoryStore()
    run = learn.open(find_lesson("softmax-cat-sat-mat"), 3)
    assert run.covered == ("weights", "output")
    return run


def _weight_texts(weights):
    """The covered weights as the app writes them anywhere: 0.363, 0.36, 36%, 36.3%."""
    out = set()
    for w in np.asarray(weights, dtype=float).ravel():
        if 0.0005 < w < 0.9995:
            out |= {f"{w:.3f}", f"{w:.2f}", f"{w:.0%}", f"{w:.1%}", f"{w:.3g}"}
    return out


def _leaks(text, covered):
    return sorted(t for t in covered if t in text)


def test_concealment_is_one_per_model_and_refuses_an_unknown_map():
    m = PlaygroundModel()
    c = Concealment.of(m)
    assert Concealment.of(m) is c and Concealment.of(PlaygroundModel()) is not c
    seen = []
    c.events.changed.connect(lambda: seen.append(set(c.hidden)))
    c.hide(("weights",))
    assert c.hides("weights", "scores") and not c.hides("scores")
    assert "Weights" in c.withheld_message("weights") and c.withheld_message("scores") == ""
    with pytest.raises(ValueError, match="cannot hide"):
        c.hide(("nonsense",))
    assert c.hidden == {"weights"}
    c.lift()
    assert seen == [{"weights"}, set()]


def test_concealment_says_what_changed():
    """``changed`` carries the quantities whose cover came or went, and each has its own event."""
    c = Concealment.of(PlaygroundModel())
    said, weights = [], []
    c.events.changed.connect(said.append)
    c.events.weights.connect(lambda: weights.append(c.hides("weights")))
    c.hide(("weights", "output"))
    c.hide(("weights", "scan"))
    c.hide(("weights", "scan"))  # nothing changed: nothing said
    c.lift()
    assert said == [{"weights", "output"}, {"output", "scan"}, {"weights", "scan"}]
    assert weights == [True, False]


def test_a_weights_question_leaks_no_weight_anywhere(window, qtbot):
    run = _open_weights_question(window)
    tab = window.tab
    w = window.playground.result.weights
    covered = _weight_texts(w) | _weight_texts(window.playground.result.output)
    # Vectors: key labels with the weight as thickness, the hover read-out of a key and of a query
    vectors = tab.vectors
    vectors.thick_box.setChecked(True)
    vectors.redraw()
    labels = " ".join(a.label.textItem.toPlainText() for a in vectors.plot.arrows)
    assert "cat" in labels and _leaks(labels, covered) == []
    vectors.space.hover("k", 0)
    assert "q·k" in vectors.hover_label.text() and _leaks(vectors.hover_label.text(), covered) == []
    vectors.space.hover("q", 1)
    assert _leaks(vectors.hover_label.text(), covered) == []
    # Flow: nothing drawn, hover says nothing of the weights
    flow = tab.flow
    flow.redraw()
    flow.canvas.set_hover("query", 1)
    flow._show_hover()
    assert flow.data is None and flow.canvas.data is None and COVER_TEXT in flow.title_label.text()
    assert _leaks(flow.hover_label.text() + flow.title_label.text(), covered) == []
    # 3D on the weights map
    surface = tab.three_d
    surface.set_step("weights")
    surface.redraw()
    assert surface.surface is None and COVER_TEXT in surface.message.text()
    # explanation of a weights cell (pinned by the keyboard, say), story line, status bar
    window.playground.pin("weights", 1, 0)
    texts = [tab.explain_label.text(), tab.story_label.text(), window.statusBar().currentMessage(),
             tab.controls.saturation.text()]
    assert all(_leaks(t, covered) == [] for t in texts), texts
    # answered: the weights come back everywhere
    window.pipeline.cellClicked.emit("scores", 1, int(np.argmax(w[1])))
    assert run.feedback[3].correct
    vectors.redraw()
    labels = " ".join(a.label.textItem.toPlainText() for a in vectors.plot.arrows)
    assert f"{float(w[vectors.space.selected, 0]):.0%}" in labels
    assert tab.controls.saturation.text() == window.playground.saturation
    flow.redraw()
    assert flow.canvas.data is not None and np.allclose(flow.canvas.data.weights[0], w)
    surface.redraw()
    assert surface.surface is not None and surface.surface.step == "weights"


def test_the_multi_head_view_hides_its_heads_while_weights_are_covered(window, qtbot):
    _open_weights_question(window)
    window.playground.set_heads(2)  # the learner sets Heads = 2 on the way
    mh = window.tab.multihead
    mh.redraw()
    heads = window.playground.computation.heads
    covered = _weight_texts(heads.heads.weights) | _weight_texts(heads.output)
    assert not mh.body.isVisibleTo(mh) and COVER_TEXT in mh.info.text()
    assert _leaks(mh.info.text(), covered) == []
    window.playground.set_heads(1)


def test_an_export_of_a_covered_map_is_refused_with_a_message(window, qtbot, tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: shown.append(a[2]))
    run = _open_weights_question(window)
    hm = window.pipeline.heatmaps["weights"]
    with pytest.raises(ValueError, match=COVER_TEXT):
        hm.export(tmp_path / "w.csv")
    assert not (tmp_path / "w.csv").exists()
    from app.widgets.export_button import guarded

    assert not guarded(window, lambda: hm.export(tmp_path / "w.png")) and COVER_TEXT in shown[0]
    window.pipeline.heatmaps["scores"].export(tmp_path / "s.csv")  # an uncovered map still exports
    assert (tmp_path / "s.csv").exists()
    with pytest.raises(ValueError, match=COVER_TEXT):
        window.tab.flow.export(tmp_path / "f.png")
    written = window.export_all(tmp_path / "all")  # File → Export all steps: the covered maps are left out
    assert {p.stem for p in written} == {"1-scores", "2-scaled", "3-masked"}
    run.answer((1, 0))
    hm.export(tmp_path / "w.csv")
    assert (tmp_path / "w.csv").exists()
