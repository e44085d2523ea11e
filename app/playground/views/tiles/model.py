"""What the Tiles view shows: FlashAttention's tiled pass (``attention_core.flash_steps``) over the Playground's Q, K,
V, read tile by tile. Qt-free; nothing here computes attention itself: every number is a field of the
``FlashSteps`` record (its tiles, ``row_max``, ``row_sum``, ``output``, ``largest_intermediate``).

A *frame* is the kernel's state after the first ``index`` tiles in the order they were computed: each query row's
running max ``m``, running sum ``l`` and un-normalised output ``o`` as the last tile of that row left them (a row
whose block has not started yet holds m = −∞, l = 0, o = 0), the tile being computed, and the status of every tile
(done, current, still to come, skipped whole by the mask). The CSV rows and the figure of ``export --view tiles``
read the same record, so a file and the view agree number for number.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.playground.model.playground import PlaygroundModel

TILES_REVEALS = ("masked", "weights", "output")
"""A tile's running max is a row's largest masked score, its output the output: hidden with any of these."""
DONE, CURRENT, PENDING, SKIPPED = "done", "current", "pending", "skipped"
CSV_HEADER = ("tile", "q_block", "k_block", "query_rows", "key_columns", "skipped", "m_before", "m", "rescale",
              "l", "elements_held")
"""One CSV row per tile (``tile_rows``): the block pair, its rows and columns as ``start-stop`` (inclusive), and
each per-row quantity as the rows' numbers joined by spaces (``repr``: exact)."""


def block_sizes(model: PlaygroundModel) -> tuple[int, int]:
    """The block sizes the Playground's tiles use (2 × 2 where the model holds none)."""
    return int(getattr(model, "block_q", 2)), int(getattr(model, "block_k", 2))


def flash_of(model: PlaygroundModel) -> Any:
    """The Playground's ``FlashSteps``: ``model.flash`` where the model keeps it, else the same record computed
    here from what Steps multiplied (the rotated q and k when rotary is on), its mask and its scale."""
    flash = getattr(model, "flash", None)
    if flash is not None:
        return flash
    from attention_core import flash_steps

    s = model.result
    q = s.q if getattr(s, "q_rotated", None) is None else s.q_rotated
    k = s.k if getattr(s, "k_rotated", None) is None else s.k_rotated
    bq, bk = block_sizes(model)
    return flash_steps(q, k, s.v, mask=s.mask, scale=s.scale, block_q=bq, block_k=bk)


@dataclass(frozen=True)
class TileFrame:
    """The kernel's state after ``index`` of ``total`` tiles (``index`` ≥ 1: tile ``index − 1`` is ``current``).

    ``status`` (query blocks × key blocks) holds ``DONE`` / ``CURRENT`` / ``PENDING`` / ``SKIPPED``; ``m``, ``l``
    (Lq,) and ``o`` (Lq, d_v) are each row's running max, sum and un-normalised output; ``rescale`` (Lq,) is the
    current tile's exp(m_before − m) on its rows and NaN on the others; ``lk`` the number of keys."""

    index: int
    total: int
    current: Any
    status: np.ndarray
    m: np.ndarray
    l: np.ndarray  # noqa: E741 (the kernel's name)
    o: np.ndarray
    rescale: np.ndarray
    block_q: int
    block_k: int
    lk: int

    @property
    def finished(self) -> bool:
        return self.index == self.total

    @property
    def partial(self) -> np.ndarray:
        """Each row's output so far, o / l (0 where l = 0: nothing seen yet, or every key masked)."""
        safe = np.where(self.l > 0, self.l, 1.0)
        return np.where((self.l > 0)[:, None], self.o / safe[:, None], 0.0)


def grid_shape(flash: Any) -> tuple[int, int]:
    """(query blocks, key blocks) of the record's tiles."""
    tiles = flash.tiles
    return 1 + max(t.q_block for t in tiles), 1 + max(t.k_block for t in tiles)


def frame_at(flash: Any, index: int) -> TileFrame:
    """The state after the first ``index`` tiles (clamped to 1 … number of tiles)."""
    tiles = flash.tiles
    total = len(tiles)
    index = min(max(int(index), 1), total)
    lq, d_v = flash.output.shape
    m, l = np.full(lq, -np.inf), np.zeros(lq)
    o = np.zeros((lq, d_v))
    status = np.full(grid_shape(flash), PENDING, dtype=object)
    for n, t in enumerate(tiles):
        if t.skipped:
            status[t.q_block, t.k_block] = SKIPPED
        if n >= index:
            continue
        rows = slice(t.rows.start, t.rows.stop)
        m[rows], l[rows], o[rows] = t.m, t.l, t.o
        if not t.skipped:
            status[t.q_block, t.k_block] = DONE
    current = tiles[index - 1]
    if not current.skipped:
        status[current.q_block, current.k_block] = CURRENT
    rescale = np.full(lq, np.nan)
    rescale[current.rows.start:current.rows.stop] = current.rescale
    return TileFrame(index, total, current, status, m, l, o, rescale, int(flash.block_q), int(flash.block_k),
                     max(t.cols.stop for t in tiles))


def rescaled_rows(frame: TileFrame) -> list[int]:
    """The rows whose running output the current tile shrank: a larger max arrived (rescale < 1) over a max held
    before (a row's first keys have nothing to shrink)."""
    t = frame.current
    held = np.isfinite(np.asarray(t.m_before, dtype=np.float64))
    r = np.asarray(t.rescale, dtype=np.float64)
    return [t.rows.start + int(i) for i in np.flatnonzero(held & (r < 1.0))]


def memory_text(flash: Any) -> str:
    """The largest array the pass held against the Lq × Lk matrix it never builds."""
    held, full = int(flash.largest_intermediate), int(flash.full_matrix_elements)
    share = held / full if full else 0.0
    return (f"largest array held: {held:,} numbers, block-sized (a tile's {flash.block_q} × {flash.block_k} scores, "
            f"or its {flash.block_q} rows of q or of the running output), whatever Lq and Lk · the Lq × Lk matrix "
            f"it never builds: {full:,} ({share:.0%})")


def largest_difference(flash: Any, steps_output: np.ndarray) -> float:
    """max |flash output − Steps' output| over every cell."""
    diff = np.abs(np.asarray(flash.output, dtype=np.float64) - np.asarray(steps_output, dtype=np.float64))
    return float(diff.max()) if diff.size else 0.0


def comparison_note(model: PlaygroundModel) -> str:
    """Why the tiles' output may differ from Steps' (a bias or a soft-cap the kernel here does not take); ""."""
    note = getattr(model, "flash_note", None)
    if note is not None:
        return str(note)
    steps = model.result
    extra = [name for name, field in (("the ALiBi bias", "biased"), ("the soft-cap", "capped"))
             if getattr(steps, field, None) is not None]
    return f"Steps adds {' and '.join(extra)}, which these tiles leave out" if extra else ""


def number(v: float) -> str:
    """A number as the view and the figure write it: 4 significant digits, −∞ for a row that has seen no key,
    "" for a quantity that does not apply (NaN)."""
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "−∞" if v < 0 else "∞"
    return f"{v:.4g}".replace("-", "−")


def _span(r: range) -> str:
    return f"{r.start}-{r.stop - 1}"


def _joined(values: Any) -> str:
    return " ".join(repr(float(x)) for x in np.asarray(values, dtype=np.float64).ravel())


def tile_rows(flash: Any) -> list[list[str]]:
    """One row per tile in computed order (``CSV_HEADER``): the numbers the Tiles view steps through."""
    out = []
    for n, t in enumerate(flash.tiles):
        held = 0 if t.skipped else int(np.asarray(t.s).size)
        out.append([str(n + 1), str(t.q_block), str(t.k_block), _span(t.rows), _span(t.cols),
                    "yes" if t.skipped else "no", _joined(t.m_before), _joined(t.m), _joined(t.rescale),
                    _joined(t.l), str(held)])
    return out


def tiles_csv_text(flash: Any, comments: list[str]) -> str:
    """The CSV of ``export --view tiles``: ``comments`` (the ``#`` lines of the setting), the header, one row a
    tile."""
    buf = io.StringIO()
    for line in comments:
        buf.write(line + "\n")
    buf.write(f"# block_q: {flash.block_q}, block_k: {flash.block_k}; {memory_text(flash)}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_HEADER)
    w.writerows(tile_rows(flash))
    return buf.getvalue()


def write_tiles_csv(path: Any, flash: Any, title: str, context: Any = None) -> None:
    """Write ``tiles_csv_text`` atomically, opened by the ``#`` lines every CSV of the app starts with."""
    from pathlib import Path

    from app.common.heatmap_files import atomic_write_bytes, context_comments

    text = tiles_csv_text(flash, context_comments(title, context))
    atomic_write_bytes(Path(path), text.encode("utf-8"))
