"""What the Detect view draws, derived from the ``HeadsAnalysis`` (Qt-free): the detector's layer × head grid, one
head's map on the probe with the detector's ideal pattern (the window of it ``heads.probe.window`` says), the loss
per position on the repeated tokens (over the window's positions), the scan's grid of loss changes, the list of
heads with their scores, and the texts around them. Views call these and draw."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from app.model_tab.model.detect_probe import WINDOW_MIN
from app.model_tab.model.detect_runs import THRESHOLD, Head
from app.model_tab.model.views import head_name, off_text

if TYPE_CHECKING:
    from app.model_tab.model.detect import HeadsAnalysis

KIND_TEXT = {
    "previous-token": "looks at the token just before its own",
    "duplicate-token": "looks at the earlier copy of its own token",
    "induction": "looks at the token that followed the earlier copy of its own token, and so can predict it",
    "first-token": "looks at the first token (an \"attention sink\": somewhere to put weight when nothing fits)",
}
SCAN_REPEAT = "second copy of sequence 1"
"""The scan's repeat loss: measured on the probe's first sequence alone (a scan of 144 heads on all four would take
four times as long), so it is not the curve's "second copy" (``SECOND_COPY``), the mean over the four: one name
each, so two numbers for what read as one quantity no longer sit side by side."""
FIRST_COPY, SECOND_COPY = "first copy", "second copy"
"""The loss curve's two means, over the probe's sequences (``Curve.sequences``), as lesson 8 says them."""
MEASURE_TEXT = {"repeat": SCAN_REPEAT, "text": "your text"}
WHEEL_HINT = "wheel scrolls, Shift+wheel moves the keys, Ctrl+wheel zooms"
"""The probe window's gestures, as a windowed map's title says them (the head map's long window says the same)."""


@dataclass(frozen=True, eq=False)  # numpy fields: compare them yourself
class Grid:
    """A layer × head grid: ``values`` (layers, heads), axis labels, the cells ``outlined`` and ``blocked``
    (hatched; None = none), the heatmap ``kind`` ("weights": [0, 1]; "signed": around 0), title and caption."""

    values: np.ndarray
    rows: list[str]
    cols: list[str]
    kind: str
    outlined: tuple[Head, ...]
    blocked: np.ndarray | None
    title: str
    caption: str


@dataclass(frozen=True, eq=False)
class Pattern:
    """One head on the first probe sequence, through the window: ``values`` (rows, cols), ``labels`` (the rows'),
    ``cols``, ``blocked`` (the mask's future; None on a long probe, whose windows are not hatched, as the head map's
    long windows), ``marks``: the cells in the window a perfect head of the detector attends to (circled), in window
    coordinates; ``start``: the first (query, key) shown."""

    values: np.ndarray
    labels: list[str]
    blocked: np.ndarray | None
    marks: list[tuple[int, int]]
    title: str
    caption: str
    cols: list[str] | None = None
    start: tuple[int, int] = (0, 0)


@dataclass(frozen=True, eq=False)
class Curve:
    """The probe's loss per predicted position (``x``, ``y``: mean over the ``sequences``), ``clean`` (every head on,
    None when none is off), the two halves' (first x, last x, mean), where the repeat starts, title and caption."""

    x: np.ndarray
    y: np.ndarray
    clean: np.ndarray | None
    first: tuple[float, float, float]
    second: tuple[float, float, float]
    repeat_at: float
    title: str
    caption: str
    sequences: int = 1
    shown: tuple[float, float] = (0.0, 0.0)
    """The x range the window shows (its queries' positions)."""

    def window_points(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """x, y and clean (or None) of the positions in ``shown`` alone: what the curve draws."""
        keep = (self.x >= self.shown[0]) & (self.x <= self.shown[1])
        return self.x[keep], self.y[keep], None if self.clean is None else self.clean[keep]


@dataclass(frozen=True)
class HeadRow:
    layer: int
    head: int
    text: str
    on: bool


def ideal_marks(kind: str, n: int, seq_len: int, offset: int) -> list[tuple[int, int]]:
    """(query, key) cells a head that does exactly ``kind`` attends to on the probe (``score_attention``'s keys)."""
    second = range(offset + seq_len, n)
    if kind == "previous-token":
        return [(q, q - 1) for q in range(1, n)]
    if kind == "first-token":
        return [(q, 0) for q in range(1, n)]
    if kind == "duplicate-token":
        return [(q, q - seq_len) for q in second]
    if kind == "induction":
        return [(q, q - seq_len + 1) for q in second]
    raise ValueError(f"unknown detector {kind!r}")


def _axes(shape: tuple[int, ...]) -> tuple[list[str], list[str]]:
    return [str(i) for i in range(shape[0])], [str(h) for h in range(shape[1])]


def _mask(shape: tuple[int, ...], heads: tuple[Head, ...]) -> np.ndarray | None:
    if not heads:
        return None
    m = np.zeros(shape, dtype=bool)
    for li, h in heads:
        m[li, h] = True
    return m


def score_grid(a: HeadsAnalysis) -> Grid | None:
    """The shown detector's scores; outlined above ``THRESHOLD``, hatched the heads off (None before a run, or while
    a lesson's question withholds them: ``a.withheld`` says why)."""
    d = a.detection
    if d is None or a.withheld:
        return None
    scores = np.asarray(d.scores[a.kind].scores, dtype=np.float64)
    rows, cols = _axes(scores.shape)
    off = f" {off_text(d.off)} (hatched)." if d.off else ""
    article = "An" if a.kind[0] in "aeiou" else "A"
    return Grid(scores, rows, cols, "weights", tuple(a.heads_above()), _mask(scores.shape, d.off),
                f"{a.kind} score of every head",
                f"{article} {a.kind} head {KIND_TEXT[a.kind]}. Score: its mean weight there (1 = always); "
                f"outlined: above {THRESHOLD:g}.{off} Click a head for its pattern.")


def window_marks(kind: str, n: int, seq_len: int, offset: int, query: int, key: int, side: int
                 ) -> list[tuple[int, int]]:
    """``ideal_marks`` inside the window of ``side`` queries from ``query`` and keys from ``key``, in its
    coordinates."""
    return [(q - query, k - key) for q, k in ideal_marks(kind, n, seq_len, offset)
            if query <= q < query + side and key <= k < key + side]


def shown_window(a: HeadsAnalysis) -> tuple[int, int, int]:
    """(first query, first key, positions a side) of the detection shown, clamped into it."""
    d = a.detection
    q, k, size = a.probe.window
    if d is None:
        return q, k, size
    n = d.positions
    side = min(size, n)
    return min(q, n - side), min(k, n - side), side


def pattern(a: HeadsAnalysis, layer: int, head: int) -> Pattern | None:
    d = a.detection
    if d is None or not (0 <= layer < d.attentions.shape[0] and 0 <= head < d.attentions.shape[1]):
        return None
    n = d.positions
    q0, k0, side = shown_window(a)
    values = np.asarray(d.window(layer, head, q0, k0, side), dtype=np.float64)  # the window's queries alone
    mask = d.masks[layer] if layer < len(d.masks) else None
    blocked = None if mask is None or d.is_long else ~np.asarray(mask[q0:q0 + side, k0:k0 + side], dtype=bool)
    if side == n:
        rows = cols = list(d.tokens)
    else:  # every probe token comes twice: its position tells the copies apart
        rows = [f"{t}@{i}" for i, t in enumerate(d.tokens[q0:q0 + side], q0)]
        cols = [f"{t}@{i}" for i, t in enumerate(d.tokens[k0:k0 + side], k0)]
    score = "" if a.withheld else f" {float(d.scores[a.kind].scores[layer, head]):.2f}"  # a lesson asks for it
    off = " — switched off" if (layer, head) in d.off else ""
    hint = "" if side == n else f" ({WHEEL_HINT})"
    return Pattern(values, rows, blocked, window_marks(a.kind, n, d.seq_len, d.offset, q0, k0, side),
                   f"head {head_name(layer, head)}: {a.kind}{score}{off}{hint}",
                   f"Head {head_name(layer, head)} on random tokens, then the same again; ○ where a perfect "
                   f"{a.kind} head looks.", cols, (q0, k0))


def window_text(a: HeadsAnalysis) -> str:
    """The window's caption: which queries and keys of how many positions are shown, and how to move it."""
    d = a.detection
    if d is None:
        return ""
    n, (q0, k0, side) = d.positions, shown_window(a)
    if side == n:
        return f"All {n:,} positions shown." + (" Ctrl+wheel zooms in." if n > WINDOW_MIN else "")
    return (f"Shown: queries {q0:,}–{q0 + side - 1:,} × keys {k0:,}–{k0 + side - 1:,} of {n:,} positions; the "
            f"second copy from {d.offset + d.seq_len:,}.")


def repeat_curve(a: HeadsAnalysis) -> Curve | None:
    d = a.detection
    if d is None:
        return None
    rep = d.repeat
    losses = np.asarray(rep.losses, dtype=np.float64)
    n = losses.shape[1] + 1
    x = np.arange(1, n, dtype=np.float64)  # entry t predicts token t + 1
    o, s = d.offset, d.seq_len
    clean = None if d.clean_repeat is None else np.asarray(d.clean_repeat.losses, dtype=np.float64).mean(axis=0)
    first, second = float(rep.first_half_loss), float(rep.second_half_loss)
    was = ""
    if d.clean_repeat is not None:
        was = (f" Every head on: {float(d.clean_repeat.first_half_loss):.2f} → "
               f"{float(d.clean_repeat.second_half_loss):.2f}.")
    verdict = "it copies from context" if second < 0.5 * first else "little in-context copying"
    off = f" ({off_text(d.off)})" if d.off else ""
    q0, _k0, side = shown_window(a)
    lo, hi = max(q0, 1), q0 + side - 1
    where = f", positions {lo:,}–{hi:,} of {n:,}" if side < n else ""
    return Curve(x, losses.mean(axis=0), clean, (float(max(o, 1)), float(o + s - 1), first),
                 (float(o + s), float(n - 1), second), o + s - 0.5, f"Loss per position{off}{where}",
                 f"{len(rep.ids)} × {s:,} random tokens, then the same again: {verdict}.{was}", len(rep.ids),
                 (float(lo), float(hi)))


def scan_grid(a: HeadsAnalysis) -> Grid | None:
    """The last scan's loss changes (the chosen measure); outlined: the heads off now; hatched: not measured (None
    before a scan, or while a lesson's question withholds it: ``a.scan_withheld``)."""
    r = a.scan
    if r is None or a.scan_withheld:
        return None
    scan = r.scan
    values = np.asarray(scan.repeat_change if a.scan_measure == "repeat" else scan.text_change, dtype=np.float64)
    base = float(scan.repeat_loss if a.scan_measure == "repeat" else scan.text_loss)
    rows, cols = _axes(values.shape)
    unmeasured = ~np.isfinite(values)
    parts = [f"Loss on the {MEASURE_TEXT[a.scan_measure]}: {base:.2f} nats with " +
             (f"{off_text(r.off)} (hatched)" if r.off else "every head on")]
    if not scan.completed:
        parts.append(f"cancelled after {r.done} of {r.total} heads: the rest not measured")
    if r.off != a.off:
        parts.append("⚠ heads switched since: scan again to measure the model as it is now")
    if a.scan_measure == "repeat" and a.probe.tokens is not None:  # a scan runs the default probe's length
        parts.append(f"the scan's probe is the default one, not the {a.probe.tokens:,}-token one above")
    return Grid(values, rows, cols, "signed", a.off, unmeasured if unmeasured.any() else None,
                f"Loss change with each head off ({scan.how})",
                "; ".join(parts) + ". Red: the loss rises without that head. Click a head to switch it off or on.")


def scan_progress_text(a: HeadsAnalysis) -> str:
    done, total = a.scan_progress
    if a.scanning:
        return f"cancelling… {done} of {total}" if a.scan_cancelling else f"{done} of {total} heads"
    if a.scan is None:
        return "not run yet"
    return f"done: {a.scan.total} heads" if a.scan.scan.completed else f"cancelled at {a.scan.done} of {a.scan.total}"


def head_rows(a: HeadsAnalysis) -> list[HeadRow]:
    """Every head, best first by the shown detector's score (in order before a run); ``on``: not switched off."""
    layers, heads = a.shape
    scores = a.scores()
    pairs = [(li, h) for li in range(layers) for h in range(heads)]
    off = set(a.off)
    if scores is None or scores.shape != (layers, heads):
        return [HeadRow(li, h, head_name(li, h), (li, h) not in off) for li, h in pairs]
    pairs.sort(key=lambda p: -float(scores[p]))
    return [HeadRow(li, h, f"{head_name(li, h)}   {float(scores[li, h]):.2f}", (li, h) not in off)
            for li, h in pairs]


def off_html(a: HeadsAnalysis) -> str:
    """The heads off now, as the Detect view says it (the rest of the tab shows the model without them)."""
    if not a.off:
        return "Every head is on."
    return (f"<b>{html.escape(off_text(a.off, limit=12))}</b> — the grid, head map, flow and next-token list show "
            "the model without them.")
