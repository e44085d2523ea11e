"""`attention-playground lessons`: --list, --check and --run, exactly as docs/cli.md words them. In-process main()
except one subprocess (the installed entry point)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from app.learn.cli import KEYS, run_lesson

LESSONS = sorted((Path(__file__).resolve().parents[2] / "resources" / "lessons").glob("*.json"))


def _lines(capsys, stream="out"):
    return [line for line in getattr(capsys.readouterr(), stream).splitlines() if line.strip()]


def test_list_names_every_bundled_lesson(capsys):
    assert main(["lessons", "--list"]) == 0
    lines = _lines(capsys)
    files = [json.loads(p.read_text()) for p in LESSONS]
    assert lines == [f"{d['id']}\t{d['title']}\t{len(d['steps'])} steps" for d in files]
    assert len(lines) >= 4


def test_check_accepts_the_bundled_files_and_refuses_bad_ones(capsys, tmp_path):
    assert main(["lessons", "--check", *map(str, LESSONS)]) == 0
    assert _lines(capsys) == []
    good = json.loads(LESSONS[0].read_text())
    good["steps"][1]["kind"] = "stare"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(good, indent=1))
    worse = tmp_path / "worse.json"
    worse.write_text('{"id": "x",\n "title": }')
    assert main(["lessons", "--check", str(LESSONS[0]), str(bad), str(worse)]) == 1
    out, err = capsys.readouterr()
    assert out == ""  # the problems are refusals: stderr, as every other
    lines = [line for line in err.splitlines() if line.strip()]
    stare = next(i for i, s in enumerate(bad.read_text().splitlines(), 1) if '"stare"' in s)
    assert lines[0] == f"{bad}:{stare}: step 2: kind must be one of look, do, predict (got 'stare')"
    assert lines[1].startswith(f"{worse}:2: not valid JSON")
    assert len(lines) == 2


@pytest.fixture(scope="module")
def shared_window(qapp, tmp_path_factory):
    """One offscreen window for the lessons not run through main() (a window costs ~1 s to build)."""
    from PySide6.QtCore import QSettings

    from app import create_main_window

    settings = QSettings(str(tmp_path_factory.mktemp("s") / "s.ini"), QSettings.Format.IniFormat)
    settings.setValue("learn/offer_dismissed", "true")
    w = create_main_window(settings=settings, confirm_on_close=False, detect_devices=False)
    yield w
    w.undo_stack.setClean()
    w.close()


@pytest.mark.parametrize("answers", ["right", "wrong"])
def test_run_every_bundled_lesson(answers, capsys, shared_window):
    from app.learn.model.files import load_lesson
    from app.learn.model.model_tab import uses_model

    runs = {}
    for path in LESSONS:
        data = json.loads(path.read_text())
        if path == LESSONS[0]:  # through main(), by id: its own offscreen window
            assert main(["lessons", "--run", data["id"], "--answers", answers]) == 0
        elif path == LESSONS[-1] or uses_model(load_lesson(path)):  # through main(), by file: its own window
            # (a lesson over the Model tab leaves its model open and detected: in the shared window the next walk
            # of it would find its first goals met when their steps open)
            assert main(["lessons", "--run", str(path), "--answers", answers]) == 0
        else:  # the same walk and printing main() does, in one shared window
            if data["id"] == "reversal":  # trains twice: a smaller run (the Training tab's settings) keeps it short
                from attention_core.tiny.config import TrainConfig

                assert shared_window.training_panel is not None
                shared_window.training.set_config(TrainConfig(train_size=2560, test_size=200, train_eval_size=40))
            assert run_lesson(load_lesson(path), answers == "right", window=shared_window) == 0, path
            shared_window.training.stop()  # the lesson paused its run: a live thread would hold up another
            # window's close (it waits for the thread pool) in this one process
        recs = runs[data["id"]] = [json.loads(line) for line in _lines(capsys)]
        assert [r["step"] for r in recs] == list(range(1, len(data["steps"]) + 1))
        assert all(tuple(r) == KEYS for r in recs)
        assert [r["kind"] for r in recs] == [s["kind"] for s in data["steps"]]
        for r in recs:
            if r["kind"] == "predict":
                assert r["correct"] is (answers == "right")
                assert r["expected"] in r["feedback"]
            else:
                assert r["correct"] is True
    # an independent check of two numbers: lesson 004's 87 % and guide 003's corrected sat·mat, from numpy
    scores = np.array([10.0, 7.0, 5.0]) / math.sqrt(2)
    w = np.exp(scores - scores.max())
    w /= w.sum()
    assert runs["dot-product"][3]["expected"] == f"{w[0]:.2f}"
    x_sat, x_mat = np.array([0.3, 0.9, 0.1, 0.4]), np.array([0.6, 0.2, 0.7, 0.3])
    assert runs["softmax-cat-sat-mat"][1]["expected"] == f"{x_sat @ x_mat:.2f}"


def test_run_refuses_an_unknown_lesson(capsys):
    assert main(["lessons", "--run", "no-such-lesson"]) == 2
    assert "no lesson 'no-such-lesson'" in capsys.readouterr().err


def test_entry_point_checks_a_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n "id": "x",\n "title": "X",\n "preset": "cat-sat-mat",\n "steps": []\n}\n')
    proc = subprocess.run([sys.executable, "-m", "app", "lessons", "--check", str(bad)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [f"{bad}:5: a lesson has 5 to 15 steps (this one has 0)"]
