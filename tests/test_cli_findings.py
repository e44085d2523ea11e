"""Command-line findings about the process rather than one command's numbers: a bad config.json,
an unknown model_type and a malformed repository id are refused before torch is imported; an unknown command is
refused in the app's words, listing the commands; "./run.sh" is suggested only from a source checkout; Qt's locale
warning does not reach stderr under LC_ALL=C."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_child import run_many

ROOT = Path(__file__).resolve().parents[1]


def test_bad_configs_and_repository_ids_are_refused_before_torch(tmp_path):
    bloom, broken, sizes = (tmp_path / n for n in ("bloom", "broken", "sizes"))
    for folder in (bloom, broken, sizes):
        folder.mkdir()
    (bloom / "config.json").write_text(json.dumps({"model_type": "bloom"}))
    (broken / "config.json").write_text('{"model_type": "gpt2",')
    (sizes / "config.json").write_text("[1, 2]")
    out = str(tmp_path / "x.json")
    cases = [
        (["inspect", "--model", str(bloom), "--text", "hi", "--out", out], "model_type 'bloom' is not supported"),
        (["inspect", "--model", str(broken), "--text", "hi", "--out", out], "not valid JSON"),
        (["inspect", "--model", str(sizes), "--text", "hi", "--out", out], "expected a JSON object"),
        (["download", "not a repo!"], "'not a repo!' is not a repository id"),
    ]
    for argv, words in cases:  # one child each: torch is checked after every refusal
        res = run_many([argv], tmp_path)
        (one,) = res["results"]
        assert one["code"] == 2 and words in one["err"], one
        assert not res["torch"], f"torch was imported before refusing {argv}"


def test_an_unknown_command_lists_the_commands_and_the_closest(tmp_path):
    from app.cli import COMMANDS

    res = run_many([["inpsect"], ["frobnicate", "--x"]], tmp_path)
    typo, other = res["results"]
    assert typo["code"] == 2 and other["code"] == 2
    assert typo["err"].startswith("attention-playground: error: unknown command 'inpsect' (did you mean inspect?)")
    assert "invalid choice" not in typo["err"] + other["err"]
    assert "unknown command 'frobnicate';" in other["err"]
    assert all(name in other["err"] for name in ["gui", *COMMANDS])


def test_run_sh_is_suggested_only_from_a_source_checkout(tmp_path):
    """This checkout's app, and the same app laid out as a wheel installs it (``app/`` with ``app/resources`` in a
    site-packages folder, no run.sh anywhere), asked in a child with no display: only the first suggests
    ``./run.sh``."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "app", site / "app", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "resources", site / "app" / "resources", ignore=shutil.ignore_patterns("__pycache__"))
    probe = ("import json, sys\nsys.platform = 'linux'\nimport app.shell.display as d\n"
             "print(json.dumps([str(d.source_checkout()), d.display_problem(), d.__file__]))")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM",
                                                               "PYTHONPATH")}
    answers = []
    for path in (ROOT, site):
        r = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={**env, "PYTHONPATH": str(path)},
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        answers.append(json.loads(r.stdout.strip().splitlines()[-1]))
    (here, here_problem, here_file), (there, there_problem, there_file) = answers
    assert Path(here) == ROOT and Path(there_file).is_relative_to(site) and there == "None"
    assert "./run.sh" in here_problem
    assert there_problem.startswith("no display found") and "run.sh" not in there_problem
    assert "QT_QPA_PLATFORM" in there_problem


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's locale check is Linux's")
@pytest.mark.parametrize("start", ["from app.widgets.application import make_application as start",
                                   "from app.widgets.rendering import ensure_application as start"])
def test_qt_says_nothing_about_the_locale_under_lc_all_c(start):
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", f"{start}\nstart()\nprint('started')"], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "started" in r.stdout, r.stderr
    assert "locale" not in r.stderr.lower(), r.stderr
