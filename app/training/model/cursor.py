"""``PlaybackCursor``: which recorded step of a training run the views show, live, scrubbed or replayed at a speed.

Kept apart from the record itself (``history``): the record only grows or is replaced, while the cursor moves on
every scrub and replay tick; its clock is passed in, so a replay is tested without sleeping. No Qt, no torch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.training.model.history import TrainingHistory


class PlaybackCursor:
    """Which snapshot the views show: the latest one (live), a fixed one (scrubbed), or a replay in motion.

    ``speed`` is in steps per second; None replays at the pace the run was recorded (its wall clock).
    Time is passed in (seconds, any monotonic origin) so the logic is testable without sleeping.
    """

    def __init__(self) -> None:
        self.follow_live = True
        self.index = 0
        self.length = 0
        self.speed: float | None = 5.0
        self.playing = False
        self._play_origin_time = 0.0
        self._play_origin_pos = 0.0

    def set_length(self, length: int) -> None:
        self.length = max(0, int(length))
        if self.follow_live:
            self.index = max(0, self.length - 1)
        self.index = min(self.index, max(0, self.length - 1))

    def seek(self, index: int) -> None:
        """Show snapshot ``index``; stops following the live run (and any replay)."""
        self.follow_live = False
        self.playing = False
        self.index = int(min(max(index, 0), max(0, self.length - 1)))

    def go_live(self) -> None:
        self.follow_live = True
        self.playing = False
        self.index = max(0, self.length - 1)

    def play(self, now: float, history: TrainingHistory | None = None) -> None:
        """Start replaying from the current index (from the start if already at the end)."""
        if self.length == 0:
            return
        if self.index >= self.length - 1:
            self.index = 0
        self.follow_live = False
        self.playing = True
        self._play_origin_time = now
        self._play_origin_pos = self._position(self.index, history)

    def stop_playing(self) -> None:
        self.playing = False

    def set_speed(self, speed: float | None, now: float, history: TrainingHistory | None = None) -> None:
        self.speed = speed
        if self.playing:  # re-anchor so the change takes effect from here
            self._play_origin_time = now
            self._play_origin_pos = self._position(self.index, history)

    def _position(self, index: int, history: TrainingHistory | None) -> float:
        if self.speed is None and history is not None and len(history):
            return float(history[index].report.wall_seconds)
        return float(index)

    def tick(self, now: float, history: TrainingHistory | None = None) -> int:
        """Advance a running replay to ``now`` and return the index to show."""
        if self.follow_live:
            self.index = max(0, self.length - 1)
        elif self.playing and self.length:
            elapsed = max(0.0, now - self._play_origin_time)
            if self.speed is None and history is not None and len(history):
                target_t = self._play_origin_pos + elapsed
                idx = self.index
                while idx + 1 < self.length and history[idx + 1].report.wall_seconds <= target_t:
                    idx += 1
                self.index = idx
            else:
                speed = self.speed if self.speed is not None else 30.0
                self.index = min(self.length - 1, int(math.floor(self._play_origin_pos + elapsed * speed)))
            if self.index >= self.length - 1:
                self.playing = False
        return self.index


