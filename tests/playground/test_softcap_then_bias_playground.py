"""The Playground with ALiBi and a soft-cap: every place that shows or writes the two steps has the soft-cap first and
the bias after it, c·tanh(s/c) + bias, as transformers' Gemma 2, FlashAttention and ONNX compute (the library's side:
tests/core/test_softcap_then_bias.py). Numbers against a hand computation written here; the arrows, the hover
formulas, the figure's and the grid's order, Copy as code (run in a fresh interpreter) and the export file names.
Before, each of these had the bias first and capped c·tanh((s + b)/c), and ③'s arrow read "② ⟶ + mask"."""

from __future__ import annotations

import numpy as np

from app.playground.model.code_export import OPTIONAL_LINES, STEP_LINES, script_for_model
from app.playground.model.playground import PlaygroundModel
from app.playground.model.shown import OPTIONAL_VIEWS
from app.playground.model.texts import flow_html
from tests.playground.test_code_export_modern import run_script

CAP = 0.4


def capped_and_biased(heads: int = 1, mask: str = "causal") -> PlaygroundModel:
    m = PlaygroundModel("lesson-random-4x8")
    m.set_mode("qkv")
    m.set_heads(heads)
    m.set_alibi(True)
    m.set_softcap(CAP)
    m.set_mask(mask)
    return m


def by_hand(q: np.ndarray, k: np.ndarray, v: np.ndarray, slope: float, causal: bool):
    """Soft-cap, then ALiBi's −slope·|i − j|, then the mask, then softmax; float64, one head."""
    n = q.shape[0]
    scaled = q @ k.T / np.sqrt(q.shape[1])
    capped = CAP * np.tanh(scaled / CAP)
    biased = capped - slope * np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    x = np.where(np.tril(np.ones((n, n), dtype=bool)), biased, -np.inf) if causal else biased
    e = np.exp(x - x.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return capped, biased, weights, weights @ v


def test_the_playgrounds_numbers_are_soft_capped_then_biased():
    m = capped_and_biased()
    q, k, v = (m.matrices[n] for n in "QKV")
    capped, biased, weights, output = by_hand(q, k, v, 2.0 ** -8, causal=True)  # one head: slope 2^-8
    r = m.result
    np.testing.assert_allclose(r.capped, capped, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.biased, biased, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.weights, weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.output, output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.flash.output, output, rtol=0, atol=1e-12)  # the Tiles view's tiled pass


def test_the_multi_head_view_soft_caps_each_head_then_adds_its_own_slope():
    m = capped_and_biased(heads=2)
    q, k, v = (m.matrices[n] for n in "QKV")
    d = q.shape[1] // 2
    for h, slope in enumerate((2.0 ** -4, 2.0 ** -8)):  # Press et al., two heads: 2^(-8i/2)
        cols = slice(h * d, (h + 1) * d)
        _c, _b, weights, _o = by_hand(q[:, cols], k[:, cols], v[:, cols], slope, causal=True)
        np.testing.assert_allclose(m.computation.heads.heads.weights[h], weights, rtol=0, atol=1e-12, err_msg=h)


def test_copy_as_code_prints_the_soft_cap_before_the_bias_with_the_hand_numbers(tmp_path):
    m = capped_and_biased(heads=2)
    m.set_kv_heads(1)  # the script's per-head section too
    script = script_for_model(m)
    assert script.index("capped = softcap * np.tanh(scaled / softcap)") < script.index("biased = capped + bias")
    printed, _ = run_script(script, tmp_path)
    assert [f for f in printed if f in ("capped", "biased")] == ["capped", "biased"]
    assert list(printed)[:2 + len(STEP_LINES)] == ["capped", "biased", *(f for f, _ in STEP_LINES)]
    q, k, v = (m.matrices[n] for n in "QKV")
    k2, v2 = np.concatenate([k, k], axis=1), np.concatenate([v, v], axis=1)  # one K/V head read by both
    capped, biased, weights, output = by_hand(q, k2, v2, 2.0 ** -4, causal=True)  # head 0's slope of 2 heads
    for field, expected in (("capped", capped), ("biased", biased), ("weights", weights), ("output", output),
                            ("flash_output", output)):
        np.testing.assert_allclose(printed[field][2], expected, rtol=0, atol=1e-12, err_msg=field)
    d = q.shape[1] // 2
    for h, slope in enumerate((2.0 ** -4, 2.0 ** -8)):
        _c, _b, w, _o = by_hand(q[:, h * d:(h + 1) * d], k, v, slope, causal=True)
        np.testing.assert_allclose(printed[f"head:{h}"][2], w, rtol=0, atol=1e-12, err_msg=f"head {h}")
    assert [f for f, _ in OPTIONAL_LINES] == ["q_rotated", "k_rotated", "capped", "biased"]


def test_the_arrows_name_the_map_each_step_is_made_from():
    m = capped_and_biased(mask="none")
    flow = flow_html(m.state, m.computation)
    assert flow["capped"].startswith("② ⟶ <b>c·tanh(x / c)</b>")
    assert flow["biased"].startswith("ⓒ ⟶ <b>+ bias</b>")
    assert flow["masked"].startswith("ⓑ ⟶ <b>+ mask</b>") and "no mask: same as ⓑ" in flow["masked"]
    m.set_alibi(False)
    flow = flow_html(m.state, m.computation)
    assert "biased" not in flow and flow["masked"].startswith("ⓒ ⟶ <b>+ mask</b>")
    m.set_softcap(None)
    assert flow_html(m.state, m.computation)["masked"].startswith("② ⟶ <b>+ mask</b>")


def test_the_hover_formulas_say_the_bias_is_added_to_the_capped_scores():
    m = capped_and_biased()
    r = m.result
    m.pin("biased", 3, 1)
    assert "capped + bias" in m.explanation and "after the soft-cap" in m.explanation
    assert f"{r.capped[3, 1]:.4g}".replace("-", "−") in m.explanation
    assert f"{r.biased[3, 1]:.4g}".replace("-", "−") in m.explanation
    assert set(m.highlights) == {"capped", "biased"}
    m.pin("capped", 3, 0)
    assert "tanh(scaled / c)" in m.explanation and f"{r.scaled[3, 0]:.4g}".replace("-", "−") in m.explanation
    assert set(m.highlights) == {"scaled", "capped"}
    m.pin("masked", 3, 1)
    assert "= biased =" in m.explanation and set(m.highlights) == {"biased", "masked"}


def test_every_list_of_the_step_maps_has_the_soft_cap_before_the_bias():
    from app.playground.cli import OPTIONAL_VIEWS as CLI_VIEWS
    from app.playground.qt.exports import OPTIONAL_FILES
    from app.playground.qt.pipeline import READING_ORDER, shown_steps
    from app.playground.qt.pipeline_figure import ROW_STEPS
    from attention_core import OPTIONAL_STEPS

    for order in (READING_ORDER, ROW_STEPS, OPTIONAL_VIEWS, CLI_VIEWS, OPTIONAL_STEPS):
        assert order.index("capped") < order.index("biased"), order
    assert sorted(OPTIONAL_FILES.values()).index(OPTIONAL_FILES["capped"]) < sorted(
        OPTIONAL_FILES.values()).index(OPTIONAL_FILES["biased"])
    assert shown_steps(capped_and_biased().result) == ("scores", "scaled", "capped", "biased", "masked", "weights",
                                                       "output")
