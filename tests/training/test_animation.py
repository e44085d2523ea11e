"""The training timeline as a GIF / MP4: one frame per recorded step, titled with the task, the
step and the accuracy; cancelling (or failing) leaves no partial file and the previous file intact."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def history():
    """A real, short run: 5 steps of a small trainer, 6 snapshots (step 0 = the untrained model)."""
    from app.training.film import history_from_reports
    from attention_core.tiny.config import TrainConfig
    from attention_core.tiny.training import ReversalTrainer

    cfg = TrainConfig(steps=5, train_size=128, test_size=32, train_eval_size=8, eval_every=2)
    trainer = ReversalTrainer(cfg)
    trainer.run()
    return history_from_reports(trainer.history, trainer.probe.tolist(), cfg.seq_len, cfg.causal)


def gif_frames(path: Path) -> int:
    from PIL import Image

    with Image.open(path) as im:
        return im.n_frames


def test_gif_has_one_frame_per_recorded_step(tmp_path, qapp, history):
    import imageio.v3 as iio

    from app.training.film import frame_size, write_timeline

    out = tmp_path / "run.gif"
    calls = []
    assert write_timeline(out, history, total_steps=5, progress=lambda done, total: calls.append((done, total))) \
        == out
    assert len(history) == 6
    assert gif_frames(out) == len(history)
    props = iio.improps(out, index=None)  # read back through imageio too
    assert props.shape[0] == len(history)
    assert (props.shape[2], props.shape[1]) == frame_size(2, 4)
    assert calls == [(i, len(history)) for i in range(1, len(history) + 1)]
    assert sorted(os.listdir(tmp_path)) == ["run.gif"]  # no temporary file left behind


def test_mp4_has_one_frame_per_recorded_step(tmp_path, qapp, history):
    import imageio_ffmpeg

    from app.training.film import write_timeline

    out = tmp_path / "run.mp4"
    write_timeline(out, history, fps=10)
    frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert frames == len(history)
    assert seconds == pytest.approx(len(history) / 10, abs=0.11)
    assert sorted(os.listdir(tmp_path)) == ["run.mp4"]


def test_mp4_runs_the_ffmpeg_named_by_the_environment(tmp_path, qapp, history, monkeypatch):
    """The bundle has no imageio-ffmpeg: MP4 runs the ffmpeg program found at run time (here the one named by
    $ATTENTION_PLAYGROUND_FFMPEG, imageio-ffmpeg's binary standing in for a system ffmpeg)."""
    import imageio_ffmpeg

    from app.training import film

    monkeypatch.setenv(film.FFMPEG_ENV, imageio_ffmpeg.get_ffmpeg_exe())
    assert film.find_ffmpeg() == imageio_ffmpeg.get_ffmpeg_exe() and film.mp4_problem() == ""
    out = tmp_path / "named.mp4"
    assert film.write_timeline(out, history, fps=10) == out
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == len(history)
    assert out.read_bytes()[4:8] == b"ftyp"


def test_without_ffmpeg_an_mp4_is_saved_as_a_gif_and_the_window_says_so(tmp_path, qapp, history, monkeypatch):
    from app.training import film

    monkeypatch.setattr(film, "find_ffmpeg", lambda: None)
    assert "ffmpeg" in film.mp4_problem() and "GIF" in film.mp4_problem()
    asked = tmp_path / "run.mp4"
    written = film.write_timeline(asked, history)
    assert written == tmp_path / "run.gif" and gif_frames(written) == len(history)
    assert sorted(os.listdir(tmp_path)) == ["run.gif"]
    note = film.mp4_fallback_note(asked, written)
    assert "run.gif" in note and "run.mp4" in note and "install ffmpeg" in note
    assert film.mp4_fallback_note(tmp_path / "a.gif", tmp_path / "a.gif") == ""


def test_an_ffmpeg_named_but_missing_is_refused_by_train_before_training(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ATTENTION_PLAYGROUND_FFMPEG": str(tmp_path / "nope")}
    r = subprocess.run([sys.executable, "-m", "app", "train", "--steps", "3", "--out", str(tmp_path / "run"),
                        "--mp4", str(tmp_path / "x.mp4")], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "--mp4" in r.stderr and "ATTENTION_PLAYGROUND_FFMPEG" in r.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "x.mp4").exists()


@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
def test_cancel_midway_leaves_no_file_and_keeps_the_previous_one(tmp_path, qapp, history, suffix):
    from app.training.film import write_timeline

    out = tmp_path / f"old{suffix}"
    out.write_bytes(b"the previous export")
    done = []
    result = write_timeline(out, history, progress=lambda d, _t: done.append(d), cancelled=lambda: len(done) >= 3)
    assert result is None
    assert done == [1, 2, 3]  # it really started, and stopped at the next frame
    assert out.read_bytes() == b"the previous export"
    assert sorted(os.listdir(tmp_path)) == [out.name]

    fresh = tmp_path / f"new{suffix}"
    assert write_timeline(fresh, history, cancelled=lambda: len(done) >= 3) is None
    assert not fresh.exists()


def test_a_failure_midway_leaves_no_partial_file(tmp_path, qapp, history):
    from app.training.film import write_timeline

    out = tmp_path / "run.gif"

    def boom(done: int, _total: int) -> None:
        if done == 2:
            raise RuntimeError("disk full, say")

    with pytest.raises(RuntimeError, match="disk full"):
        write_timeline(out, history, progress=boom)
    assert os.listdir(tmp_path) == []


def test_frames_are_titled_with_task_step_and_accuracy(tmp_path, qapp, history):
    from PIL import Image

    from app.training.film import export_head_grid, frame_title

    for index in range(len(history)):
        snap = history[index]
        at = history.evaluated_at(index)
        accuracy = history[history.index_of_step(at)].report.sequence_accuracy
        title, line = frame_title(history, index, total_steps=5)
        assert f"step {snap.step} / 5" in title
        assert "reversal task" in line and f"accuracy {accuracy:.0%}" in line
        assert ("(at step" in line) == (at != snap.step)  # an older evaluation says when it was taken
    out = tmp_path / "grid.png"
    written = export_head_grid(out, history, 3, total_steps=5)
    with Image.open(out) as im:
        assert im.text["Title"] == written
    assert f"step {history[3].step} / 5" in written and "reversal task" in written


def test_refuses_unknown_formats_and_empty_histories(tmp_path, qapp, history):
    from app.training.film import write_timeline
    from app.training.model.history import TrainingHistory

    with pytest.raises(ValueError, match=".gif or .mp4"):
        write_timeline(tmp_path / "x.png", history)
    with pytest.raises(ValueError, match="nothing recorded"):
        write_timeline(tmp_path / "x.gif", TrainingHistory())
    assert os.listdir(tmp_path) == []


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_cli_train_writes_gif_and_mp4_with_one_frame_per_recorded_step(tmp_path):
    import imageio_ffmpeg

    gif, mp4 = tmp_path / "heads.gif", tmp_path / "heads.mp4"
    r = run_cli("train", "--steps", "4", "--out", str(tmp_path / "run"), "--gif", str(gif), "--mp4", str(mp4))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["gif"] == str(gif.resolve()) and summary["mp4"] == str(mp4.resolve())
    recorded = len(list(csv.reader(ln for ln in (tmp_path / "run" / "history.csv").open()
                                   if not ln.startswith("#")))) - 1  # '#' lines, then the header
    assert recorded == 5  # steps 0..4
    assert gif_frames(gif) == recorded
    assert imageio_ffmpeg.count_frames_and_secs(str(mp4))[0] == recorded
    assert "\r" not in r.stderr and "frame 5/5" in r.stderr  # the film's progress, as log lines


@pytest.mark.parametrize(("flag", "name"), [("--gif", "x.png"), ("--mp4", "x.gif")])
def test_cli_train_refuses_a_wrong_film_suffix_before_training(tmp_path, flag, name):
    r = run_cli("train", "--out", str(tmp_path / "run"), flag, str(tmp_path / name), timeout=60)
    assert r.returncode == 2 and flag in r.stderr
    assert not (tmp_path / "run").exists()  # refused before any training or writing


def test_the_bundle_can_make_films():
    """build.spec does not exclude Pillow (GIF) or tqdm (progress), both imported inside functions, which
    PyInstaller's analysis of the app's imports does not follow; it leaves imageio-ffmpeg's 165 MB binary out (MP4
    runs an ffmpeg found at run time, ``app.training.film.find_ffmpeg``)."""
    import re

    spec = (ROOT / "build.spec").read_text(encoding="utf-8")
    assert 'collect_data_files("imageio_ffmpeg"' not in spec
    excludes = re.findall(r'"([\w.]+)"', re.search(r"excludes = \[(.*?)\n\]", spec, re.S).group(1))
    for needed in ("PIL", "tqdm"):
        assert not any(needed == ex or needed.startswith(ex + ".") for ex in excludes), needed
    assert "imageio_ffmpeg" in excludes
    hidden = re.search(r"hiddenimports = \((.*?)\n\)", spec, re.S).group(1)
    for needed in ('"tqdm"', '"PIL.GifImagePlugin"'):
        assert needed in hidden, needed
