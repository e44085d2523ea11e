"""The download's findings, against the fake hub (tests/pretrained/fake_hub.py): a repository without
tokenizer.json is refused before any byte (it downloaded, then could not be opened); the disk refusal says the margin
it keeps free (it read "needs 13.1 MB more …, 41.9 MB is free"), in the CLI and in the window's download alike; a
model opened from the hub's cache is named by its repository, not by its snapshot's commit hash."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.cli import main
from attention_core.pretrained import download as dl
from attention_core.pretrained.download.hub import DISK_MARGIN
from attention_core.pretrained.memory import size_text
from tests.pretrained.fake_hub import FakeHub, FakeRepo, tiny_gpt2_files

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


def test_a_repository_without_tokenizer_json_is_refused_before_any_byte(hub, capsys, tmp_path):
    files = {k: v for k, v in tiny_gpt2_files().items() if k != "tokenizer.json"}
    files["vocab.json"], files["merges.txt"] = b"{}", b"#version: 0.2\n"
    hub.repos["org/no-tokenizer"] = FakeRepo(files)
    assert main(["download", "org/no-tokenizer"]) == 2
    err = capsys.readouterr().err
    assert "attention-playground download: org/no-tokenizer has no tokenizer.json" in err
    assert "merges.txt, vocab.json" in err and "nothing was downloaded" in err
    assert not hub.served  # not even config.json
    assert not (tmp_path / "hub" / "models--org--no-tokenizer").exists()


def test_the_disk_refusal_says_the_margin_it_keeps(hub, capsys, monkeypatch):
    need = len(tiny_gpt2_files()["model.safetensors"]) + len(tiny_gpt2_files()["tokenizer.json"]) + len(
        tiny_gpt2_files()["generation_config.json"])
    free = need + DISK_MARGIN // 2  # more than the files, less than the files and the margin
    monkeypatch.setattr(dl, "free_bytes", lambda _path: free)
    assert main(["download", REPO]) == 2
    err = capsys.readouterr().err
    assert f"needs {size_text(need)} more" in err
    assert f"plus {size_text(DISK_MARGIN)} kept free" in err and f"{size_text(need + DISK_MARGIN)} in all" in err
    assert f"{size_text(free)} is free" in err

    from app.common.runner import ThreadRunner
    from app.model_tab.model.get_model import ModelFetch

    runner = ThreadRunner()
    fetch = ModelFetch(runner=runner)  # the window's download: the same words
    fetch.start(REPO)
    deadline = time.monotonic() + 60
    while fetch.busy and time.monotonic() < deadline:
        runner.pump(0.05)
    assert fetch.state == "refused"
    line = next(ln for ln in err.splitlines() if "not enough free disk space" in ln)
    assert line == f"attention-playground download: {fetch.message}"


def test_a_model_in_the_hub_cache_is_named_by_its_repository(hub, capsys, tmp_path):
    from attention_core.pretrained import load_pretrained

    assert main(["download", REPO]) == 0
    path = Path(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["path"])
    assert path.parent.name == "snapshots"  # the folder is the commit hash
    model = load_pretrained(path)
    assert model.name == REPO
    out = tmp_path / "a.json"
    assert main(["inspect", "--model", str(path), "--text", "The quick brown fox", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["model"] == REPO
    assert json.loads(out.read_text())["model"] == REPO
