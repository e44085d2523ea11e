"""Long-range heads show at a long probe: on a GPT-2 whose weights are set by hand to copy from context
(tests/model_tab/detect_long_model.py: 0.0 previous-token, 0.1 first-token, 1.0 induction), the Detect view's probe at
2,401 positions finds each head, the second copy's loss falls to near zero, and the picked induction head's window,
centred on the circles, holds nearly all its weight there: its keys are 1,199 positions behind its queries, outside
any window on the diagonal."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from app.model_tab.model.detect_views import pattern  # noqa: E402
from app.model_tab.model.session import InspectSession  # noqa: E402
from tests.model_tab.detect_long_model import build_copying_gpt2  # noqa: E402

S = 1200


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = InspectSession()
    s.load(build_copying_gpt2(tmp_path_factory.mktemp("detect-copying") / "gpt2-copying"))
    assert s.wait_idle(120) and s.model is not None
    s.heads.set_probe_length(S)
    s.heads.detect()
    assert s.heads.wait_idle(300) and s.heads.detection is not None
    yield s
    s.shutdown()


def test_each_head_is_found_at_a_long_probe(session):
    a = session.heads
    d = a.detection
    assert d.is_long and d.positions == 1 + 2 * S
    assert d.scores["induction"].best() == (1, 0) and d.scores["induction"].scores[1, 0] > 0.99
    assert d.scores["previous-token"].best() == (0, 0) and d.scores["previous-token"].scores[0, 0] > 0.99
    assert d.scores["first-token"].best() == (0, 1) and d.scores["first-token"].scores[0, 1] > 0.5
    assert d.repeat.second_half_loss < 0.1 < 5 < d.repeat.first_half_loss
    a.set_kind("induction")
    assert a.heads_above() == [(1, 0)]


def test_the_window_centred_on_the_circles_holds_the_induction_heads_weight(session):
    a = session.heads
    session.select_head(1, 0)
    a.probe.set_window(query=1 + S + 500, size=64)
    a.probe.centre_on("induction")
    q, k, size = a.probe.window
    assert (q, k) == (1 + S + 500, 1 + 500 + 1)  # key q - S + 1: 1,199 behind
    p = pattern(a, 1, 0)
    assert len(p.marks) == size and all(mk == mq for mq, mk in p.marks)  # the window's diagonal
    circled = np.array([p.values[mq, mk] for mq, mk in p.marks])
    assert circled.min() > 0.9 and np.allclose(p.values.sum(axis=1), circled, atol=0.05)
    a.probe.set_window(key=q)  # the same queries on the diagonal: almost nothing there
    assert pattern(a, 1, 0).values.max() < 0.05 and pattern(a, 1, 0).marks == []
