"""The command line as users meet it: every option and output checked before any work (exit 2, one line
naming the option), --version and --help without torch, the window's messages without a display, --self-test on
its own settings, and ``train --steps 5`` without ``torch._dynamo`` or another heavy module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_child import run_many
from hang_guard import wait_until

ROOT = Path(__file__).resolve().parents[1]

def run_app(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: int = 300):
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


TRAIN_REFUSED = [
    (["--seq-len", "100000"], "--seq-len 100000 is out of range: expected an integer from 1 to 512"),
    (["--vocab-size", "1000000000"], "--vocab-size 1000000000 is out of range"),
    (["--seed", "100000000000000000000000"], "--seed 100000000000000000000000 is out of range"),
    (["--seed", "-1"], "--seed -1 is out of range: expected an integer from 0 to 2147483647"),
    (["--layers", "100000"], "--layers 100000 is out of range: expected an integer from 1 to 64"),
    (["--steps", "0"], "--steps 0 is out of range"),
    (["--seq-len", "300"], "--seq-len 300: this run needs ~"),  # past the 64 MiB budget given below
]


def test_sizes_beyond_the_range_or_this_machine_are_refused_before_any_work(tmp_path):
    argvs = [["train", *args, "--out", str(tmp_path / "run")] for args, _ in TRAIN_REFUSED]
    out = run_many(argvs, tmp_path, env={"MEMORY_BUDGET_MIB": "64"})
    for (_, words), res in zip(TRAIN_REFUSED, out["results"]):
        assert res["code"] == 2, res
        assert one_line(res["err"]).startswith(f"attention-playground train: {words}"), res["err"]
    assert not out["torch"], "refused before torch was even imported"
    assert list(tmp_path.iterdir()) == []  # nothing written, no folder made


def test_outputs_are_checked_before_any_work(tmp_path):
    (tmp_path / "w.png").write_bytes(b"not a folder")
    run1 = tmp_path / "run1"
    run1.mkdir()
    (run1 / "model.safetensors").write_bytes(b"an earlier run")
    cases = [
        (["train", "--steps", "5", "--out", str(tmp_path / "w.png")], "--out", "is a file, not a folder"),
        (["train", "--steps", "5", "--out", str(tmp_path / "no" / "run")], "--out", "the folder"),
        (["train", "--steps", "5", "--out", str(run1)], "--out", "a run is already there (model.safetensors); "
                                                                "add --force to replace it"),
        (["train", "--steps", "5", "--out", "/proc/run"], "--out", "cannot write in /proc"),
        (["train", "--steps", "5", "--out", str(tmp_path / "t"), "--gif", "/proc/x.gif"], "--gif",
         "cannot write in /proc"),
        (["train", "--steps", "5", "--out", str(tmp_path / "t"), "--mp4", str(tmp_path / "no" / "x.mp4")], "--mp4",
         "does not exist"),
        (["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", str(tmp_path / "no" / "x.png")],
         "--out", "does not exist (create it first)"),
        (["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", "/proc/x.png"], "--out",
         "cannot write in /proc"),
        (["bench", "--out", "/proc/b.csv"], "--out", "cannot write in /proc"),
        (["experiment", "--preset", "tasks", "--out", "/proc/exp"], "--out", "cannot write in /proc"),
        (["experiment", "--preset", "tasks", "--out", str(tmp_path / "w.png")], "--out", "is a file, not a folder"),
        (["--self-test", str(tmp_path / "w.png")], "--self-test", "is a file, not a folder"),
        (["--self-test", "/proc/st"], "--self-test", "cannot write in /proc"),
        (["inspect", "--model", str(run1), "--text", "3 SEP", "--out", "/proc/i.json"], "--out",
         "cannot write in /proc"),
    ]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    out = run_many([argv for argv, _, _ in cases], tmp_path)
    for (argv, flag, words), res in zip(cases, out["results"]):
        assert res["code"] == 2, res
        line = one_line(res["err"])
        assert line.startswith("attention-playground") and flag in line and words in line, (argv, line)
    assert not out["torch"] and not out["qt"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no folder created silently


def test_force_replaces_a_run(tmp_path):
    r = run_app("train", "--steps", "3", "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    assert run_app("train", "--steps", "3", "--out", str(tmp_path / "run")).returncode == 2
    r = run_app("train", "--steps", "4", "--out", str(tmp_path / "run"), "--force")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["steps"] == 4
    history = (tmp_path / "run" / "history.csv").read_text().strip().splitlines()
    assert history[-1].startswith("4,")


def test_other_options_name_themselves(tmp_path):
    cases = [
        (["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", "x.csv", "--scale", "0"],
         "attention-playground export: --scale 0.0 is out of range: expected a positive number up to 1000"),
        (["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", "x.csv", "--scale", "-1"],
         "attention-playground export: --scale -1.0 is out of range"),
        (["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", "x.csv", "--scale", "1e308"],
         "attention-playground export: --scale 1e+308 is out of range"),
        (["probe", "--preset", "cat-sat-mat", "--position", "1", "--seed", "-1"],
         "attention-playground probe: --seed -1 is out of range: expected an integer from 0 to 2147483647"),
        (["probe", "--preset", "cat-sat-mat", "--position", "1", "--trials", "100000000"],
         "attention-playground probe: --trials 100000000 is out of range"),
        (["bench", "--threads", "10000", "--out", "b.csv"],
         "attention-playground bench: --threads 10000 is out of range: expected an integer from 0 to 256"),
        (["bench", "--dtype", "float16", "--out", "b.csv"],
         "attention-playground bench: --dtype float16: nothing chosen can run it"),
        (["train", "--seed", "abc", "--out", "r"], "attention-playground train: error: argument --seed: invalid int"),
        (["--version", "extra"], "attention-playground: error: unknown command 'extra'; the commands are gui, train"),
        (["--version", "train", "--out", "r"], "attention-playground: error: --version takes no other arguments"),
    ]
    out = run_many([argv for argv, _ in cases], tmp_path)
    for (argv, words), res in zip(cases, out["results"]):
        assert res["code"] == 2, res
        lines = [ln for ln in res["err"].splitlines() if ln.strip() and not ln.startswith(" ")]
        assert any(ln.startswith(words) for ln in lines), (argv, res["err"])
    assert list(tmp_path.iterdir()) == []


def test_version_and_help_never_import_torch():
    code = ("import contextlib, io, sys\nfrom app.cli import main\n"
            "for argv in (['--version'], ['--help'], ['train', '--help'], ['inspect', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        try:\n            main(argv)\n        except SystemExit:\n            pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'PySide6')))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr)
    r = run_app("--version")
    assert r.returncode == 0 and r.stdout.startswith("attention-playground ")


def test_no_display_and_a_bad_display_are_one_line_and_exit_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-m", "app"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "no display found (DISPLAY is not set)" in one_line(r.stderr)
    r = subprocess.run([sys.executable, "-m", "app"], cwd=tmp_path, env={**env, "DISPLAY": ":93"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "cannot open the display :93: no X server answers there" in one_line(r.stderr)
    # the bundle has no ./run.sh: its message does not send anyone there
    code = ("import sys\nsys.frozen = True\nfrom app.shell.display import display_problem\n"
            "print(display_problem())\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert "no display found" in r.stdout and "run.sh" not in r.stdout and "--self-test" in r.stdout
    r = subprocess.run([sys.executable, "-c", code.replace("sys.frozen = True", "")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert "./run.sh" in r.stdout


def test_self_test_keeps_the_users_settings_and_prints_no_platform_notice(tmp_path):
    config = tmp_path / "config"
    user = config / "AttentionPlayground" / "Attention Playground.conf"
    user.parent.mkdir(parents=True)
    user.write_text("[window]\ngeometry=the user's\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(XDG_CONFIG_HOME=str(config), XDG_DATA_HOME=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "app", "--self-test", str(tmp_path / "st")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert user.read_text() == "[window]\ngeometry=the user's\n"
    assert sorted(p.name for p in config.rglob("*")) == ["Attention Playground.conf", "AttentionPlayground"]
    assert "propagateSizeHints" not in r.stderr and "does not support" not in r.stderr, r.stderr[-2000:]


HEAVY = ("torch._dynamo", "torch._inductor", "torch._functorch.aot_autograd", "torch.onnx", "torch.utils.tensorboard",
         "sympy", "mpmath", "networkx", "jinja2", "PIL", "imageio", "PySide6", "shiboken6", "pyqtgraph", "superqt",
         "psygnal", "transformers", "huggingface_hub", "tokenizers", "fsspec")
"""Installed here, each costing tenths of a second (``torch._dynamo`` with sympy ~1.5 s) and none needed by a
headless ``train`` without ``--gif``: the compiler stack, the exporters, imaging, Qt, the model hub."""


def test_train_steps_5_imports_no_dynamo_nor_any_other_heavy_module(tmp_path):
    """``train --steps 5`` starts fast because it imports only what it needs: the optimiser no longer imports
    torch._dynamo (attention_core/tiny/optim.py), and nothing else heavy (``HEAVY``) comes in on the way. How long its
    start-up takes over ``import torch`` on this machine is a figure: benchmarks/bench_responsiveness.py."""
    code = ("import json, sys\nfrom app.cli import main\n"
            f"rc = main(['train', '--steps', '5', '--out', {str(tmp_path / 'd')!r}])\n"
            f"print('LOADED', json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))\n"
            "sys.exit(rc)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "LOADED" in r.stdout, (r.stdout[-500:], r.stderr[-2000:])
    assert json.loads(r.stdout.split("LOADED", 1)[1]) == []
    summary = json.loads(r.stdout.split("LOADED", 1)[0].strip().splitlines()[-1])
    assert summary["steps"] == 5 and (tmp_path / "d" / "model.safetensors").is_file()  # it did train


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_film_stopped_leaves_no_file_and_keeps_the_run(tmp_path, signal_name):
    """The quick version of scripts/interrupt_campaign.py: a stop while the film is being written."""
    import signal

    sig = getattr(signal, signal_name)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([sys.executable, "-m", "app", "train", "--steps", "60", "--out", str(tmp_path / "run"),
                             "--gif", str(tmp_path / "film.gif")], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    history = tmp_path / "run" / "history.csv"  # the run is written: the film starts now
    wait_until(lambda: history.exists() or proc.poll() is not None, "the run's files", hang_guard_s=120, poll_s=0.02)
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.3)
    os.killpg(proc.pid, sig) if sig == signal.SIGINT else proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert err.strip().splitlines()[-1] == "attention-playground train: stopped" and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no film, no temporary file
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["config.json", "history.csv",
                                                                   "model.safetensors"]


def test_export_and_probe_refuse_what_the_window_refuses(tmp_path):
    """A scale the Playground's custom scale refuses (nan, inf, ≤ 0) and a random preset whose seed the
    window's Random (seed…) dialog cannot take (above 2³¹ − 1) exit 2 with the reason, and nothing is written."""
    out = str(tmp_path / "x.csv")
    cases = [
        (["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", out, "--scale", "nan"],
         "attention-playground export: --scale nan is out of range: expected a positive number up to 1000"),
        (["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", out, "--scale", "inf"],
         "attention-playground export: --scale inf is out of range"),
        (["export", "--preset", "cat-sat-mat", "--view", "code", "--out", str(tmp_path / "x.py"), "--scale", "-0"],
         "attention-playground export: --scale -0.0 is out of range"),
        (["export", "--preset", "random-2147483648", "--view", "weights", "--out", out],
         "attention-playground export: --preset random-2147483648: the seed 2147483648 is out of range: expected an "
         "integer from 0 to 2147483647"),
        (["probe", "--preset", "random-99999999999", "--position", "1"],
         "attention-playground probe: --preset random-99999999999: the seed 99999999999 is out of range"),
        (["export", "--preset", "cat-sat-mat", "--view", "code", "--out", str(tmp_path / "no" / "x.py")],
         "attention-playground export: --out"),
        (["inspect", "--model", str(tmp_path), "--text", "3 SEP", "--out", str(tmp_path / "no" / "i.csv")],
         "attention-playground inspect: --out"),
        (["experiment", "--preset", "tasks", "--out", str(tmp_path / "no" / "exp")],
         "attention-playground experiment: --out"),
        (["bench", "--out", str(tmp_path / "no" / "b.csv")], "attention-playground bench: --out"),
    ]
    out_ = run_many([argv for argv, _ in cases], tmp_path)
    for (argv, words), res in zip(cases, out_["results"]):
        assert res["code"] == 2, res
        assert one_line(res["err"]).startswith(words), (argv, res["err"])
    assert list(tmp_path.iterdir()) == []
