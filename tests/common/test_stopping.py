"""Stopping and the process's top (app/common/stopping.py, app/common/entry.py): a signal raises ``Stopped`` at once,
or at the next check point inside a deferred region; the entry turns it into 130 / 143 and one line, a refusal
into 2, anything else into 1 with a crash log (forced in a child process, through the real entry)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.common import stopping
from app.common.entry import guarded

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh():
    stopping.reset()
    yield
    stopping.reset()


def _as_app_code(source: str) -> dict:
    """Functions whose frames count as the app's own code (their module is named ``app.…``)."""
    namespace = {"__name__": "app._probe", "os": os, "signal": signal, "time": time}
    exec(source, namespace)
    return namespace


def test_a_signal_in_the_apps_code_stops_at_once_with_128_plus_its_number(capsys, monkeypatch):
    """At once: the handler raises in the app's frame itself; nothing is armed to raise it later (which would let
    the 5 s sleep run first), and not one more line of the app's code runs."""
    armed: list[object] = []
    arm = stopping._arm
    monkeypatch.setattr(stopping, "_arm", lambda frame: armed.append(frame) or arm(frame))
    work = _as_app_code("def work(ran):\n    os.kill(os.getpid(), signal.SIGTERM)\n    ran.append('next line')\n"
                        "    time.sleep(5)\n    return 0\n")
    ran: list[str] = []
    assert guarded(lambda: work["work"](ran), ["train"]) == 143
    assert ran == [] and armed == []
    assert capsys.readouterr().err == "attention-playground train: stopped\n"


def test_a_signal_in_a_library_is_raised_when_the_apps_code_runs_again(capsys):
    """Interrupted in a library's code (here this test module's), nothing is raised there: the stop waits for the
    next call into the app's own code (a weakref callback in importlib or pybind11 in ``import torch`` must never
    see it)."""
    app_code = _as_app_code("def step(log):\n    log.append('app code ran')\n")
    log: list[str] = []

    def library() -> int:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # still here: not raised in a library frame
        log.append("library went on")
        app_code["step"](log)  # raised on entering the app's code
        log.append("never")
        return 0

    assert guarded(library, ["probe"]) == 130
    assert log == ["library went on"]
    assert sys.gettrace() is None  # the trace function is gone again
    assert capsys.readouterr().err == "attention-playground probe: stopped\n"


def test_a_signal_inside_an_import_is_raised_once_the_import_is_over_without_tracing_it(tmp_path, monkeypatch,
                                                                                      capsys):
    """Inside an import (``import torch``: never interrupted) no trace function runs for every call of the rest of
    the import; the stop is raised in the app's code soon after the import returns, and the module is whole."""
    (tmp_path / "slow_library.py").write_text("import os, signal, sys\n"
                                              "os.kill(os.getpid(), signal.SIGINT)\n"
                                              "traced = [sys.gettrace() for _ in range(20000)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_library", raising=False)
    app_code = _as_app_code("def work(log):\n"
                            "    import slow_library\n"
                            "    log.append(set(slow_library.traced))\n"
                            "    hang_guard = time.monotonic() + 5\n"  # the stop comes within milliseconds
                            "    while time.monotonic() < hang_guard:\n"
                            "        pass\n"
                            "    log.append('never')\n"
                            "    return 0\n")
    log: list[object] = []
    assert guarded(lambda: app_code["work"](log), ["inspect"]) == 130
    # imported to its end, untraced (every one of its 20,000 calls saw no trace function); stopped in the app's
    # code after it, soon: on the line after the import or the next (the watching thread races the main one
    # there), never after the loop ran out (how soon on this machine: benchmarks/bench_responsiveness.py)
    assert set(sys.modules["slow_library"].traced) == {None}
    assert log in ([], [{None}])
    assert capsys.readouterr().err == "attention-playground inspect: stopped\n"
    sys.modules.pop("slow_library", None)


def test_a_deferred_region_notes_the_signal_and_raises_when_it_ends(capsys):
    reached = []

    def work() -> int:
        with stopping.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(50):
                time.sleep(0.001)  # Python runs between C calls: the handler only notes it here
            reached.append("end of region")
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl+C during the stop is ignored
        reached.append("after")  # not reached: leaving the region raised it
        return 0

    assert guarded(work, ["export"]) == 130
    assert reached == ["end of region"]
    assert capsys.readouterr().err.splitlines() == ["attention-playground export: stopped"]


def test_a_swallowed_stop_is_raised_again_at_the_next_check():
    stopping.install()
    with pytest.raises(stopping.Stopped):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except BaseException:  # a library that swallows everything
            pass
        stopping.check()


def test_a_stop_noted_before_the_command_starts_stops_it_before_it_runs(capsys):
    """A signal noted before ``guarded``'s try (``app.__main__``: while the entry was imported) is reported as a stop
    without running the command."""
    stopping.install()
    with pytest.raises(stopping.Stopped), stopping.deferred():  # noted, raised, swallowed: still pending
        os.kill(os.getpid(), signal.SIGTERM)
    ran = []
    assert guarded(lambda: ran.append("ran") or 0, ["bench"]) == 143
    assert ran == []
    assert capsys.readouterr().err == "attention-playground bench: stopped\n"


def test_a_signal_while_the_entry_is_imported_is_one_line_and_exit_130(tmp_path):
    """Through the real ``python -m app`` in a child process: SIGINT lands just before ``app.common.entry`` is
    imported (after ``stopping.install()``), so ``Stopped`` is raised inside that import. It must not escape as a
    traceback (exit 1, as the interrupt campaign once saw for ``bench``)."""
    code = ("import os, runpy, signal, sys\n"
            "class SignalOnEntryImport:\n"
            "    fired = False\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'app.common.entry' and not self.fired:\n"
            "            self.fired = True\n"
            "            os.kill(os.getpid(), signal.SIGINT)\n"
            "        return None\n"
            "sys.meta_path.insert(0, SignalOnEntryImport())\n"
            "sys.argv = ['attention-playground', 'bench', '--help']\n"
            "runpy.run_module('app', run_name='__main__', alter_sys=True)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(tmp_path / "data")}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert (r.returncode, r.stderr) == (130, "attention-playground bench: stopped\n"), r.stderr[-3000:]
    assert r.stdout == ""  # bench never ran (its --help would print)


def test_a_refusal_deep_in_a_command_is_one_line_and_exit_2(capsys):
    from app.common.validation import Refused

    def work() -> int:
        raise Refused("--out x: the folder y does not exist")

    assert guarded(work, ["export"]) == 2
    assert capsys.readouterr().err == "attention-playground: --out x: the folder y does not exist\n"


def test_an_unexpected_error_exits_1_with_one_line_and_a_crash_log(tmp_path):
    """Forced through the real entry (``python -m app``'s ``main``) in a child process: a command that raises."""
    code = ("import sys, app.cli\n"
            "def boom(args):\n"
            "    raise ZeroDivisionError('the planted bug')\n"
            "app.cli._dispatch = boom\n"
            "sys.argv = ['attention-playground', 'train', '--steps', '5', '--out', 'run']\n"
            "from app.__main__ import main\n"
            "main()\n")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("attention-playground: unexpected error (ZeroDivisionError: the planted bug); "
                               "details in ")
    log = Path(lines[0].split("details in ", 1)[1])
    assert log.parent == tmp_path / "data" / "AttentionPlayground" / "crash-logs"
    text = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "ZeroDivisionError: the planted bug" in text
    assert "command: attention-playground train --steps 5 --out run" in text


def test_the_bundle_entry_reports_an_app_that_cannot_import(tmp_path):
    """scripts/bundle_entry.py (the bundle's first Python): a module missing from a build is one line, exit 1."""
    code = ("import runpy, sys\n"
            "sys.modules['app.__main__'] = None\n"  # importing it raises ImportError
            f"runpy.run_path({str(ROOT / 'scripts' / 'bundle_entry.py')!r}, run_name='__main__')\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("attention-playground: this build cannot start (ModuleNotFoundError")
    log = Path(r.stderr.strip().split("details in ", 1)[1])
    assert log.parent == tmp_path and "Traceback" in log.read_text(encoding="utf-8")
