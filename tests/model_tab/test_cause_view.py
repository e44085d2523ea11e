"""The Cause view in Qt (offscreen): the numbers drawn are ``session.cause``'s (which tests/model_tab/
test_cause_analysis.py holds to the library), a refused token is said under its field and the old value stays, the
patch map and its read-out, the knockout table, and the captions follow a text change."""

from __future__ import annotations

import numpy as np
import pytest

from tests.model_tab.test_cause_analysis import CORRUPTED, TEXT, gpt2_folder  # noqa: F401 (a fixture)


@pytest.fixture
def view(qtbot, gpt2_folder):  # noqa: F811
    from app.model_tab.model.session import InspectSession
    from app.model_tab.qt.cause_view import CauseView

    s = InspectSession()
    s.set_text(TEXT)
    s.load(gpt2_folder)
    assert s.wait_idle(120)
    opened = []
    v = CauseView(s, open_head=lambda: opened.append(s.selected))
    v.opened = opened
    qtbot.addWidget(v)
    v.resize(900, 600)
    v.show()
    assert s.cause.shown and s.cause.wait_idle(120)
    yield v
    s.shutdown()


def test_lens_table_and_curve_show_the_lens(view):
    s, lens = view.session, view.session.cause.lens
    panel = view.lens
    assert panel.table.rowCount() == 2 * 2 + 1
    assert panel.table.item(0, 0).text() == f"{lens.top[0][0][1]!r} {lens.top[0][0][2]:.3f}"
    x, y = panel.prob_curve.getData()
    np.testing.assert_array_equal(y, lens.probs_of(int(lens.top[-1][0][0])))
    assert panel.caption.text() == s.cause.lens_caption() and "position" in panel.caption.text()


def test_a_two_token_target_is_refused_under_the_field(view):
    panel = view.lens
    panel.target_edit.setText(" John")
    panel.target_edit.returnPressed.emit()
    assert not panel.error.isVisible()
    panel.target_edit.setText("John gave")
    panel.target_edit.returnPressed.emit()
    assert panel.error.isVisible() and "not one" in panel.error.text()
    assert view.session.cause.lens_target == " John"
    assert "' John' through the layers" in panel.curve_title.text()


def test_attribution_grid_and_click_opens_the_head(view, qtbot):
    view.tabs.setCurrentWidget(view.attribution)
    a = view.session.cause.attribution
    grid = view.attribution.grid
    np.testing.assert_array_equal(grid.values()[:, :-1], a.heads)
    np.testing.assert_array_equal(grid.values()[:, -1], a.mlps)
    assert f"= {a.total:+.4f}" in view.attribution.sums.text()
    grid.cellClicked.emit(1, 2)
    assert view.session.selected == (1, 2) and view.opened == [(1, 2)]


def test_patch_map_and_refusal_then_a_new_text_clears_it(view, qtbot):
    c, panel = view.session.cause, view.patch
    view.tabs.setCurrentWidget(panel)
    panel.corrupted_edit.setText("Mary and John")
    panel.patch_button.click()
    assert panel.error.isVisible() and "tokens" in panel.error.text() and c.patching is None
    panel.corrupted_edit.setText(CORRUPTED)
    panel.target_edit.setText(" Mary")
    panel.foil_edit.setText(" John")
    panel.sweep_box.setCurrentIndex(panel.sweep_box.findData("heads"))
    panel.patch_button.click()
    assert c.patch_running and not panel.patch_button.isEnabled() and panel.cancel_button.isEnabled()
    assert c.wait_idle(120)
    np.testing.assert_array_equal(panel.map.values(), np.nan_to_num(c.patching.restored))
    panel.map.cellHovered.emit(1, 0)
    assert f"restored {c.patching.restored[1, 0]:.3f}" in panel.readout.text()
    view.session.set_text("The quick brown fox")
    assert view.session.wait_idle(60)
    assert not panel.map.isVisible() and "changed" in panel.caption.text()


def test_knockout_table_and_kl(view):
    c, panel = view.session.cause, view.knockout
    view.tabs.setCurrentWidget(panel)
    n = len(view.session.trace)
    panel.edges_edit.setText(f"{n - 1}->0")
    panel.layers_edit.setText("0, 1.2")
    panel.run_button.click()
    assert c.wait_idle(60)
    ref = view.session.model.knockout(TEXT, [(n - 1, 0)], layers=[0, (1, 2)])
    assert panel.table.item(0, 2).text() == repr(ref.top_after[0][0])
    assert f"{ref.kl:.4g}" in panel.caption.text()
    panel.edges_edit.setText("oops")
    panel.run_button.click()
    assert panel.error.isVisible() and "not a query→key cell" in panel.error.text()
    assert panel.table.item(0, 2).text() == repr(ref.top_after[0][0])  # the old result stays


def test_cancel_leaves_the_cells_not_reached_hatched(view, monkeypatch):
    import attention_core.pretrained.cause.patching as patching

    c, panel = view.session.cause, view.patch
    view.tabs.setCurrentWidget(panel)
    monkeypatch.setattr(patching, "PATCH_BATCH_BYTES", 1)  # one cell per batch
    panel.corrupted_edit.setText(CORRUPTED)
    panel.patch_button.click()
    panel.cancel_button.click()
    assert c.wait_idle(120) and not c.patching.completed
    blocked = panel.map.blocked()
    np.testing.assert_array_equal(blocked, np.isnan(c.patching.restored))
    assert blocked.any() and "Cancelled" in panel.caption.text() and not panel.cancel_button.isEnabled()
