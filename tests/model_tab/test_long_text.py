"""The Model tab with a 4,096-token text on a tiny random Llama with 4,096 positions: the trace runs off the GUI
thread and the status says how long and how large it is; the head grid draws each head's pooled map; the head
map shows the exact weights of a window of positions and scrolls (wheel) and zooms (Ctrl+wheel) to any position; the
flow joins blocks of positions. The exact windows are checked against the same text traced whole (the full path,
itself checked against transformers' eager attention in tests/pretrained)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.model_tab.model.session import MAP_WINDOW, InspectSession  # noqa: E402
from app.model_tab.qt.views import HeadMapView, HeadsGridView, LayerFlowView  # noqa: E402
from tests.tolerance import assert_close

T = 4096
TEXT = " ".join(f"w{(i * 7) % 90}" for i in range(T))


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    import torch
    import transformers as tr
    from tokenizers import Tokenizer, models, pre_tokenizers

    cfg = tr.LlamaConfig(num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, hidden_size=16,
                         intermediate_size=32, vocab_size=100, max_position_embeddings=T, bos_token_id=0,
                         eos_token_id=0, pad_token_id=0)
    torch.manual_seed(3)
    model = tr.LlamaForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape) * 1.5 / p.shape[-1] ** 0.5)
    folder = tmp_path_factory.mktemp("long-tab") / "llama-4k"
    model.save_pretrained(folder, safe_serialization=True)
    vocab = {"<unk>": 0, **{f"w{i}": i + 1 for i in range(90)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="module")
def traced(long_model):
    s = InspectSession()
    s.load(long_model)
    assert s.wait_idle(300) and s.model is not None
    s.set_text(TEXT)
    assert s.tracing  # set_text returned at once: the trace runs on the session's worker, not this thread
    assert s.wait_idle(300) and s.trace is not None
    import attention_core.pretrained.model as pm

    old = pm.LONG_TRACE_TOKENS
    pm.LONG_TRACE_TOKENS = 10**9  # the same text traced whole: the reference for every window
    try:
        full = s.model.trace(TEXT)
    finally:
        pm.LONG_TRACE_TOKENS = old
    yield s, full
    s.shutdown()


def test_the_status_says_how_long_and_how_large_the_trace_is(traced):
    s, full = traced
    t = s.trace
    assert len(t) == T and t.is_long and not full.is_long
    assert f"{T:,} tokens traced" in s.status and f"{t.kept_bytes / 2**20:.1f} MB kept" in s.status
    assert "blocks of 32 tokens" in s.status
    assert t.kept_bytes < full.attentions.nbytes / 10
    # the next-token list reads one position's kept top tokens (naming all 4,096 positions' took ~1 s)
    assert [i for _, i, _ in s.top_next(100)] == [i for _, i, _ in full.top_next(5)[100]]
    assert s.top_next(100)[0][2] == pytest.approx(full.top_next(5)[100][0][2], rel=1e-4)


def test_the_grid_draws_every_heads_pooled_map(traced, qtbot):
    s, full = traced
    grid = HeadsGridView(s)
    qtbot.addWidget(grid)
    grid.redraw()
    for layer in range(2):
        for head in range(2):
            want = full.attentions[layer, head].reshape(128, 32, 128, 32).max(axis=(1, 3))
            assert_close(grid.values(layer, head), want)
    assert grid.labels()[:2] == ["0–31", "32–63"] and len(grid.labels()) == 128  # at most 128 cells a side


def _wheel(view: HeadMapView, notches: int, ctrl: bool = False, shift: bool = False) -> None:
    vp = view.graphics.viewport()
    mods = (Qt.KeyboardModifier.ControlModifier if ctrl else Qt.KeyboardModifier.ShiftModifier if shift
            else Qt.KeyboardModifier.NoModifier)
    ev = QWheelEvent(QPointF(20, 20), QPointF(vp.mapToGlobal(QPoint(20, 20))), QPoint(0, 0), QPoint(0, 120 * notches),
                     Qt.MouseButton.NoButton, mods, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(vp, ev)


def test_the_head_map_shows_an_exact_window_and_scrolls_and_zooms_to_any_position(traced, qtbot):
    s, full = traced
    view = HeadMapView(s)
    qtbot.addWidget(view)  # not shown: what is checked is the data it draws and the wheel it takes
    s.select_head(1, 1)
    view.redraw()

    def shown() -> tuple[int, int]:
        view.redraw()
        start, size = s.map_window
        assert_close(view.values(), full.attentions[1, 1, start:start + size, start:start + size])
        assert view.row_labels()[0].startswith(f"w{(start * 7) % 90}")
        return start, size

    assert shown() == (T - MAP_WINDOW, MAP_WINDOW)  # a long text opens on its end
    assert view.values().shape == (MAP_WINDOW, MAP_WINDOW)
    _wheel(view, 2)  # wheel up: earlier positions, a quarter window a notch
    assert shown() == (T - MAP_WINDOW - MAP_WINDOW // 2, MAP_WINDOW)
    _wheel(view, 1, ctrl=True)  # zoom in around the middle
    start, size = shown()
    assert size == MAP_WINDOW // 2 and start == T - MAP_WINDOW - MAP_WINDOW // 2 + MAP_WINDOW // 4
    for _ in range(4):
        _wheel(view, -1, ctrl=True)  # zoom out: bounded by the largest window
    assert shown()[1] == 512
    s.set_map_window(1000)  # any position (what a click in the grid's block does)
    assert shown() == (1000, 512)
    s.set_map_window(-50)
    assert shown()[0] == 0
    s.set_map_window(10**6)
    assert shown()[0] == T - 512
    view._hovered(3, 5)  # a cell of the window reads its true positions
    assert f"(position {T - 512 + 3})" in view.readout and f"(position {T - 512 + 5})" in view.readout
    assert s.hovered == T - 512 + 3


def test_the_flow_joins_blocks_of_positions(traced):
    s, full = traced
    flow = LayerFlowView(s)
    data = flow.current_data()
    assert data is not None and len(data.query_tokens) == 128 and "blocks of 32 tokens" in data.title
    w = np.asarray(data.weights)
    want = full.attentions[s.selected[0]].reshape(2, 128, 32, 128, 32).sum(axis=4).mean(axis=2)
    assert_close(w, want)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, atol=1e-4)  # a query block's weights still sum to one


def test_the_tab_takes_the_long_trace_measuring_each_distinct_token_once_and_colouring_the_mosaic_once(
        long_model, qtbot, monkeypatch):
    """What runs on the GUI thread when a 4,096-token trace arrives (505 ms once, the longest stall): the token
    strip measured all 4,096 tokens twice and pyqtgraph coloured the mosaic's 7.5-million-pixel float tile through
    its NaN path. Counted here, on a session of its own (the shared one still reaches the views of the tests
    above, whose widgets are gone) whose tab takes the trace as the window does: one measurement per distinct
    token, no pyqtgraph colouring, the mosaic's colours those of the trace's pooled maps."""
    from pyqtgraph import functions_qimage
    from PySide6.QtGui import QFontMetricsF

    import app.model_tab.qt.tokens as tokens_module
    from app.model_tab.qt.tab import ModelTab
    from app.widgets.grid.mosaic import colour_table, mosaic_colours

    measured: list[str] = []
    coloured: list[object] = []

    class Counting(QFontMetricsF):
        def horizontalAdvance(self, *args):  # noqa: N802 (Qt API)
            measured.append(str(args[0]))
            return super().horizontalAdvance(*args)

    real = functions_qimage._rescale_and_lookup_float
    monkeypatch.setattr(tokens_module, "QFontMetricsF", Counting)
    monkeypatch.setattr(functions_qimage, "_rescale_and_lookup_float",
                        lambda *a, **k: coloured.append(a[1].shape) or real(*a, **k))
    s = InspectSession()
    s.set_text(TEXT)  # no model yet: kept for the load, which traces it
    tab = ModelTab(s)
    qtbot.addWidget(tab)  # not shown (the head map is not drawn)
    tab.resize(1100, 700)
    try:
        s.load(long_model)
        assert s.wait_idle(300) and s.trace is not None and len(s.trace) == T  # it arrived through the session
        tab.resize(900, 700)  # the strip rewraps
        qtbot.waitUntil(lambda: not tab.grid.colouring, timeout=5_000)
        tab.grid.grab()
        # 90 distinct tokens measured once each (before: 4,096 measurements a layout, two layouts on arrival)
        assert sorted(measured) == sorted(set(s.trace.tokens))
        assert tab.tokens.tokens == s.trace.tokens and len(tab.tokens._inner.boxes) == T
        assert coloured == []
        np.testing.assert_array_equal(tab.grid.image.image, mosaic_colours(s.trace.overview.max, colour_table()))
    finally:
        s.shutdown()


def test_a_deleted_grid_is_not_kept_alive_by_the_session(traced, qapp):
    """The session's events held the heads grid through lambdas: every grid made on a session lived as long as it,
    and once its widget was deleted the next announcement raised "Internal C++ object (HeadsGridView) already
    deleted" (this module's shared session, tests/pretrained/test_pretrained.py in the same process)."""
    import gc
    import weakref

    from PySide6.QtCore import QCoreApplication, QEvent

    s, _full = traced
    grid = HeadsGridView(s)
    gone = weakref.ref(grid)
    grid.deleteLater()
    del grid
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    assert gone() is None  # nothing but the test held it
    s._announce("trace", "selected")  # reaches no deleted widget
    s.heads._announce("detection")


def test_the_head_maps_keys_move_apart_from_its_queries_to_any_position(traced, qtbot, tmp_path):
    """The window was square on the diagonal: a query's weight on a key far before it (an induction head's stripe,
    a sink) could not be shown exactly. Shift+wheel (or a click on an off-diagonal block of the grid) moves the keys
    alone; scrolling and zooming then keep the distance; a new trace opens on the diagonal again."""
    s, full = traced
    view = HeadMapView(s)
    qtbot.addWidget(view)
    s.select_head(1, 0)
    s.set_map_window(2000, 128, keys=40)

    def shown() -> tuple[int, int, int]:
        view.redraw()
        (start, size), keys = s.map_window, s.map_keys
        assert_close(view.values(), full.attentions[1, 0, start:start + size, keys:keys + size])
        assert view.row_labels()[0].startswith(f"w{(start * 7) % 90}")
        assert view.col_labels()[0].startswith(f"w{(keys * 7) % 90}")
        return start, size, keys

    assert shown() == (2000, 128, 40)
    assert f"queries 2,000–2,127 × keys 40–167 of {T:,}" in view.title() and "wheel" in view.title()
    view.export(tmp_path / "window.csv")  # a file names the window, not the gestures that move it on screen
    head = (tmp_path / "window.csv").read_text(encoding="utf-8").splitlines()[0]
    assert f"queries 2,000–2,127 × keys 40–167 of {T:,}" in head and "wheel" not in head
    _wheel(view, 1)  # the wheel: both, the same distance apart
    assert shown() == (2000 - 32, 128, 40 - 32)
    _wheel(view, -2, shift=True)  # Shift+wheel: the keys alone
    assert shown() == (1968, 128, 8 + 64)
    _wheel(view, -1, ctrl=True)  # zoom out around both middles
    assert shown() == (1968 - 64, 256, 72 - 64)
    s.set_map_window(0, keys=-99)  # clamped into the text
    assert shown()[2] == 0
    view._hovered(3, 5)  # a cell reads its query's and its key's own positions
    start, keys = s.map_window[0], s.map_keys
    assert f"(position {start + 3})" in view.readout and f"(position {keys + 5}) " in view.readout

    grid = HeadsGridView(s)  # a click on a block off the diagonal opens the window there, queries and keys
    qtbot.addWidget(grid)
    grid._cell = (100, 40)
    grid._pick(1, 0)
    block, size = 32, s.map_window[1]
    assert s.map_window[0] == 100 * block + block // 2 - size // 2 and s.map_keys == 40 * block + block // 2 - size // 2
    assert shown()[0] == s.map_window[0]
