"""More of the playground, driven like a user: mouse on heatmaps, the right-click export, W_O, settings, CLI export."""

from __future__ import annotations

import csv
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog

from attention_core import attention_steps, causal_mask
from attention_core.multihead_steps import multi_head_steps

ROOT = Path(__file__).resolve().parents[2]


def viewport_point(hm, row: int, col: int) -> QPoint:
    scene = hm.cell_center_scene(row, col)
    return hm.graphics.mapFromScene(scene)


def test_real_mouse_hover_and_click_explain_and_toggle_mask(window, qtbot):
    window.load_preset("cat-sat-mat")
    hm = window.pipeline.heatmaps["scores"]
    with qtbot.waitSignal(hm.cellHovered, timeout=2000) as blocker:
        QTest.mouseMove(hm.graphics.viewport(), viewport_point(hm, 2, 0))
    assert blocker.args == [2, 0]
    text = window.explain_label.text()
    s = window.playground.computation.steps
    assert "mat" in text and "cat" in text and f"{s.scores[2, 0]:.4g}" in text
    # the source rows are highlighted in the Q (here: derived Q) and K views
    assert window.derived["Q"].overlay.highlight_rows == (2,)
    # custom mask: a click on the masked view blocks that cell, and the maths follows
    window.controls.mask_combo.setCurrentIndex(window.controls.mask_combo.findData("custom"))
    masked = window.pipeline.heatmaps["masked"]
    QTest.mouseClick(masked.graphics.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     viewport_point(masked, 0, 2))
    assert not window.playground.state.custom_mask[0, 2]
    mask = np.ones((3, 3), dtype=bool)
    mask[0, 2] = False
    q, k, v = window.playground.state.projected()
    np.testing.assert_allclose(window.pipeline.heatmaps["weights"].values(),
                               attention_steps(q, k, v, mask=mask).weights)
    assert masked.values()[0, 2] == -np.inf and masked.blocked()[0, 2]
    window.undo_action.trigger()
    assert window.playground.state.custom_mask[0, 2]


def test_context_menu_exports_each_format(window, tmp_path, monkeypatch):
    window.load_preset("cat-sat-mat")
    window.controls.mask_combo.setCurrentIndex(window.controls.mask_combo.findData("causal"))
    hm = window.pipeline.heatmaps["masked"]
    menu = hm.context_menu()
    actions = {a.data(): a for a in menu.actions()}
    assert set(actions) == {"png", "svg", "csv"}
    for fmt in ("png", "svg", "csv"):
        target = tmp_path / f"masked-{fmt}"  # no suffix: the dialog adds it
        monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, t=target, **k: (str(t), ""))
        actions[fmt].trigger()
        assert (tmp_path / f"masked-{fmt}.{fmt}").stat().st_size > 0
    rows = list(csv.reader((tmp_path / "masked-csv.csv").open()))  # '#' lines (setting, labels), then numbers
    assert '# columns (key): ["cat", "sat", "mat"]' in [",".join(r) for r in rows]
    rows = [r for r in rows if not r[0].startswith("#")]
    assert rows[0][1:] == ["-inf", "-inf"] and float(rows[1][0]) == window.playground.computation.steps.masked[1, 0]
    ET.parse(tmp_path / "masked-svg.svg")
    img = QImage(str(tmp_path / "masked-png.png"))
    assert img.width() >= 1000  # rendered at 2x
    # the hatched blocked cell is grey, not the colour map's blue for a very negative value
    grey = [QImage.pixelColor(img, x, y) for x in range(0, img.width(), 5) for y in range(0, img.height(), 5)]
    assert any(abs(c.red() - c.green()) < 8 and abs(c.green() - c.blue()) < 8 and 150 < c.red() < 230
               for c in grey)


def test_w_o_edit_changes_final_output_like_torch(window):
    window.load_preset("lesson-random-4x8")
    window.controls.heads_spin.setValue(2)
    window.view_tabs.setCurrentWidget(window.multihead)
    assert window.editors["W_O"].isVisible()
    window.edits.set_cell("W_O", 0, 1, 2.0)
    q, k, v = window.playground.state.projected()
    w_o = window.playground.state.matrices["W_O"]
    assert w_o[0, 1] == 2.0
    # independent check: torch's fused SDPA per head, then concat @ W_O
    split = lambda x: torch.tensor(x).view(x.shape[0], 2, -1).transpose(0, 1)  # noqa: E731
    heads = F.scaled_dot_product_attention(split(q), split(k), split(v))
    concat = heads.transpose(0, 1).reshape(q.shape[0], -1).numpy()
    np.testing.assert_allclose(window.multihead.concat.values(), concat, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(window.multihead.output.values(), concat @ w_o, rtol=1e-10, atol=1e-12)
    ref = multi_head_steps(q, k, v, 2, w_o=w_o)
    np.testing.assert_allclose(window.multihead.output.values(), ref.output)


def test_cross_attention_offers_no_causal_mask_and_keeps_shapes(window):
    window.load_preset("cat-sat-mat")
    window.tab.inputs.choose_mode(2)  # X_q, X_kv
    assert window.playground.state.kind == "cross" and window.editors["X_kv"].isVisible()
    window.dim_spins["Lk"].setValue(5)
    combo = window.controls.mask_combo
    assert not combo.model().item(combo.findData("causal")).isEnabled()
    assert window.pipeline.heatmaps["weights"].values().shape == (3, 5)
    window.dim_spins["Lk"].setValue(3)
    combo.setCurrentIndex(combo.findData("causal"))
    q, k, v = window.playground.state.projected()
    np.testing.assert_allclose(window.pipeline.heatmaps["weights"].values(),
                               attention_steps(q, k, v, mask=causal_mask(3)).weights)


def test_token_rename_shows_on_axes_and_undoes(window):
    window.load_preset("it-animal-street")
    window.key_tokens_edit.setText("dog, road, since")
    window.key_tokens_edit.editingFinished.emit()
    assert window.pipeline.heatmaps["weights"].col_labels() == ["dog", "road", "since"]
    window.key_tokens_edit.setText("only two")
    window.key_tokens_edit.editingFinished.emit()
    assert "3 token names" in window.error_label.text()
    window.undo_action.trigger()
    assert window.playground.state.key_tokens == ["animal", "street", "because"]


def test_theme_and_recent_files_are_remembered(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from app import create_main_window

    ini = str(tmp_path / "settings.ini")
    w = create_main_window(settings=QSettings(ini, QSettings.Format.IniFormat))
    w.confirm_on_close = False
    qtbot.addWidget(w)
    w.set_theme("dark")
    assert w.save_session_to(tmp_path / "a.json")
    w.close()
    w2 = create_main_window(settings=QSettings(ini, QSettings.Format.IniFormat))
    w2.confirm_on_close = False
    qtbot.addWidget(w2)
    assert w2.theme_actions["dark"].isChecked()
    assert w2.settings.recent_files() == [str(tmp_path / "a.json")]
    w2.close()


def test_export_heatmap_without_an_application(tmp_path):
    """The CLI path: no QApplication yet, offscreen, PNG + SVG + CSV with -inf for blocked scores."""
    code = (
        "import os, sys, numpy as np\n"
        "os.environ['QT_QPA_PLATFORM'] = 'offscreen'\n"
        "from app.widgets.file_export import export_heatmap\n"
        "from attention_core import attention_steps, causal_mask\n"
        "s = attention_steps(np.eye(3), np.eye(3), np.eye(3), mask=causal_mask(3))\n"
        "for suffix in ('png', 'svg', 'csv'):\n"
        f"    export_heatmap(os.path.join({str(tmp_path)!r}, 'm.' + suffix), s.masked, ['a','b','c'], ['a','b','c'],"
        " 'Masked', blocked=~s.mask)\n"
        "sys.stdout.flush(); os._exit(0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    numbers = [ln for ln in (tmp_path / "m.csv").read_text().splitlines() if not ln.startswith("#")]
    assert numbers[0] == "0.5773502691896258,-inf,-inf"
    assert ET.parse(tmp_path / "m.svg").getroot().tag.endswith("svg")
    img = QImage(str(tmp_path / "m.png"))
    assert img.width() > 500 and len({img.pixel(x, y) for x in range(0, img.width(), 9)
                                      for y in range(0, img.height(), 9)}) > 10


@pytest.mark.parametrize("bad", ["[]", '{"format": "attention-playground-session", "version": 99, "state": {}}',
                                 '{"format": "attention-playground-session", "version": 1, "state": {"mode": "qkv",'
                                 ' "kind": "self", "dims": {"Lq": 1, "Lk": 1, "d_k": 1, "d_v": 1, "d_model": 1},'
                                 ' "query_tokens": ["a"], "key_tokens": ["b"], "matrices": {"Q": [[1e999]]}}}'])
def test_bad_sessions_name_their_problem(window, tmp_path, monkeypatch, bad):
    from PySide6.QtWidgets import QMessageBox

    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: shown.append(a[2]))
    before = window.playground.state.snapshot()
    path = tmp_path / "bad.json"
    path.write_text(bad)
    assert not window.open_session(path)
    assert window.playground.state.snapshot() == before
    assert shown and ("not an Attention Playground" in shown[0] or "newer version" in shown[0]
                      or "NaN or infinity" in shown[0])


def test_multi_head_hover_explains_with_torch_numbers_and_highlights_sources(window, qtbot):
    """Hovering a head's weight, a concat cell and an output cell: the formula's numbers are torch's."""
    from app.playground.model.explain import fmt

    window.load_preset("lesson-random-4x8")
    window.controls.heads_spin.setValue(2)
    window.edits.set_cell("W_O", 0, 1, 2.0)
    window.view_tabs.setCurrentWidget(window.multihead)
    assert window.explain_label.isVisible()
    q, k, v = window.playground.state.projected()
    w_o = window.playground.state.matrices["W_O"]
    split = lambda x: torch.tensor(x).view(x.shape[0], 2, -1).transpose(0, 1)  # noqa: E731
    qh, kh, vh = split(q), split(k), split(v)
    weights = torch.softmax(qh @ kh.transpose(-1, -2) / (qh.shape[-1] ** 0.5), dim=-1)
    concat = F.scaled_dot_product_attention(qh, kh, vh).transpose(0, 1).reshape(q.shape[0], -1).numpy()
    d_head = qh.shape[-1]

    mh = window.multihead
    mh.head_maps[1].cellHovered.emit(2, 3)
    text = window.explain_label.text()
    assert "head 2 weight" in text and fmt(float(weights[1, 2, 3])) in text and "e^" in text
    assert mh.split_maps["Q"].overlay.highlight_rows == (2,)
    assert mh.split_maps["Q"].overlay.highlight_cols == tuple(range(d_head, 2 * d_head))
    assert mh.split_maps["K"].overlay.highlight_rows == (3,)
    assert mh.head_maps[1].overlay.highlight_cells == ((2, 3),)
    assert mh.head_maps[0].overlay.highlight_cells == ()

    col = d_head + 1  # concat column of head 2
    mh.concat.cellHovered.emit(0, col)
    text = window.explain_label.text()
    assert fmt(float(concat[0, col])) in text and "head 2" in text
    assert mh.head_maps[1].overlay.highlight_rows == (0,)
    assert mh.split_maps["V"].overlay.highlight_cols == (col,)

    mh.output.cellHovered.emit(1, 1)
    text = window.explain_label.text()
    assert fmt(float((concat @ w_o)[1, 1])) in text and "W_O" in text
    assert mh.w_o.overlay.highlight_cols == (1,) and mh.concat.overlay.highlight_rows == (1,)

    # click pins; switching to the Steps tab unpins and the pipeline's hover explains again
    mh.output.cellClicked.emit(1, 1)
    assert window.playground.pinned == ("mh_output", 1, 1) and mh.output.overlay.selected == (1, 1)
    window.view_tabs.setCurrentWidget(window.pipeline)
    assert window.playground.pinned is None and mh.output.overlay.selected is None
    assert "Hover over any cell" in window.explain_label.text()


def test_explain_multihead_refuses_cells_outside_the_maps(window):
    from app.playground.model.explain import explain_multihead

    m = window.playground
    window.load_preset("lesson-random-4x8")
    assert explain_multihead("head:0", 0, 0, m.state, m.computation).html == ""  # one head: no split
    window.controls.heads_spin.setValue(2)
    window.view_tabs.setCurrentWidget(window.multihead)
    for view, i, j in (("head:2", 0, 0), ("concat", 99, 0), ("w_o", 0, 99), ("split:Q", -1, 0), ("nope", 0, 0)):
        assert explain_multihead(view, i, j, m.state, m.computation).html == ""
    assert "goes to <b>head 2</b>" in explain_multihead("split:K", 0, 5, m.state, m.computation).html
