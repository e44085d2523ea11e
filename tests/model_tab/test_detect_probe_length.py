"""The Detect view's probe length: the model's check (whole numbers from 2 to what the model holds, refused with the
reason and nothing changed), the control beside "Probe length:" (a refusal under it, the length kept shown in it; a
good one runs the detectors at that length), and the window the view shows of a long probe: the wheel, Shift+wheel
and Ctrl+wheel over the map or the curve, the scroll bars and the zoom buttons move it, and the caption says where it
is. The numbers drawn are the detection's exact windows (tests/model_tab/test_detect_long_probe.py checks those
against transformers)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from qt_settle import settled

pytest.importorskip("transformers")

from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.model_tab.model.detect_probe import DetectProbe, parse_tokens  # noqa: E402
from app.model_tab.model.session import InspectSession  # noqa: E402


@pytest.fixture(scope="module")
def session(long_session):  # conftest's: the 4,096-position Llama, opened for this module
    return long_session


def test_the_length_is_checked_against_the_model_and_a_refusal_changes_nothing(session, induction_model):
    a, model = session.heads, session.model
    assert DetectProbe.room(model) == 2047 and DetectProbe.default(model) == 50
    assert parse_tokens("") is None and parse_tokens(" default ") is None and parse_tokens("1,024") == 1024
    for bad, reason in (("abc", "whole number"), ("2.5", "whole number"), ("1", "2 to 2,047 tokens"),
                        ("-3", "2 to 2,047"), ("2048", "4,095 positions: BOS + 2 × 2,047"), ("1e9", "2 to 2,047")):
        a.set_probe_length(300)
        with pytest.raises(ValueError, match=re.escape(reason)):
            a.set_probe_length(bad)
        assert a.probe.tokens == 300, bad  # the length kept
    a.set_probe_length("")
    assert a.probe.tokens is None  # the default
    a.set_probe_length("50")
    assert a.probe.tokens is None  # the default's own length is the default
    no_model = DetectProbe()
    with pytest.raises(ValueError, match="open a model first"):
        no_model.set_tokens(10, None)
    assert no_model.set_tokens("", None) is False
    # this app's induction model: 12 positions, so 5 tokens a copy at most
    own = InspectSession()
    own.load(induction_model)
    assert own.wait_idle(60)
    with pytest.raises(ValueError, match="2 to 5 tokens .*10 positions"):
        own.heads.set_probe_length(6)
    own.heads.set_probe_length(4)
    assert own.heads.probe.tokens == 4 and own.heads.probe.seq_len(own.model) == 4
    own.shutdown()


def _wheel(widget, notches: int, mods=Qt.KeyboardModifier.NoModifier) -> None:
    vp = widget.viewport()
    ev = QWheelEvent(QPointF(20, 20), QPointF(vp.mapToGlobal(QPoint(20, 20))), QPoint(0, 0), QPoint(0, 120 * notches),
                     Qt.MouseButton.NoButton, mods, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(vp, ev)


def test_the_control_refuses_beside_itself_runs_a_good_length_and_the_window_follows_every_gesture(session, qtbot):
    from app.model_tab.qt.detect_view import DetectView

    a = session.heads
    a.set_probe_length("")
    view = DetectView(session)
    qtbot.addWidget(view)
    view.resize(1300, 800)
    view.show()
    qtbot.waitExposed(view)
    assert a.wait_idle(60) and a.detection is not None and a.detection.positions == 101  # the default probe
    assert view.length_edit.text() == "50" and view.length_note.text() == "tokens × 2 = 101 positions"
    assert not view.pattern_window.query_bar.isVisible() and "All 101 positions shown" in view.pattern_caption.text()
    detection = a.detection
    view.length_edit.setText("5000")
    view.length_edit.editingFinished.emit()
    assert view.length_error.isVisible() and "2 to 2,047 tokens" in view.length_error.text()
    assert view.length_edit.text() == "50" and a.probe.tokens is None and a.detection is detection and not a.busy
    view.length_edit.setText("1000")
    view.length_edit.editingFinished.emit()
    assert not view.length_error.isVisible() and a.detecting and view.busy.isVisibleTo(view)
    assert a.wait_idle(120) and a.detection.seq_len == 1000 and a.detection.is_long
    settled(qtbot)
    n = a.detection.positions
    assert n == 2001 and view.length_note.text() == "tokens × 2 = 2,001 positions"
    session.select_head(0, 1)
    win = view.pattern_window

    def shown() -> tuple[int, int, int]:
        q, k, size = a.probe.window
        np.testing.assert_allclose(view.pattern.values(), a.detection.window(0, 1, q, k, size), atol=0)
        assert (win.query_bar.value(), win.key_bar.value()) == (q, k) and win.query_bar.maximum() == n - size
        assert f"queries {q:,}–{q + size - 1:,} × keys {k:,}–{k + size - 1:,} of 2,001" in view.pattern_caption.text()
        x, _ = view.curve.curve.getData()
        assert (x[0], x[-1]) == (q, q + size - 1)
        return q, k, size

    assert win.query_bar.isVisible() and shown() == (937, 0, 128)  # around the second copy's start, 1,001
    _wheel(view.pattern.graphics, 1)  # wheel up over the map: queries and keys a quarter window earlier
    assert shown() == (905, 0, 128)
    _wheel(view.pattern.graphics, -2, Qt.KeyboardModifier.ShiftModifier)  # the keys alone
    assert shown() == (905, 64, 128)
    _wheel(view.curve.plot_widget, 1, Qt.KeyboardModifier.ControlModifier)  # zoom in, over the curve too
    assert shown() == (937, 96, 64)
    view.pattern_window.zoom_out.click()
    assert shown() == (905, 64, 128)
    win.key_bar.setValue(500)  # the bars set one side each
    assert shown() == (905, 500, 128)
    win.query_bar.setValue(1800)
    assert shown() == (1800, 500, 128)
    win.centre_button.click()  # induction: key q - S + 1 for the middle query
    assert shown() == (1800, 1800 + 64 - 1000 + 1 - 64, 128)
    assert (64, 64) in view.pattern.marks()
