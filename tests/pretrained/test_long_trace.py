"""A 4,096-token trace on a tiny random Gemma-2 (grouped K/V heads, soft-capped scores, alternating 300-token
sliding windows, query_pre_attn_scalar) with 4,096 positions: nothing of size T² is kept per head, its memory stays
far below the full maps', each head's exact map computed on demand equals transformers' eager attention, and the
overview is the block max / mean of those maps. Reading what a long trace does not keep says what to use instead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from attention_core.pretrained import load_pretrained  # noqa: E402
from attention_core.pretrained.trace import LONG_TRACE_TOKENS, LongTraceError  # noqa: E402
from tests.tolerance import assert_close

T = 4096


@pytest.fixture(scope="module")
def gemma_long(tmp_path_factory) -> Path:
    import transformers as tr

    from tests.pretrained.conftest import (  # by its path: "conftest" may be another folder's
        VOCAB,
        _redraw,
        train_tokenizer,
    )

    cfg = tr.Gemma2Config(head_dim=8, query_pre_attn_scalar=12, sliding_window=300, attn_logit_softcapping=3.0,
                          final_logit_softcapping=4.0, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, hidden_size=32, intermediate_size=64, rms_norm_eps=1e-5,
                          vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                          max_position_embeddings=T)
    torch.manual_seed(7)
    model = tr.AutoModelForCausalLM.from_config(cfg)
    _redraw(model, 7)
    folder = tmp_path_factory.mktemp("long") / "gemma2-4k"
    model.save_pretrained(folder, safe_serialization=True)
    train_tokenizer(bos=True).save(str(folder / "tokenizer.json"))
    return folder


def _ids() -> np.ndarray:
    return np.random.default_rng(0).integers(3, 380, size=T)


def _rss_peak() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(scope="module")
def long_trace(gemma_long):
    model = load_pretrained(gemma_long, threads=1)
    model.trace(_ids()[:LONG_TRACE_TOKENS + 8])  # warm-up: lazy imports, the allocator, the rotary tables
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the current RSS
        base = _rss()
    except OSError:
        base = None
    trace = model.trace(_ids())
    grew = None if base is None else _rss_peak() - base
    return model, trace, grew


def test_a_long_trace_keeps_nothing_of_size_t_squared_per_head_and_stays_small(long_trace):
    model, trace, grew = long_trace
    info = trace.info
    full_maps = info.layers * info.heads * T * T * 4
    assert len(trace) == T and trace.is_long
    kept = [a for a in vars(trace).values() if isinstance(a, np.ndarray)]
    kept += [a for a in vars(trace.overview).values() if isinstance(a, np.ndarray)] + list(trace.top_kept)
    assert kept and max(a.size for a in kept) < T * T  # q, k, v, head outputs: (layers, heads, T, d) at most
    assert trace.overview.max.shape == (info.layers, info.heads, 128, 128) and trace.overview.block == 32
    masks = {id(m): m for m in trace.masks if m is not None}
    assert len(masks) <= 2 and all(m.dtype == bool for m in masks.values())  # one per distinct window, not per head
    assert trace.kept_bytes < full_maps / 10
    if grew is not None:  # the whole trace, transients included, stays well under the maps it no longer keeps
        assert grew < full_maps / 3, f"peak RSS grew {grew / 2**20:.0f} MiB (full maps {full_maps / 2**20:.0f})"
    assert trace.summary()["long"]["tokens"] == T


@pytest.fixture(scope="module")
def eager(gemma_long):
    import transformers as tr

    ref = tr.AutoModelForCausalLM.from_pretrained(gemma_long, attn_implementation="eager",
                                                  dtype=torch.float32).eval()
    with torch.no_grad():
        out = ref(torch.as_tensor(_ids())[None], output_attentions=True, use_cache=False)
    return torch.stack(out.attentions)[:, 0].numpy(), out.logits[0].numpy()


def test_each_head_map_computed_on_demand_equals_transformers_eager(long_trace, eager):
    _, trace, _ = long_trace
    att, _ = eager
    assert trace.spec.softcap is not None and {trace.spec.windows[0], trace.spec.windows[1]} == {300, None}
    for layer in range(trace.info.layers):
        for head in range(trace.info.heads):
            assert_close(trace.head_map(layer, head), att[layer, head])
    rows = slice(3000, 3256)  # a window of queries, as the head map shows while scrolled
    assert_close(trace.head_map(0, 3, rows), att[0, 3, rows])
    window = trace.spec.windows.index(300)
    assert (trace.head_map(window, 1, rows)[:, :2700] == 0).all()  # beyond the window: no weight


def test_the_overview_is_the_block_max_and_mean_of_the_exact_maps(long_trace, eager):
    _, trace, _ = long_trace
    att, _ = eager
    ov = trace.overview
    for layer, head in ((0, 0), (1, 3)):
        blocks = att[layer, head].reshape(128, 32, 128, 32)
        assert_close(ov.max[layer, head], blocks.max(axis=(1, 3)))
        assert_close(ov.mean[layer, head], blocks.mean(axis=(1, 3)))
        assert_close(ov.best_weight[layer, head], att[layer, head].max(axis=-1))
        rows = np.arange(T)
        assert_close(att[layer, head][rows, ov.best_key[layer, head]], att[layer, head].max(-1))


def test_what_a_long_trace_does_not_keep_is_refused_naming_what_to_use(long_trace, eager):
    _, trace, _ = long_trace
    for read in (lambda: trace.attentions[0, 0], lambda: np.asarray(trace.attentions), lambda: trace.scores,
                 lambda: trace.probabilities, lambda: np.asarray(trace.logits), lambda: trace.head_outputs[0]):
        with pytest.raises(LongTraceError, match="4,096 tokens long"):
            read()
    with pytest.raises(LongTraceError, match="head_map"):
        trace.attentions[0]
    assert trace.attentions.shape == (2, 4, T, T)  # the shape is still told
    _, logits = eager
    top = trace.top_next(5)
    want = np.argsort(-logits, axis=-1, kind="stable")[:, :5]
    assert [[i for _, i, _ in row] for row in top[:200]] == want[:200].tolist()
    p = torch.softmax(torch.as_tensor(logits[100], dtype=torch.float64), -1).numpy()
    np.testing.assert_allclose([q for _, _, q in top[100]], p[want[100]], rtol=1e-4)
    with pytest.raises(LongTraceError, match="20 likeliest"):
        trace.top_next(50)
    from attention_core.notebook import trace_svg

    assert "largest weight per block of 32 tokens" in trace_svg(trace)  # Jupyter draws the overview
    setting = trace.head_setting(1, 2)  # one head's parts stay O(T · d)
    assert setting["q"].shape == (T, 8) and setting["window"] == trace.spec.windows[1]


def test_a_short_trace_is_unchanged_and_has_the_same_overview(gemma_long):
    model = load_pretrained(gemma_long, threads=1)
    trace = model.trace(_ids()[:600])
    assert not trace.is_long and trace.attentions.shape == (2, 4, 600, 600) and trace.logits.shape[0] == 600
    np.testing.assert_array_equal(trace.head_map(1, 2), trace.attentions[1, 2])
    ov = trace.overview  # 600 / 128 → blocks of 5, 120 × 120
    assert ov.block == 5 and ov.max.shape == (2, 4, 120, 120)
    assert_close(ov.mean[0, 1], trace.attentions[0, 1].reshape(120, 5, 120, 5).mean(axis=(1, 3)))
    assert "long" not in trace.summary()
