"""Progress of a long command-line run on stderr (``train``, ``bench``, ``experiment``, films), fitted to where
stderr goes: tqdm's live bar on a terminal, a plain line every ~10 % in a log. Qt-free; every CLI module uses it."""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, TextIO


class Progress:
    """Progress of a long command on stderr, fitted to where stderr goes.

    A terminal gets tqdm's live bar (one line redrawn in place). A file or a pipe gets a plain line (no carriage
    return) each time the run passes another 10 % of its total, or after ``LOG_EVERY_S`` seconds without one, so
    a log of a five-epoch run is a dozen readable lines rather than one 40 kB line of redrawn frames.
    """

    LOG_EVERY_S = 30.0

    def __init__(self, total: int, desc: str, unit: str = "step", stream: TextIO | None = None,
                 live: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.desc, self.unit = max(int(total), 1), desc, unit
        self.live = _is_terminal(self.stream) if live is None else live
        self.start = self.last_line = time.monotonic()
        self.next_percent = 10
        self.done = 0
        self.bar: Any = None
        if self.live:
            from tqdm import tqdm

            # a terminal that reports no size (a pseudo-terminal nobody sized) would get no bar at all from tqdm
            sized = min(_terminal_size(self.stream)) > 0
            self.bar = tqdm(total=self.total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=sized,
                            ncols=None if sized else 100, nrows=None if sized else 24, leave=True, mininterval=0.1)

    def update(self, done: int, text: str = "") -> None:
        """``done`` of ``total`` finished; ``text``: what to show beside it (e.g. "loss 0.123 · seq-acc 45%")."""
        done = min(max(int(done), 0), self.total)
        if self.bar is not None:
            if text:
                self.bar.set_postfix_str(text, refresh=False)
            self.bar.update(done - self.bar.n)
            return
        now = time.monotonic()
        percent = 100 * done / self.total
        if done > self.done and (percent >= self.next_percent or done == self.total
                                 or now - self.last_line >= self.LOG_EVERY_S):
            self._line(done, now, text)
            self.next_percent = (math.floor(percent / 10) + 1) * 10
            self.last_line = now
        self.done = max(self.done, done)

    def _line(self, done: int, now: float, text: str) -> None:
        from tqdm import tqdm

        elapsed = now - self.start
        left = elapsed * (self.total - done) / done if done else 0.0
        parts = [f"{self.desc}: {self.unit} {done}/{self.total} ({100 * done / self.total:3.0f}%)",
                 f"{tqdm.format_interval(elapsed)} elapsed, {tqdm.format_interval(left)} left"]
        if text:
            parts.append(text)
        self.stream.write(" · ".join(parts) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _terminal_size(stream: Any) -> tuple[int, int]:
    """(columns, lines) of the terminal; 0s when unknown."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return 0, 0
    return size.columns, size.lines
