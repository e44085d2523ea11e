"""The playground window driven like a user would (offscreen): views must equal independent computations."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QAbstractItemView, QLineEdit, QMessageBox

from attention_core import attention_steps, causal_mask, get_preset, multi_head_steps, parameter_count


def views(window):
    return window.pipeline.heatmaps


def type_into(qtbot, window, name: str, row: int, col: int, text: str) -> None:
    """Edit a cell through the real table: open its editor, type, press Enter."""
    table = window.editors[name].table
    idx = table.model().index(row, col)
    table.setCurrentIndex(idx)
    table.edit(idx)
    # the editor of a previous edit may linger until deleteLater runs: take the visible one
    editors = [e for e in table.viewport().findChildren(QLineEdit) if e.isVisible()]
    assert editors, "no cell editor opened"
    editor = editors[-1]
    editor.selectAll()
    qtbot.keyClicks(editor, text)
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    # the delegate commits through a queued call: wait until the editor has closed
    qtbot.waitUntil(lambda: table.state() != QAbstractItemView.State.EditingState, timeout=2000)


def sdpa_weights_and_output(q, k, v, mask=None, scale=None):
    tq, tk, tv = (torch.tensor(np.asarray(x), dtype=torch.float64) for x in (q, k, v))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=None if mask is None else torch.tensor(mask),
                                         scale=scale)
    return out.numpy()


def test_typing_a_cell_updates_every_view(window, qtbot):
    window.load_preset("it-animal-street")
    type_into(qtbot, window, "K", 1, 0, "2.5")
    st = window.playground.state
    assert st.matrices["K"][1, 0] == 2.5
    q, k, v = st.matrices["Q"], st.matrices["K"], st.matrices["V"]
    ref = attention_steps(q, k, v)
    np.testing.assert_allclose(views(window)["scores"].values(), ref.scores)
    np.testing.assert_allclose(views(window)["weights"].values(), ref.weights)
    np.testing.assert_allclose(views(window)["output"].values(), sdpa_weights_and_output(q, k, v), rtol=1e-12)
    # hand check of the edited score: Q=[3,1], K_street=[2.5,4] -> 11.5
    assert views(window)["scores"].values()[0, 1] == pytest.approx(11.5)


def test_bad_text_is_refused_with_a_message_and_old_value_kept(window, qtbot):
    window.load_preset("cat-sat-mat")
    before = window.playground.state.matrices["X"].copy()
    count = window.undo_stack.count()
    for bad in ("abc", "nan", "inf", "1e999"):
        type_into(qtbot, window, "X", 0, 0, bad)
        np.testing.assert_array_equal(window.playground.state.matrices["X"], before)
        assert window.error_label.isVisible() and "number" in window.error_label.text()
    assert window.undo_stack.count() == count
    assert window.editors["X"].model.data(window.editors["X"].model.index(0, 0)) == "1"


def test_undo_redo_restore_values_and_views(window, qtbot):
    window.load_preset("cat-sat-mat")
    w0 = views(window)["weights"].values()
    type_into(qtbot, window, "X", 1, 1, "-2")
    w1 = views(window)["weights"].values()
    assert not np.allclose(w0, w1)
    window.undo_action.trigger()
    assert window.playground.state.matrices["X"][1, 1] == 0.9
    np.testing.assert_array_equal(views(window)["weights"].values(), w0)
    window.redo_action.trigger()
    np.testing.assert_array_equal(views(window)["weights"].values(), w1)


def test_causal_and_padding_masks(window):
    window.load_preset("cat-sat-mat")
    c = window.controls
    c.mask_combo.setCurrentIndex(c.mask_combo.findData("causal"))
    w = views(window)["weights"].values()
    assert np.all(w[np.triu_indices(3, 1)] == 0)
    assert views(window)["masked"].blocked()[0, 1]
    q, k, v = window.playground.state.projected()
    np.testing.assert_allclose(w, attention_steps(q, k, v, mask=causal_mask(3)).weights)
    np.testing.assert_allclose(views(window)["output"].values(), sdpa_weights_and_output(q, k, v, causal_mask(3)))
    c.mask_combo.setCurrentIndex(c.mask_combo.findData("padding"))
    c.padding_boxes[2].setChecked(False)  # 'mat' is padding
    w = views(window)["weights"].values()
    np.testing.assert_array_equal(w[:, 2], 0.0)
    np.testing.assert_allclose(w.sum(1), 1.0)


def test_fully_blocked_row_shows_zeros_and_a_warning(window):
    window.load_preset("cat-sat-mat")
    window.controls.mask_combo.setCurrentIndex(window.controls.mask_combo.findData("custom"))
    for j in range(3):
        window.tab._on_click("weights", 1, j)  # clicking toggles a cell in custom mode
    w = views(window)["weights"].values()
    assert not np.isnan(w).any()
    np.testing.assert_array_equal(w[1], 0.0)
    assert "every key blocked" in window.pipeline.captions["masked"].text()
    np.testing.assert_array_equal(views(window)["output"].values()[1], 0.0)


def test_scale_controls(window):
    window.load_preset("it-animal-street")
    scores = views(window)["scores"].values()
    np.testing.assert_allclose(views(window)["scaled"].values(), scores / math.sqrt(2))
    window.controls.scale_buttons["one"].setChecked(True)
    np.testing.assert_allclose(views(window)["scaled"].values(), scores)
    np.testing.assert_allclose(views(window)["weights"].values()[0],
                               np.exp(scores[0]) / np.exp(scores[0]).sum())
    window.controls.scale_buttons["custom"].setChecked(True)
    window.controls.slider.setValue(0)  # scale 0.01: nearly uniform
    assert window.playground.state.custom_scale == pytest.approx(0.01)
    np.testing.assert_allclose(views(window)["scaled"].values(), scores * 0.01)
    assert views(window)["weights"].values().max() < 0.36


def test_projection_mode_derives_qkv(window, qtbot):
    window.load_preset("lesson-random-4x8")
    assert window.playground.state.mode == "projection"
    type_into(qtbot, window, "X", 2, 3, "1.25")
    m = window.playground.state.matrices
    q, k, v = m["X"] @ m["W_Q"], m["X"] @ m["W_K"], m["X"] @ m["W_V"]
    np.testing.assert_allclose(window.derived["Q"].values(), q)
    np.testing.assert_allclose(views(window)["weights"].values(), attention_steps(q, k, v).weights)
    # cross-attention: a different X for keys/values
    window.tab.inputs.choose_mode(2)
    window.edits.apply("Lk", lambda s: s.set_dim("Lk", 6))
    assert views(window)["weights"].values().shape == (4, 6)


def test_resize_keeps_remaining_cells(window):
    window.load_preset("it-animal-street")
    k = window.playground.state.matrices["K"].copy()
    window.dim_spins["Lk"].setValue(5)
    np.testing.assert_array_equal(window.playground.state.matrices["K"][:3], k)
    assert window.playground.state.matrices["K"].shape == (5, 2) and views(window)["weights"].values().shape == (1, 5)
    window.dim_spins["d_k"].setValue(1)
    np.testing.assert_array_equal(window.playground.state.matrices["K"][:3, 0], k[:, 0])
    window.undo_action.trigger()
    window.undo_action.trigger()
    np.testing.assert_array_equal(window.playground.state.matrices["K"], k)


def test_paste_block_and_refused_paste(window):
    window.load_preset("cat-sat-mat")
    table = window.editors["X"].table
    table.setCurrentIndex(table.model().index(1, 1))
    table.paste_text("1\t2\n3\t4\n")
    np.testing.assert_array_equal(window.playground.state.matrices["X"][1:3, 1:3], [[1, 2], [3, 4]])
    before = window.playground.state.matrices["X"].copy()
    table.paste_text("1\tfoo")
    np.testing.assert_array_equal(window.playground.state.matrices["X"], before)
    assert "paste refused" in window.error_label.text()
    assert table.copy_selection().startswith("1.0")


def test_scrub_merges_into_one_undo_step(window):
    window.load_preset("cat-sat-mat")
    count = window.undo_stack.count()
    for v in (1.1, 1.2, 1.3):
        window.edits.set_cell("X", 0, 0, v, merge_key="drag1:X:0:0")
    assert window.undo_stack.count() == count + 1 and window.playground.state.matrices["X"][0, 0] == 1.3
    window.undo_action.trigger()
    assert window.playground.state.matrices["X"][0, 0] == 1.0


def test_multi_head_view_matches_core(window):
    window.load_preset("lesson-random-4x8")
    window.controls.heads_spin.setValue(2)
    window.view_tabs.setCurrentWidget(window.multihead)
    q, k, v = window.playground.state.projected()
    ref = multi_head_steps(q, k, v, 2)
    for h in range(2):
        np.testing.assert_allclose(window.multihead.head_maps[h].values(), ref.heads.weights[h])
    np.testing.assert_allclose(window.multihead.concat.values(), ref.concat)
    info = window.multihead.info.text()  # the weights without biases (as the lessons count), the biases beside
    assert f"<b>{parameter_count(8, 2, bias=False)}</b>" in info and "no biases" in info
    assert f"adds {parameter_count(8, 2) - parameter_count(8, 2, bias=False)} more" in info
    window.controls.heads_spin.setValue(3)  # 8 is not divisible by 3: refused
    assert window.playground.state.num_heads == 2 and "divide" in window.controls.heads_error.text()
    assert window.controls.heads_spin.value() == 2 and "divide" not in window.error_label.text()  # by the control


def test_explain_shows_formula_with_numbers(window):
    window.load_preset("cat-sat-mat")
    window.pipeline.heatmaps["weights"].cellHovered.emit(1, 2)
    text = window.explain_label.text()
    w = window.playground.computation.steps.weights[1, 2]
    assert f"{w:.4g}" in text and "e^" in text
    assert window.pipeline.heatmaps["masked"].overlay.highlight_rows == (1,)
    window.pipeline.heatmaps["scores"].cellHovered.emit(0, 1)
    assert "1.09" in window.explain_label.text() and "1·0.3" in window.explain_label.text()


@pytest.mark.parametrize("name", ["cat-sat-mat", "it-animal-street", "magnitude", "bank-river-loan"])
def test_presets_load_and_match_core(window, name):
    window.load_preset(name)
    p = get_preset(name)
    np.testing.assert_allclose(views(window)["weights"].values(), attention_steps(p.q, p.k, p.v).weights)
    assert window.story_label.text() == p.story


def test_export_png_svg_csv(window, tmp_path):
    window.load_preset("cat-sat-mat")
    hm = views(window)["weights"]
    hm.export(tmp_path / "w.png")
    hm.export(tmp_path / "w.svg")
    hm.export(tmp_path / "w.csv")
    img = QImage(str(tmp_path / "w.png"))
    assert img.width() > 300
    colours = {img.pixel(x, y) for x in range(0, img.width(), 7) for y in range(0, img.height(), 7)}
    assert len(colours) > 20  # not blank
    root = ET.parse(tmp_path / "w.svg").getroot()
    assert root.tag.endswith("svg") and "sat" in (tmp_path / "w.svg").read_text()
    rows = (tmp_path / "w.csv").read_text().splitlines()
    assert '# columns (key): ["cat", "sat", "mat"]' in rows  # the labels as '#' lines, the numbers alone
    np.testing.assert_allclose(np.genfromtxt(tmp_path / "w.csv", comments="#", delimiter=","),
                               window.playground.computation.steps.weights, rtol=1e-15)
    written = window.export_all(tmp_path / "all")
    assert len(written) == 15 and all(p.stat().st_size > 0 for p in written)


def test_session_roundtrip_and_corrupt_file_refused(window, tmp_path, monkeypatch):
    window.load_preset("magnitude")
    window.controls.mask_combo.setCurrentIndex(window.controls.mask_combo.findData("custom"))
    path = tmp_path / "s.json"
    assert window.save_session_to(path)
    assert json.loads(path.read_text())["version"] == 1
    saved = window.playground.state.snapshot()
    window.load_preset("cat-sat-mat")
    assert window.open_session(path)
    assert window.playground.state.snapshot() == saved
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a[2]))
    current = window.playground.state.snapshot()
    for content in ("{not json", json.dumps({"format": "other"}),
                    json.dumps({"format": "attention-playground-session", "version": 1, "state": {"mode": "x"}})):
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        assert not window.open_session(bad)
        assert window.playground.state.snapshot() == current
    assert len(warnings) == 3 and "not valid JSON" in warnings[0] and "not an Attention Playground" in warnings[1]


def test_unsaved_changes_prompt_can_cancel_close(window, qtbot, monkeypatch):
    window.load_preset("magnitude")
    assert window.isWindowModified()
    window.confirm_on_close = True
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Cancel)
    window.close()
    assert window.isVisible()


def test_launch_does_not_import_torch():
    import subprocess
    import sys

    code = ("import os, sys; os.environ['QT_QPA_PLATFORM']='offscreen'\n"
            "from app.widgets.application import make_application\nfrom app import create_main_window\n"
            "a = make_application(); w = create_main_window(); w.show(); a.processEvents()\n"
            "code = 3 if 'torch' in sys.modules else 0\n"
            "sys.stdout.flush(); os._exit(code)\n")  # skip interpreter teardown: only the import matters here
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
