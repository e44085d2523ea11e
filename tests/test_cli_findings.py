"""Command-line findings about the process rather than one command's numbers: a bad config.json,
an unknown model_type and a malformed repository id are refused before torch is imported; an unknown command is
refused in the app's words, listing the commands; "./run.sh" is suggested only from a source checkout; Qt's locale
warning does not reach stderr under LC_ALL=C."""

from __future__ import annotations

import importlib.util
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


def _display_module(path: Path):
    spec = importlib.util.spec_from_file_location("display_copy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_run_sh_is_suggested_only_from_a_source_checkout(tmp_path, monkeypatch):
    """The same module, in this checkout and as an installed copy (``app/shell/display.py`` in a site-packages
    with no run.sh): only the first suggests ``./run.sh``."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    installed = tmp_path / "site-packages" / "app" / "shell"
    installed.mkdir(parents=True)
    shutil.copy(ROOT / "app" / "shell" / "display.py", installed / "display.py")
    here, there = _display_module(ROOT / "app" / "shell" / "display.py"), _display_module(installed / "display.py")
    assert here.source_checkout() == ROOT and there.source_checkout() is None
    assert "./run.sh" in here.display_problem()
    problem = there.display_problem()
    assert problem.startswith("no display found") and "run.sh" not in problem and "QT_QPA_PLATFORM" in problem


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's locale check is Linux's")
@pytest.mark.parametrize("start", ["from app.widgets.application import make_application as start",
                                   "from app.widgets.rendering import ensure_application as start"])
def test_qt_says_nothing_about_the_locale_under_lc_all_c(start):
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", f"{start}\nstart()\nprint('started')"], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "started" in r.stdout, r.stderr
    assert "locale" not in r.stderr.lower(), r.stderr
