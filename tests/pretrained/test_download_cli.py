"""``attention-playground download REPO_ID [--revision R]`` against the fake hub: the last stdout line is JSON (repo,
revision, path, bytes), progress goes to stderr, a refusal exits 2 with its reason, and Ctrl+C stops at once (130,
one "stopped" line, no traceback) keeping what arrived, which the same command then completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import main
from tests.pretrained.fake_hub import FakeHub, FakeRepo, closed_port, tiny_gpt2_files

ROOT = Path(__file__).resolve().parents[2]
REPO = "org/tiny-gpt2"


@pytest.fixture
def hub(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with FakeHub() as fake:
        fake.repos[REPO] = FakeRepo(dict(tiny_gpt2_files()))
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake


def test_download_prints_its_json_last_and_progress_on_stderr(hub, capsys, tmp_path):
    assert main(["download", REPO]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["repo"] == REPO and summary["revision"] == "main"
    assert summary["bytes"] == sum(len(tiny_gpt2_files()[n]) for n in ("model.safetensors", "tokenizer.json",
                                                                     "generation_config.json", "config.json"))
    path = Path(summary["path"])
    assert path.parent.parent == tmp_path / "hub" / "models--org--tiny-gpt2"
    assert (path / "model.safetensors").read_bytes() == tiny_gpt2_files()["model.safetensors"]
    assert f"download {REPO}" in err and "model.safetensors" in err
    assert main(["download", REPO, "--revision", hub.repos[REPO].commit]) == 0  # a commit works as a revision
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["fetched"] == 0


@pytest.mark.parametrize("argv, words", [
    (["download", "not a repo"], "is not a repository id"),
    (["download", "org/missing"], "no model org/missing"),
    (["download", REPO, "--revision", "v9"], "has no revision"),
])
def test_download_refusals_exit_2_with_the_reason(hub, capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("attention-playground download: ") and words in err[-1]


def test_download_refuses_a_gated_licence_and_no_network(hub, capsys, monkeypatch):
    hub.repos[REPO].gated = 403
    assert main(["download", REPO]) == 2
    assert "gated" in capsys.readouterr().err
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    assert main(["download", REPO]) == 2
    assert "cannot reach" in capsys.readouterr().err


def test_ctrl_c_stops_at_once_and_the_same_command_fetches_the_rest(hub, tmp_path):
    hub.delay, hub.piece = 0.05, 4096  # ~2 s for the weights: time to interrupt
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("TRANSFORMERS_OFFLINE", None)
    cmd = [sys.executable, "-m", "app", "download", REPO]
    blobs = tmp_path / "hub" / "models--org--tiny-gpt2" / "blobs"
    child = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # a hang guard, not a measurement
    while hub.fetched("model.safetensors") < 3 * 4096 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1] == "attention-playground download: stopped"
    assert "Traceback" not in err and out == ""
    kept = sum(p.stat().st_size for p in blobs.glob("*.incomplete"))
    assert kept > 0
    hub.delay = 0.0
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    weights = tiny_gpt2_files()["model.safetensors"]
    assert hub.sent_by_last_get("model.safetensors") == (f"bytes={kept}-", len(weights) - kept)
    assert (Path(json.loads(r.stdout.strip().splitlines()[-1])["path"]) / "model.safetensors").read_bytes() == weights
