"""The training timeline as a film: one frame per recorded step of the head grid, to an animated GIF or an MP4.

A still of the grid shows one moment; how a head *becomes* a copying head is the story of the run, so the Training
tab's recorded history (``TrainingHistory``: one ``Snapshot`` per step, with the probe's maps) is replayed through
the same ``HeadGrid`` the tab shows, each frame titled with the task, the step and the latest test accuracy.

Used by the CLI (``train --gif/--mp4``, from ``trainer.history``) and the GUI (``session.history``), hence the
plain callables: ``progress(done, total)`` after each frame, ``cancelled()`` before each frame. The file is written
to a temporary file in the target folder and renamed at the end, so a cancelled or failed export leaves no partial
file and never touches a file already there. GIF goes through Pillow (one 256-colour palette for the whole film),
MP4 through an ffmpeg program found at run time (``find_ffmpeg``: ``$ATTENTION_PLAYGROUND_FFMPEG``, imageio-ffmpeg's
binary where that package is installed (a source install), else ``ffmpeg`` on the PATH; H.264, streamed: frames are
not kept). The standalone bundle ships no ffmpeg (165 MB): where none is found, an MP4 asked for is written as an
animated GIF beside it (``write_timeline`` returns that path; ``mp4_fallback_note`` says so in the window), and the
CLI's ``--mp4`` is refused before training with the same reason (``mp4_problem``).
Qt is needed (the frames are rendered widgets); a QApplication is created offscreen when none exists.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.common.titles import ExportContext, full_title, title_html
from app.training.model.history import Snapshot, TrainingHistory
from app.widgets.rendering import light_figure
from attention_core.tiny.vocab import token_labels

if TYPE_CHECKING:
    from attention_core.tiny.report import TrainingReport

ANIMATION_FORMATS = (".gif", ".mp4")
TASK = "reversal"
HOLD_LAST_S = 2.0
"""The last frame (the trained model) stays this long in a GIF, so a looping film does not jump back at once."""


FFMPEG_ENV = "ATTENTION_PLAYGROUND_FFMPEG"
"""An ffmpeg program to use for MP4 (a path), before imageio-ffmpeg's and the PATH's."""
FFMPEG_HINT = "install ffmpeg (Debian/Ubuntu: sudo apt install ffmpeg; macOS: brew install ffmpeg)"


def find_ffmpeg() -> str | None:
    """The ffmpeg program MP4 export runs: ``$ATTENTION_PLAYGROUND_FFMPEG``, imageio-ffmpeg's own binary where
    that package is installed, else ``ffmpeg`` on the PATH; None when there is none."""
    named = os.environ.get(FFMPEG_ENV, "").strip()
    if named:
        return named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    try:
        import imageio_ffmpeg

        exe = imageio_ffmpeg.get_ffmpeg_exe()
        if exe and os.path.isfile(exe):
            return str(exe)
    except Exception:  # not installed (the bundle), or its binary is missing: the PATH's ffmpeg then
        pass
    return shutil.which("ffmpeg")


def mp4_problem() -> str:
    """Why an MP4 cannot be written here ("" when it can)."""
    if find_ffmpeg() is not None:
        return ""
    if os.environ.get(FFMPEG_ENV, "").strip():
        return f"${FFMPEG_ENV} names {os.environ[FFMPEG_ENV]!r}, which is not an executable file"
    return f"MP4 needs the ffmpeg program, and none was found: {FFMPEG_HINT}, or choose the animated GIF"


def mp4_fallback_note(asked: str | Path, written: str | Path) -> str:
    """What the window says when an MP4 asked for was written as a GIF ("" when it was not)."""
    if Path(written).suffix.lower() == Path(asked).suffix.lower():
        return ""
    return (f"No ffmpeg was found, so the timeline was saved as an animated GIF, {Path(written).name}, instead of "
            f"{Path(asked).name}. For MP4, {FFMPEG_HINT}.")


def history_from_reports(reports: Sequence[TrainingReport], probe: Sequence[int], seq_len: int,
                         causal: bool = True, task: str = "reversal", positional: str = "learned",
                         attention_dropout: float = 0.0) -> TrainingHistory:
    """A ``TrainingHistory`` from a trainer's reports (what the CLI has): one snapshot per report, on ``probe``
    (the full probe sequence of ``task`` the maps were recorded on)."""
    history = TrainingHistory()
    for report in reports:
        history.add(Snapshot.from_report(report, [int(t) for t in probe], seq_len, causal, task=task,
                                         positional=positional, attention_dropout=attention_dropout))
    return history


def frame_size(layers: int, heads: int) -> tuple[int, int]:
    """Frame size in pixels for a grid of this shape: ~220 px per head column, ~280 px per layer, both multiples
    of 16 (H.264's macro block: ffmpeg would otherwise rescale the frames)."""
    width = min(max(220 * heads + 80, 640), 1600)
    height = min(max(280 * layers + 90, 400), 1200)
    return 16 * math.ceil(width / 16), 16 * math.ceil(height / 16)


def frame_title(history: TrainingHistory, index: int, total_steps: int | None = None,
                task: str | None = None) -> tuple[str, str]:
    """(title, context line) of frame ``index``: "Heads at step 12 / 79" and "reversal task · test sequence
    accuracy 45% (at step 12) · probe 3 7 9 → 9 7 3"."""
    snap = history[index]
    total = total_steps if total_steps is not None else history[len(history) - 1].step
    at = history.evaluated_at(index)
    accuracy = None
    if at is not None:
        accuracy = float(history[history.index_of_step(at)].report.sequence_accuracy)
    context = ExportContext(task=task or snap.task, accuracy=accuracy, accuracy_step=at if at != snap.step else None,
                            causal=snap.causal, positional=snap.positional, attention_dropout=snap.attention_dropout)
    inputs = token_labels(snap.probe[: snap.seq_len])
    line = " · ".join([context.line(), f"probe {' '.join(inputs)} → {' '.join(token_labels(snap.answer))}"])
    return f"Heads at step {snap.step} / {total}", line


def _figure(layers: int, heads: int) -> Any:
    """The frame widget: a title label above a ``HeadGrid``, white, at ``frame_size``."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QFont
    from PySide6.QtWidgets import QLabel

    from app.widgets.grid.head_grid import HeadGrid

    fig, box = light_figure()
    box.setContentsMargins(10, 8, 10, 6)
    box.setSpacing(4)
    fig.title = QLabel()
    fig.title.setTextFormat(Qt.TextFormat.RichText)
    fig.title.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    font = QFont()
    font.setPointSizeF(13.0)
    fig.title.setFont(font)
    fig.grid = HeadGrid(dark=False)
    box.addWidget(fig.title)
    box.addWidget(fig.grid, 1)
    fig.grid.set_shape(layers, heads)
    fig.resize(*frame_size(layers, heads))
    return fig


def _draw(fig: Any, history: TrainingHistory, index: int, total_steps: int | None, task: str | None) -> str:
    """Show snapshot ``index`` on the frame widget (maps, numbers, sparklines so far, title); returns the title."""
    snap = history[index]
    fig.grid.set_maps(snap.probe_weights, snap.labels, seq_len=snap.seq_len, causal=snap.causal,
                      reversal=snap.task_scores, entropy=snap.entropy, focus=snap.focus, ideal=snap.ideal,
                      score_name=snap.score_name)
    steps, rev = history.head_series("task", upto=index)
    _, foc = history.head_series("focus", upto=index)
    last = total_steps if total_steps is not None else history[len(history) - 1].step
    fig.grid.set_sparklines(steps, rev, foc, cursor_step=snap.step, max_step=last, joined=history.complete)
    title, line = frame_title(history, index, total_steps, task)
    fig.title.setText(title_html(title, line, size_pt=10.0))
    return full_title(title, line)


def _frames(history: TrainingHistory, total_steps: int | None, task: str | None,
            size: tuple[int, int] | None) -> tuple[Any, Callable[[int], np.ndarray]]:
    """The frame widget and a function that renders frame ``index`` as an (h, w, 3) uint8 array."""
    from PySide6.QtWidgets import QApplication

    from app.widgets.rendering import ensure_application, grab_image, image_to_rgb, lay_out

    ensure_application()
    layers, heads = int(len(history[0].probe_weights)), int(history[0].probe_weights[0].shape[0])
    fig = _figure(layers, heads)
    if size is not None:
        fig.resize(*size)
    lay_out(fig)  # once: the size never changes, so later frames only need Qt's pending layout events

    def render(index: int) -> np.ndarray:
        _draw(fig, history, index, total_steps, task)
        for _ in range(2):
            QApplication.processEvents()
        return image_to_rgb(grab_image(fig, ratio=1.0, prepare=False))

    return fig, render


def write_timeline(path: str | Path, history: TrainingHistory, *, total_steps: int | None = None,
                   task: str | None = None, fps: float | None = None, size: tuple[int, int] | None = None,
                   progress: Callable[[int, int], Any] | None = None,
                   cancelled: Callable[[], bool] | None = None) -> Path | None:
    """Write ``history`` as an animated GIF or an MP4 (by ``path``'s suffix), one frame per recorded step.

    ``fps`` defaults to a pace that plays a run in about 10 s (5 to 25 frames a second). ``size`` (w, h) defaults
    to ``frame_size`` of the grid. ``progress(done, total)`` is called after each frame; ``cancelled()`` before
    each: when it returns True the export stops, the temporary file is removed, a file already at ``path`` is
    left as it was, and None is returned. Returns the path written: ``path``, or for an MP4 where no ffmpeg is
    found (``find_ffmpeg``), the same name ending in .gif (``mp4_fallback_note`` says so). Runs in the GUI thread
    (it renders widgets), so a window's progress dialog keeps its Cancel button alive by processing events in
    ``progress``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in ANIMATION_FORMATS:
        raise ValueError(f"timeline: the file must end in .gif or .mp4, got {suffix or '(none)'!r}")
    ffmpeg = find_ffmpeg() if suffix == ".mp4" else None
    if suffix == ".mp4" and ffmpeg is None:
        path, suffix = path.with_suffix(".gif"), ".gif"  # the fallback: the same film as a GIF
    n = len(history)
    if n == 0:
        raise ValueError("timeline: nothing recorded yet")
    if size is not None and (size[0] % 2 or size[1] % 2):
        raise ValueError(f"timeline: width and height must be even (H.264), got {size}")
    fps = float(fps) if fps else min(25.0, max(5.0, n / 10.0))
    from app.widgets.qt_compat import delete_now

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    tmp = Path(tmp_name)
    fh = os.fdopen(fd, "wb")
    writer: _GifWriter | _Mp4Writer | None = None
    fig = None
    try:
        fig, render = _frames(history, total_steps, task, size)
        if suffix == ".gif":
            writer = _GifWriter(fh, n, fps, palette_frame=render(n - 1))
        else:
            fh.close()  # ffmpeg writes the file itself
            assert ffmpeg is not None
            writer = _Mp4Writer(tmp, fps, ffmpeg)
        for i in range(n):
            if cancelled is not None and cancelled():
                writer.abandon()
                writer = None
                fh.close()
                tmp.unlink(missing_ok=True)
                return None
            writer.add(render(i))
            if progress is not None:
                progress(i + 1, n)
        writer.finish()
        writer = None
        if not fh.closed:
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
        from attention_core.fileio import readable_mode

        os.chmod(tmp, readable_mode())  # mkstemp made it 0600: the umask's mode, as every file the app writes
        os.replace(tmp, path)
        return path
    except BaseException:
        if writer is not None:
            try:
                writer.abandon()
            except Exception:  # already failing: the first error is the one to report
                pass
        fh.close()
        tmp.unlink(missing_ok=True)
        raise
    finally:
        delete_now(fig)


class _GifWriter:
    """Pillow's GIF writer (what imageio's GIF support wraps), called directly to choose the quantiser: every frame
    is mapped onto one 256-colour palette taken from the last frame (the whole colour bar, every text colour),
    ~1.5 ms a frame against ~76 ms for imageio's per-frame median cut, and steady colours from frame to frame.
    Frames are kept in palette mode (a third of RGB) until Pillow writes the file at the end."""

    def __init__(self, fh: Any, n: int, fps: float, palette_frame: np.ndarray) -> None:
        from PIL import Image

        self._fh = fh
        self._palette = Image.fromarray(palette_frame).quantize(256, method=Image.Quantize.MEDIANCUT)
        frame_ms = round(1000.0 / fps)
        self._durations = [frame_ms] * (n - 1) + [max(frame_ms, round(HOLD_LAST_S * 1000))]
        self._frames: list[Any] = []

    def add(self, frame: np.ndarray) -> None:
        from PIL import Image

        self._frames.append(Image.fromarray(frame).quantize(palette=self._palette, dither=Image.Dither.NONE))

    def finish(self) -> None:
        first, *rest = self._frames
        first.save(self._fh, format="GIF", save_all=True, append_images=rest, duration=self._durations, loop=0)
        self._frames.clear()

    def abandon(self) -> None:
        self._frames.clear()


class _Mp4Writer:
    """Raw RGB frames piped into an ffmpeg program (``find_ffmpeg``): H.264 in yuv420p, which every player reads,
    the index at the front (``+faststart``) so a browser plays it while loading."""

    def __init__(self, path: Path, fps: float, ffmpeg: str) -> None:
        self._path, self._fps, self._ffmpeg = path, fps, ffmpeg
        self._proc: subprocess.Popen[bytes] | None = None

    def add(self, frame: np.ndarray) -> None:
        if self._proc is None:
            h, w = frame.shape[:2]
            cmd = [self._ffmpeg, "-y", "-loglevel", "error", "-f", "rawvideo", "-vcodec", "rawvideo",
                   "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", f"{self._fps:.4f}", "-i", "-", "-an",
                   "-vcodec", "libx264", "-pix_fmt", "yuv420p", "-crf", "20", "-movflags", "+faststart",
                   "-f", "mp4", str(self._path)]
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE)
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(np.ascontiguousarray(frame, dtype=np.uint8).tobytes())
        except BrokenPipeError:  # ffmpeg stopped: its own message says why
            self.finish()

    def finish(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stderr is not None
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        err = proc.stderr.read().decode(errors="replace").strip()
        proc.stderr.close()
        if proc.wait() != 0:
            raise OSError(f"ffmpeg ({self._ffmpeg}) failed with exit code {proc.returncode}: "
                          f"{err.splitlines()[-1] if err else 'no message'}")

    def abandon(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stderr):
                if stream is not None:
                    stream.close()


def export_head_grid(path: str | Path, history: TrainingHistory, index: int = -1, *,
                     total_steps: int | None = None, task: str | None = None) -> str:
    """One frame of the timeline as a still (PNG, SVG or PDF): the head grid at snapshot ``index`` with the same
    title (task, step, accuracy, probe). Returns the plain title, also written into the file."""
    from app.widgets.qt_compat import delete_now
    from app.widgets.rendering import render_widget

    n = len(history)
    if n == 0:
        raise ValueError("export: nothing recorded yet")
    index = index % n
    fig, _render = _frames(history, total_steps, task, None)
    try:
        title = _draw(fig, history, index, total_steps, task)
        render_widget(fig, Path(path), title=title)
    finally:
        delete_now(fig)
    return title
