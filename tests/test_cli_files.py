"""What the commands leave behind and how they write, checked as a user meets them (a subprocess each):

- nothing of their own in the temporary folder (``TMPDIR``) once they end, normally or stopped by Ctrl+C: the
  throw-away window settings of ``lessons --run`` and ``--self-test``, the model ``lessons --run real-model``
  trains (``app.common.outputs.scratch_folder``);
- every file they write with one mode, 0o666 less the umask, as ``open()`` would give it
  (``attention_core.fileio.atomic_write`` sets it on its temporary file before the rename).
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp: Path) -> dict[str, str]:
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp), "QT_QPA_PLATFORM": "offscreen"}


def _left_in(tmp: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))


def test_lessons_run_leaves_nothing_in_the_temporary_folder(tmp_path):
    tmp = tmp_path / "tmp"
    r = subprocess.run([sys.executable, "-m", "app", "lessons", "--run", "dot-product"], cwd=ROOT, env=_env(tmp),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count('"step"') == 10  # the lesson ran (and so its window and its settings file existed)
    assert _left_in(tmp) == []


def test_lessons_run_stopped_midway_leaves_nothing_in_the_temporary_folder(tmp_path):
    tmp = tmp_path / "tmp"
    proc = subprocess.Popen([sys.executable, "-m", "app", "lessons", "--run", "dot-product"], cwd=ROOT,
                            env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        assert '"step": 1' in first
        assert [p.name[:8] for p in tmp.iterdir()] == ["lessons-"]  # the premise: its scratch folder is there
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)  # a hang guard only
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "stopped" in err
    assert _left_in(tmp) == []


def test_self_test_leaves_only_the_pictures_it_names(tmp_path):
    """Into a folder named: nothing in the temporary folder. Without one, the folder of pictures it prints (they
    are what the user asked for) and nothing else."""
    tmp = tmp_path / "tmp"
    out = tmp_path / "pictures"
    r = subprocess.run([sys.executable, "-m", "app", "--self-test", str(out)], cwd=ROOT, env=_env(tmp),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(list(out.glob("*.png"))) >= 10
    assert _left_in(tmp) == []

    r = subprocess.run([sys.executable, "-m", "app", "--self-test"], cwd=ROOT, env=_env(tmp),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    printed = [Path(line) for line in r.stdout.splitlines() if line.strip()]
    assert printed and {p.parent for p in printed} == {p.parent for p in printed[:1]}
    folder = printed[0].parent
    assert folder.parent == tmp
    assert _left_in(tmp) == sorted([folder.name, *(str(p.relative_to(tmp)) for p in printed)])


@pytest.mark.slow
def test_the_real_model_lesson_leaves_no_model_in_the_temporary_folder(tmp_path):
    """The lesson trains the induction model and saves it for the Model tab to open; the file is the process's
    own and goes with it. (The recipe's steps are cut to 30 here: what is trained does not matter, that it is
    saved does; a short recipe may leave a step unreached, hence no check of the exit code beyond 0 or 1.)"""
    tmp = tmp_path / "tmp"
    code = textwrap.dedent("""
        import sys
        import attention_core.tiny.experiments as experiments
        experiments.TASK_RECIPES["induction"] = {**experiments.TASK_RECIPES["induction"], "steps": 30}
        sys.argv = ["attention-playground", "lessons", "--run", "real-model"]
        from app.__main__ import main
        main()
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp), capture_output=True, text=True,
                       timeout=400)
    assert r.returncode in (0, 1), r.stderr
    assert "heads off the second copy costs" in r.stdout  # the model was trained, saved and opened
    assert _left_in(tmp) == []


WRITERS = """
import os, sys
os.umask(int(sys.argv[2], 8))
from app.__main__ import main
out = sys.argv[1]
for argv in (
    ["train", "--steps", "3", "--out", f"{out}/run", "--gif", f"{out}/film.gif"],
    ["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", f"{out}/weights.png"],
    ["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", f"{out}/weights.csv"],
    ["export", "--preset", "cat-sat-mat", "--view", "code", "--out", f"{out}/weights.py"],
    ["inspect", "--model", f"{out}/run", "--text", "3 5 SEP", "--out", f"{out}/inspect.json"],
    ["inspect", "--model", f"{out}/run", "--text", "3 5 SEP", "--out", f"{out}/inspect.csv"],
    ["bench", "--impl", "naive-numpy", "--min-n", "16", "--max-n", "32", "--repeat", "1", "--out",
     f"{out}/bench.csv"],
    ["experiment", "--preset", "causal-vs-bidirectional", "--steps", "2", "--out", f"{out}/experiment"],
):
    code = main(argv)
    if code != 0:
        sys.exit(f"{argv[0]} exited {code}")
"""


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_every_command_writes_its_files_with_the_umasks_mode(tmp_path, umask):
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([sys.executable, "-c", WRITERS, str(out), oct(umask)], cwd=ROOT, env=_env(tmp_path / "tmp"),
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr
    files = {str(p.relative_to(out)): stat.S_IMODE(p.stat().st_mode) for p in out.rglob("*") if p.is_file()}
    written = {name.split("/")[0] for name in files}
    assert written >= {"run", "film.gif", "weights.png", "weights.csv", "weights.py", "inspect.json",
                       "inspect.csv", "bench.csv", "experiment"}
    assert any(name.startswith("run/") and name.endswith(".safetensors") for name in files)
    assert any(name.startswith("experiment/") and "/" in name[len("experiment/"):] for name in files)
    wanted = 0o666 & ~umask  # 0o644 for 022, 0o640 for 027: what open() gives a new file
    assert {name: oct(mode) for name, mode in files.items() if mode != wanted} == {}
