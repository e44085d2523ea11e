"""attention_core's results draw themselves in Jupyter (attention_core.notebook): valid SVG, the numbers in the cells
equal an independent softmax to the digits shown, hover titles name query → key, and no Qt (nor torch) is loaded."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest

from attention_core import attention_steps, causal_mask, get_preset, multi_head_steps
from attention_core.notebook import Drawing, draw, multihead_svg, number, steps_svg, token_text, trace_svg
from attention_core.pretrained.trace import ModelInfo, Trace

NS = "{http://www.w3.org/2000/svg}"


def reference_weights(q: np.ndarray, k: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """softmax(q kᵀ / √d) by hand, row by row (not attention_steps)."""
    out = np.zeros((q.shape[0], k.shape[0]))
    for i in range(q.shape[0]):
        s = np.array([float(np.dot(q[i], k[j])) / np.sqrt(q.shape[1]) for j in range(k.shape[0])])
        if allowed is not None:
            s = np.where(allowed[i], s, -np.inf)
        e = np.exp(s - s.max())
        out[i] = e / e.sum()
    return out


def panels(svg: str) -> list[ET.Element]:
    """The maps of a drawing: the groups that start with a bold title."""
    root = ET.fromstring(svg)  # valid XML, or this raises
    assert root.tag == f"{NS}svg"
    return [g for g in root.iter(f"{NS}g") if (t := g.find(f"{NS}text")) is not None and "bold" in t.get("style", "")]


def cells(panel: ET.Element) -> list[tuple[str, str | None]]:
    """(hover title, printed number) of every cell of one map, row by row."""
    out = []
    for g in panel.findall(f"{NS}g"):
        title = g.find(f"{NS}title")
        text = g.find(f"{NS}text")
        out.append((title.text, None if text is None else text.text))
    return out


def test_the_cat_sat_mat_weights_are_drawn_with_the_numbers_softmax_gives() -> None:
    p = get_preset("cat-sat-mat")
    steps = attention_steps(p.q, p.k, p.v)
    svg = steps_svg(steps, p.query_tokens, p.key_tokens)
    maps = panels(svg)
    assert [m.find(f"{NS}text").text for m in maps] == [
        "① Scores Q·Kᵀ", "② × scale", "③ Masked", "④ Softmax weights", "⑤ Output = weights·V"]
    weights = cells(maps[3])
    ref = reference_weights(p.q, p.k)
    assert len(weights) == 9
    for n, (title, shown) in enumerate(weights):
        i, j = divmod(n, 3)
        assert shown == f"{ref[i, j]:.2f}"
        assert title == f"{p.query_tokens[i]} → {p.key_tokens[j]}: {ref[i, j]:.4f}"
    scores = cells(maps[0])
    assert scores[1][1] == f"{float(np.dot(p.q[0], p.k[1])):.2f}"  # cat · sat, by hand


def test_masked_keys_read_minus_infinity_and_zero_weight() -> None:
    p = get_preset("cat-sat-mat")
    allowed = causal_mask(3)
    maps = panels(steps_svg(attention_steps(p.q, p.k, p.v, mask=allowed), p.query_tokens, p.key_tokens))
    masked, weights = cells(maps[2]), cells(maps[3])
    assert masked[1] == ("cat → sat: −∞", "−∞") and masked[2][1] == "−∞"
    ref = reference_weights(p.q, p.k, allowed)
    assert [w for _, w in weights] == [f"{x:.2f}" for x in ref.ravel()]
    assert weights[1][1] == "0.00"  # never "-0.00"


def test_large_maps_keep_hover_titles_but_drop_the_numbers() -> None:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(20, 4))
    maps = panels(steps_svg(attention_steps(q, q, q)))
    weights = cells(maps[3])
    assert len(weights) == 400 and all(shown is None for _, shown in weights)
    assert weights[21][0].startswith("q1 → k1: ")


def test_repr_html_of_every_result_holds_inline_svg() -> None:
    p = get_preset("cat-sat-mat")
    steps = attention_steps(p.q, p.k, p.v)
    mh = multi_head_steps(p.q, p.k, p.v, 2)
    for html in (steps._repr_html_(), mh._repr_html_(), draw(mh, p.query_tokens)._repr_html_()):
        svg = re.search(r"<svg.*</svg>", html, re.S).group(0)
        ET.fromstring(svg)
    maps = panels(multihead_svg(mh, p.query_tokens))
    assert [m.find(f"{NS}text").text for m in maps][:2] == ["head 0: weights", "head 1: weights"]
    head1 = reference_weights(p.q[:, 2:], p.k[:, 2:])
    assert [w for _, w in cells(maps[1])] == [f"{x:.2f}" for x in head1.ravel()]
    concat = cells(maps[2])
    assert concat[0][0] == f"cat · d0: {float(mh.concat[0, 0]):.4f}"
    assert isinstance(draw(steps), Drawing) and draw(steps).svg.startswith("<svg")
    with pytest.raises(TypeError, match="AttentionSteps"):
        draw(object())
    with pytest.raises(ValueError, match="2 names for 3"):
        steps_svg(steps, ["a", "b"])


def tiny_trace(t: int = 3, layers: int = 2, heads: int = 2, ablated: tuple = ()) -> Trace:
    rng = np.random.default_rng(1)
    d = 4
    q = rng.normal(size=(layers, heads, t, d)).astype(np.float32)
    k = rng.normal(size=(layers, heads, t, d)).astype(np.float32)
    v = rng.normal(size=(layers, heads, t, d)).astype(np.float32)
    allowed = causal_mask(t)
    att = np.stack([np.stack([reference_weights(q[la, h], k[la, h], allowed) for h in range(heads)])
                    for la in range(layers)]).astype(np.float32)
    info = ModelInfo("gpt2", "gpt2", layers, heads, heads, d * heads, d, 10, 0, 64, "float32", 0)
    tokens = ["The", " cat\n", "<&>"][:t] + [f"t{i}" for i in range(3, t)]
    return Trace("tiny", np.arange(t), tokens, np.zeros((t, 10), np.float32), att, info, q=q, k=k, v=v,
                 head_outputs=att @ v, scales=(0.5,) * layers, masks=(allowed,) * layers, ablated=ablated)


def test_a_trace_draws_its_layer_by_head_grid_with_hover_weights() -> None:
    trace = tiny_trace(ablated=((1, 0),))
    svg = re.search(r"<svg.*</svg>", trace._repr_html_(), re.S).group(0)
    root = ET.fromstring(svg)
    titles = [e.text for e in root.iter(f"{NS}title")]
    assert "layer 1, head 0 (switched off)" in titles and "layer 0, head 1" in titles
    tokens = [token_text(s) for s in trace.tokens]
    assert tokens[1] == " cat↵"
    w = float(trace.attentions[1, 1, 2, 1])
    assert f"L1 H1: {tokens[2]} → {tokens[1]}: {w:.4f}" in titles
    assert sum(t.startswith("L0 H0: ") for t in titles) == 9
    # one head's five steps, named by the trace's tokens: its weights are the trace's own
    head = draw(trace.head_steps(1, 1), trace.tokens)
    weights = cells(panels(head.svg)[3])
    assert [s for _, s in weights] == [number(x) for x in trace.attentions[1, 1].ravel()]
    assert ET.fromstring(draw(trace).svg) is not None


def test_a_long_trace_is_drawn_with_embedded_pngs() -> None:
    trace = tiny_trace(t=120, layers=2, heads=2)
    root = ET.fromstring(trace_svg(trace))
    images = list(root.iter(f"{NS}image"))
    assert len(images) == 4
    assert not any((e.text or "").startswith("L0 H0: ") for e in root.iter(f"{NS}title"))  # no rect per cell
    png = base64.b64decode(images[0].get("href").split(",", 1)[1])
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    assert int.from_bytes(png[16:20], "big") == 120 and int.from_bytes(png[20:24], "big") == 120


def test_drawing_loads_neither_qt_nor_torch() -> None:
    code = ("import sys; import numpy as np; from attention_core import attention_steps;"
            "from attention_core.notebook import draw; x = np.eye(3);"
            "draw(attention_steps(x, x, x))._repr_html_();"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'torch', 'app')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def png_pixels(png: bytes) -> np.ndarray:
    """(h, w, 3) pixels of the RGB PNGs notebook.py writes (one IDAT, filter 0 on every row)."""
    w, h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    length = int.from_bytes(png[33:37], "big")
    raw = np.frombuffer(zlib.decompress(png[41:41 + length]), dtype=np.uint8).reshape(h, 1 + 3 * w)
    assert not raw[:, 0].any()
    return raw[:, 1:].reshape(h, w, 3)


def test_a_long_head_is_one_image_per_map_with_the_cells_colours() -> None:
    """A 100-token head would be 10,000 rects per map: each map becomes one PNG, coloured as the cells would be."""
    from attention_core.notebook import _colour

    rng = np.random.default_rng(2)
    q = rng.normal(size=(100, 4))
    steps = attention_steps(q, q, q, mask=causal_mask(100))
    svg = steps_svg(steps)
    assert len(svg) < 400_000
    root = ET.fromstring(svg)
    images = list(root.iter(f"{NS}image"))
    assert len(images) == 4  # scores, scaled, masked, weights; the output (100 × 4) keeps its cells
    masked = png_pixels(base64.b64decode(images[2].get("href").split(",", 1)[1]))
    weights = png_pixels(base64.b64decode(images[3].get("href").split(",", 1)[1]))
    assert tuple(masked[3, 50]) == (217, 217, 217)  # a blocked key: grey
    span = float(np.abs(steps.masked[np.isfinite(steps.masked)]).max())
    assert tuple(masked[50, 3]) == _colour(float(steps.masked[50, 3]), span, True)
    assert tuple(weights[7, 2]) == _colour(float(steps.weights[7, 2]), 1.0, False)
