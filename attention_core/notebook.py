"""attention_core's results drawn for Jupyter: SVG written from numpy alone (no Qt, no plotting library).

``AttentionSteps``, ``MultiHeadSteps`` and a pretrained ``Trace`` show themselves through ``_repr_html_``, which
calls the functions here. HTML with the SVG inline, not ``_repr_svg_``: JupyterLab shows an SVG output as an image,
where the hover titles (``cat → sat: 0.4213``) would not reach the pointer. Numbers are printed in the cells while a
cell is wide enough for them (two decimals, as the app's maps show them); the title always carries four.

``draw(result, queries=..., keys=...)`` names the tokens (AttentionSteps has no tokens of its own, a trace's
head_steps included); ``Drawing.svg`` is the SVG text, to save as a file.
"""

from __future__ import annotations

import base64
import html
import re
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

STEP_ORDER = ("scores", "scaled", "masked", "weights", "output")
STEP_LABELS = {"scores": "① Scores Q·Kᵀ", "scaled": "② × scale", "masked": "③ Masked", "weights": "④ Softmax weights",
               "output": "⑤ Output = weights·V", "capped": "c·tanh(x/c)", "biased": "+ bias"}
CELL_MAX, CELL_MIN = 40, 6
NUMBERS_MIN_CELL = 30  # "-0.42" at 10 px needs about 28 px
MAP_SIDE = 320  # a map wider than this shrinks its cells (down to CELL_MIN)
GRID_SIDE = 96  # one thumbnail of a trace's layer × head grid
GRID_RECTS_MAX = 40_000  # above this many cells a trace's grid is drawn as embedded PNGs, not one rect per cell
MAP_RECTS_MAX = 64 * 64  # a larger step map (a long text's head) is one embedded PNG: no hover, but no 50 MB SVG
FONT = "font-family:DejaVu Sans,Arial,sans-serif"
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class Drawing:
    """An SVG that Jupyter shows inline (``_repr_html_``); ``svg`` is its text."""

    def __init__(self, svg: str) -> None:
        self.svg = svg

    def _repr_html_(self) -> str:
        return html_block(self.svg)

    def __repr__(self) -> str:
        return f"<Drawing: {len(self.svg)} characters of SVG>"


def html_block(svg: str) -> str:
    return f'<div style="overflow-x:auto;max-width:100%">{svg}</div>'


def token_text(token: object) -> str:
    """A token as XML-safe display text: whitespace made visible, characters XML cannot hold replaced."""
    text = str(token).replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")
    return _XML_BAD.sub("\ufffd", text)


def _esc(text: object) -> str:
    return html.escape(token_text(text), quote=True)


def number(x: float, digits: int = 2) -> str:
    """The text of one cell: ``0.42``, ``−∞`` where a key is masked (never ``-0.00``)."""
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "−∞" if x < 0 else "+∞"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _colour(value: float, span: float, signed: bool) -> tuple[int, int, int]:
    if not np.isfinite(value):
        return (217, 217, 217)  # masked: grey
    t = min(abs(value) / span, 1.0) if span > 0 else 0.0
    end = (178, 24, 43) if signed and value > 0 else (8, 69, 148)  # red for a positive score, blue otherwise
    return tuple(round(255 + (e - 255) * t) for e in end)  # type: ignore[return-value]


def _span(matrix: np.ndarray, signed: bool) -> float:
    finite = matrix[np.isfinite(matrix)]
    if not signed:
        return 1.0  # weights: 1 is full attention, whatever this map's largest is
    return float(np.abs(finite).max()) if finite.size else 1.0


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _labels(given: Sequence[object] | None, n: int, prefix: str) -> list[str]:
    if given is None:
        return [f"{prefix}{i}" for i in range(n)]
    names = [token_text(t) for t in given]
    if len(names) != n:
        raise ValueError(f"{len(names)} names for {n} {prefix or 'rows'}: give one per row or column")
    return names


def heatmap(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, x: float, y: float, title: str,
            signed: bool, joiner: str = "→") -> tuple[list[str], float, float]:
    """SVG elements of one labelled map at (x, y), and its width and height. Row r, column c's title reads
    ``rows[r] → cols[c]: value``."""
    matrix = np.asarray(matrix, dtype=np.float64)
    n_rows, n_cols = matrix.shape
    cell = int(max(CELL_MIN, min(CELL_MAX, MAP_SIDE // max(n_rows, n_cols, 1))))
    show_numbers = cell >= NUMBERS_MIN_CELL
    label_w = 8 + 6.5 * min(12, max((len(r) for r in rows), default=1)) if cell >= 12 else 8
    top = 22 + (16 if cell >= 12 else 0)
    span = _span(matrix, signed)
    out = [f'<g><text x="{x}" y="{y + 14}" style="{FONT};font-size:13px;font-weight:bold">{_esc(title)}</text>']
    ox, oy = x + label_w, y + top
    if cell >= 12:
        chars = max(1, cell // 7)
        for c, name in enumerate(cols):
            out.append(f'<text x="{ox + c * cell + cell / 2}" y="{oy - 4}" text-anchor="middle" '
                       f'style="{FONT};font-size:10px">{_esc(name[:chars])}</text>')
        for r, name in enumerate(rows):
            out.append(f'<text x="{ox - 4}" y="{oy + r * cell + cell / 2 + 4}" text-anchor="end" '
                       f'style="{FONT};font-size:10px">{_esc(name[:12])}</text>')
    if matrix.size > MAP_RECTS_MAX:
        out.append(_image(_rgb(matrix, span, signed), ox, oy, n_cols * cell, n_rows * cell,
                          f"{title}: {n_rows} × {n_cols}, hover titles up to {MAP_RECTS_MAX} cells"))
        return [*out, "</g>"], label_w + n_cols * cell, top + n_rows * cell
    for r in range(n_rows):
        for c in range(n_cols):
            v = float(matrix[r, c])
            rgb = _colour(v, span, signed)
            cx, cy = ox + c * cell, oy + r * cell
            tip = f"{rows[r]} {joiner} {cols[c]}: {number(v, 4)}"
            out.append(f'<g><title>{_esc(tip)}</title><rect x="{cx}" y="{cy}" width="{cell}" height="{cell}" '
                       f'fill="{_hex(rgb)}" stroke="#ffffff" stroke-width="0.5"/>')
            if show_numbers:
                dark = sum(rgb) < 3 * 140
                out.append(f'<text x="{cx + cell / 2}" y="{cy + cell / 2 + 4}" text-anchor="middle" '
                           f'class="cell" fill="{"#ffffff" if dark else "#000000"}" '
                           f'style="{FONT};font-size:10px">{number(v)}</text>')
            out.append("</g>")
    out.append("</g>")
    return out, label_w + n_cols * cell, top + n_rows * cell


def _svg(parts: list[str], width: float, height: float) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}">'
            f'<rect width="100%" height="100%" fill="#ffffff"/>{"".join(parts)}</svg>')


def _note(text: str, x: float, y: float) -> str:
    return f'<text x="{x}" y="{y}" style="{FONT};font-size:11px;fill:#555555">{_esc(text)}</text>'


def steps_svg(steps: Any, queries: Sequence[object] | None = None, keys: Sequence[object] | None = None,
              shown: Sequence[str] | None = None, max_maps: int = 8) -> str:
    """An ``AttentionSteps``' maps side by side (queries down, keys across; the output's columns are its
    dimensions). Batched steps draw one row per index, up to ``max_maps``. By default the five steps, with the
    soft-capped and biased scores between scaled and masked when those steps are on, in the order computed (the
    soft-cap first: ``steps.OPTIONAL_STEPS``); rotary is named below."""
    if shown is None:
        optional = [n for n in ("capped", "biased") if getattr(steps, n, None) is not None]
        shown = (*STEP_ORDER[:2], *optional, *STEP_ORDER[2:])
    weights = np.asarray(steps.weights)
    lq, lk = weights.shape[-2:]
    rows, cols = _labels(queries, lq, "q"), _labels(keys, lk, "k")
    batch = weights.shape[:-2]
    indices = list(np.ndindex(*batch))
    parts: list[str] = []
    y, width = 4.0, 0.0
    for index in indices[:max_maps]:
        x = 4.0
        if batch:
            parts.append(_note(f"index {list(index)} of {list(batch)}", x, y + 12))
            y += 18
        row_h = 0.0
        for name in shown:
            matrix = np.asarray(getattr(steps, name))[index]
            out_cols = [f"d{j}" for j in range(matrix.shape[-1])] if name == "output" else cols
            elems, w, h = heatmap(matrix, rows, out_cols, x=x, y=y, title=STEP_LABELS.get(name, name),
                                  signed=name != "weights", joiner="·" if name == "output" else "→")
            parts += elems
            x += w + 18
            row_h = max(row_h, h)
        width, y = max(width, x), y + row_h + 12
    if len(indices) > max_maps:
        parts.append(_note(f"… {len(indices) - max_maps} more of {len(indices)} not drawn", 4, y + 10))
        y += 18
    note = f"scale {steps.scale:.4g} · mask: {'none' if steps.mask is None else 'True = may attend'}"
    if getattr(steps, "rotary_base", None) is not None:
        note += f" · rotary base {steps.rotary_base:g} on {steps.rotary_dims} columns (scores of rotated q, k)"
    if getattr(steps, "softcap", None) is not None:
        note += f" · soft-cap {steps.softcap:g}"
    parts.append(_note(note, 4, y + 10))
    return _svg(parts, width, y + 18)


def multihead_svg(mh: Any, queries: Sequence[object] | None = None, keys: Sequence[object] | None = None) -> str:
    """A ``MultiHeadSteps``: every head's softmax weights in a row, then the concatenation and the output."""
    heads = np.asarray(mh.heads.weights)
    lq, lk = heads.shape[-2:]
    rows, cols = _labels(queries, lq, "q"), _labels(keys, lk, "k")
    parts: list[str] = []
    x, height = 4.0, 0.0
    for h in range(mh.num_heads):
        elems, w, hgt = heatmap(heads[h], rows, cols, x=x, y=4, title=f"head {h}: weights", signed=False)
        parts += elems
        x, height = x + w + 18, max(height, hgt)
    y = height + 16
    x2 = 4.0
    for title, matrix in (("concat (heads' outputs)", mh.concat), ("output = concat·W_O", mh.output)):
        dims = [f"d{j}" for j in range(np.asarray(matrix).shape[-1])]
        elems, w, hgt = heatmap(np.asarray(matrix), rows, dims, x=x2, y=y, title=title, signed=True, joiner="·")
        parts += elems
        x2, height = x2 + w + 18, max(height, y + hgt)
    return _svg(parts, max(x, x2), height + 10)


def _png(rgb: np.ndarray) -> bytes:
    """A minimal RGB PNG (zlib and struct only)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[r].astype(np.uint8).tobytes() for r in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _rgb(matrix: np.ndarray, span: float, signed: bool) -> np.ndarray:
    """(rows, cols, 3) colours of a whole map, as ``_colour`` gives them cell by cell."""
    finite = np.isfinite(matrix)
    value = np.where(finite, matrix, 0.0)
    t = np.clip(np.abs(value) / span, 0.0, 1.0)[..., None] if span > 0 else np.zeros((*matrix.shape, 1))
    red, blue = np.array([178, 24, 43], dtype=np.float64), np.array([8, 69, 148], dtype=np.float64)
    end = np.where((signed & (value > 0))[..., None], red, blue)
    rgb = np.rint(255 + (end - 255) * t)
    rgb[~finite] = 217  # masked: grey
    return rgb


def _image(rgb: np.ndarray, x: float, y: float, w: float, h: float, title: str) -> str:
    data = base64.b64encode(_png(rgb)).decode("ascii")
    return (f'<image x="{x}" y="{y}" width="{w:.2f}" height="{h:.2f}" preserveAspectRatio="none" '
            f'style="image-rendering:pixelated" href="data:image/png;base64,{data}"><title>{_esc(title)}</title>'
            "</image>")


def trace_svg(trace: Any) -> str:
    """A trace's layer × head grid of attention weights (rows: layers, columns: heads), each map hovered cell by
    cell while the grid is small enough; heads switched off in the run are outlined in red."""
    long = bool(getattr(trace, "is_long", False))  # a long trace keeps each map pooled, not whole
    att = np.asarray(trace.overview.max if long else trace.attentions, dtype=np.float64)
    layers, heads, t = att.shape[0], att.shape[1], att.shape[-1]
    tokens = [token_text(s) for s in trace.tokens]
    cell = max(1.0, GRID_SIDE / max(t, 1))
    side = cell * t
    per_cell = att.size <= GRID_RECTS_MAX
    ablated = {tuple(p) for p in getattr(trace, "ablated", ())}
    info = trace.info
    head_line = f"{trace.name}: {layers} layers × {heads} heads, {len(trace.tokens)} tokens" + (
        f" (each map's largest weight per block of {trace.overview.block} tokens)" if long else "")
    parts = [f'<text x="4" y="16" style="{FONT};font-size:13px;font-weight:bold">{_esc(head_line)}</text>',
             _note(" ".join(tokens)[:160], 4, 32)]
    if trace.note:
        parts.append(_note(str(trace.note), 4, 46))
    ox, oy = 36.0, 64.0
    for h in range(heads):
        parts.append(f'<text x="{ox + h * (side + 8) + side / 2}" y="{oy - 6}" text-anchor="middle" '
                     f'style="{FONT};font-size:10px">H{h}</text>')
    for layer in range(layers):
        y0 = oy + layer * (side + 8)
        parts.append(f'<text x="{ox - 6}" y="{y0 + side / 2 + 4}" text-anchor="end" '
                     f'style="{FONT};font-size:10px">L{layer}</text>')
        for h in range(heads):
            x0 = ox + h * (side + 8)
            m = att[layer, h]
            label = f"layer {layer}, head {h}" + (" (switched off)" if (layer, h) in ablated else "")
            parts.append(f"<g><title>{_esc(label)}</title>")
            if per_cell:
                for r in range(t):
                    for c in range(t):
                        rgb = _colour(float(m[r, c]), 1.0, False) if np.isfinite(m[r, c]) else (255, 255, 255)
                        tip = f"L{layer} H{h}: {tokens[r]} → {tokens[c]}: {number(float(m[r, c]), 4)}"
                        parts.append(f'<rect x="{x0 + c * cell:.2f}" y="{y0 + r * cell:.2f}" width="{cell:.2f}" '
                                     f'height="{cell:.2f}" fill="{_hex(rgb)}"><title>{_esc(tip)}</title></rect>')
            else:
                parts.append(_image(_rgb(np.where(np.isfinite(m), m, 0.0), 1.0, False), x0, y0, side, side,
                                    label))
            colour = "#d62728" if (layer, h) in ablated else "#999999"
            parts.append(f'<rect x="{x0}" y="{y0}" width="{side:.2f}" height="{side:.2f}" fill="none" '
                         f'stroke="{colour}" stroke-width="{2 if (layer, h) in ablated else 0.5}"/></g>')
    bottom = oy + layers * (side + 8) + 12
    parts.append(_note(f"{info.family} · d_model {info.d_model} · d_head {info.d_head} · weights 0 (white) to 1 "
                       f"(blue); trace.head_steps(layer, head) draws one head's five steps", 4, bottom))
    return _svg(parts, max(ox + heads * (side + 8) + 4, 560), bottom + 10)


def draw(result: Any, queries: Sequence[object] | None = None, keys: Sequence[object] | None = None) -> Drawing:
    """A ``Drawing`` of an AttentionSteps, MultiHeadSteps or Trace, with the tokens named (``keys`` defaults to
    ``queries``: self-attention)."""
    keys = queries if keys is None else keys
    if hasattr(result, "attentions") and hasattr(result, "tokens"):
        return Drawing(trace_svg(result))
    if hasattr(result, "num_heads") and hasattr(result, "concat"):
        return Drawing(multihead_svg(result, queries, keys))
    if hasattr(result, "weights") and hasattr(result, "scores"):
        return Drawing(steps_svg(result, queries, keys))
    raise TypeError(f"draw: expected AttentionSteps, MultiHeadSteps or Trace, got {type(result).__name__}")
