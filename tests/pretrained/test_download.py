"""``attention_core.pretrained.download`` against a fake hub on 127.0.0.1 (tests/pretrained/fake_hub.py), never the
real one: the files land in the standard cache as the hub library lays it out, progress is reported, a cancel keeps
a resumable file and the next call fetches only the rest; every refusal (no network, gated, no safetensors, an
unsupported family, the disk, a truncated or corrupt file, offline mode) comes with its reason and before the
weights where the config tells."""

from __future__ import annotations

import json

import pytest

from attention_core.pretrained import download as dl
from attention_core.pretrained.download import DownloadProgress, DownloadResult
from attention_core.pretrained.download.hub import DownloadRefused
from tests.pretrained.fake_hub import FakeHub, FakeRepo, closed_port, tiny_gpt2_files

REPO = "org/tiny-gpt2"


@pytest.fixture
def online(monkeypatch, tmp_path):
    """This process online (the folder's conftest sets HF_HUB_OFFLINE, which huggingface_hub read at import), the
    cache in a temporary folder, read at call time like the endpoint."""
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return tmp_path / "hub"


@pytest.fixture
def hub(online, monkeypatch):
    with FakeHub() as fake:
        fake.repos[REPO] = FakeRepo(dict(tiny_gpt2_files()))
        monkeypatch.setenv("HF_ENDPOINT", fake.url)  # after huggingface_hub's import: read at call time
        yield fake


def weights() -> bytes:
    return tiny_gpt2_files()["model.safetensors"]


def collect(plan) -> tuple[list[DownloadProgress], DownloadResult]:
    items = list(dl.iter_download(plan))
    assert isinstance(items[-1], DownloadResult)
    return [i for i in items if isinstance(i, DownloadProgress)], items[-1]


def test_a_model_lands_in_the_standard_cache_with_progress_and_opens(hub, online):
    from huggingface_hub import try_to_load_from_cache

    from attention_core.pretrained import load_pretrained

    plan = dl.plan_download(REPO)
    assert plan.endpoint == hub.url and plan.cache_dir == online
    assert {f.name for f in plan.files} == {"model.safetensors", "tokenizer.json", "generation_config.json"}
    progress, result = collect(plan)
    files = tiny_gpt2_files()
    total = sum(len(files[n]) for n in ("model.safetensors", "tokenizer.json", "generation_config.json",
                                        "config.json"))
    assert result.bytes == total and result.fetched == total - len(files["config.json"])
    dones = [p.done for p in progress]
    assert dones == sorted(dones) and len(progress) > 3 and progress[-1].total == total
    assert result.to_json() == {"repo": REPO, "revision": "main", "commit": hub.repos[REPO].commit,
                                "path": str(result.path), "bytes": total, "fetched": result.fetched}
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        assert (result.path / name).read_bytes() == files[name]
        # the hub library itself finds every file: other tools share this cache
        assert try_to_load_from_cache(REPO, name, cache_dir=online) == str(result.path / name)
    assert (online / "models--org--tiny-gpt2" / "refs" / "main").read_text() == hub.repos[REPO].commit
    assert not hub.asked("pytorch_model.bin") and not hub.asked("README.md")  # safetensors, config, tokenizer only
    assert hub.fetched("model.safetensors") == len(weights())
    model = load_pretrained(result.path)
    assert (model.info.family, model.info.layers, model.info.heads) == ("gpt2", 2, 2)
    again = dl.download(REPO)  # all there: nothing is fetched twice
    assert again.fetched == 0 and hub.fetched("model.safetensors") == len(weights())


def test_cancel_keeps_a_resumable_file_and_the_next_call_fetches_only_the_rest(hub, online):
    hub.delay, hub.piece = 0.01, 8 * 1024
    plan = dl.plan_download(REPO)
    items = dl.iter_download(plan)
    for item in items:  # Cancel: the consumer stops after some weights arrived
        if isinstance(item, DownloadProgress) and item.file == "model.safetensors" and item.file_done >= 16 * 1024:
            break
    items.close()
    blobs = online / "models--org--tiny-gpt2" / "blobs"
    partial = next(blobs.glob("*.incomplete"))
    kept = partial.stat().st_size
    assert 16 * 1024 <= kept < len(weights())
    assert not (plan.folder / "config.json").exists()  # not listed by the Model tab while incomplete
    from app.model_tab.model.sources import hub_models

    assert hub_models(online) == []
    hub.delay = 0.0
    result = dl.download(REPO)
    assert hub.sent_by_last_get("model.safetensors") == (f"bytes={kept}-", len(weights()) - kept)  # only the rest
    rest = len(weights()) - kept + sum(len(tiny_gpt2_files()[n]) for n in ("tokenizer.json", "generation_config.json"))
    assert result.fetched == rest
    assert (result.path / "model.safetensors").read_bytes() == weights()
    assert not list(blobs.glob("*.incomplete"))
    assert [s.label for s in hub_models(online)] == [REPO]


def test_a_broken_connection_is_refused_with_the_part_kept_then_resumed(hub, online):
    hub.break_after["model.safetensors"] = 40_000
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO)
    assert err.value.kind == "network" and "run it again" in str(err.value)
    hub.break_after.clear()
    result = dl.download(REPO)
    assert (result.path / "model.safetensors").read_bytes() == weights()
    assert result.fetched < len(weights()) + 20_000  # the kept part was not fetched again


def test_a_truncated_file_is_refused_and_nothing_is_listed(hub, online):
    hub.truncate.add("model.safetensors")
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO)
    assert err.value.kind == "truncated" and "model.safetensors" in str(err.value)
    plan = dl.plan_download(REPO)
    assert not (plan.folder / "model.safetensors").exists() and not (plan.folder / "config.json").exists()


def test_a_corrupt_file_is_refused_and_removed(hub, online):
    hub.corrupt.add("model.safetensors")
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO)
    assert err.value.kind == "corrupt"
    assert not list(online.glob("models--*/blobs/*.incomplete"))


def test_no_network_is_refused_with_a_message(online, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO)
    assert err.value.kind == "network" and "cannot reach http://127.0.0.1:" in str(err.value)


@pytest.mark.parametrize("status", [401, 403])
def test_a_gated_licence_is_refused(hub, status):
    hub.repos[REPO].gated = status
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO)
    assert err.value.kind == "gated" and "accept its licence" in str(err.value) and "HF_TOKEN" in str(err.value)
    assert hub.fetched("model.safetensors") == 0


def test_a_repository_without_safetensors_is_refused(hub):
    files = {k: v for k, v in tiny_gpt2_files().items() if k != "model.safetensors"}
    hub.repos["org/pickled"] = FakeRepo(files)
    with pytest.raises(DownloadRefused) as err:
        dl.download("org/pickled")
    assert err.value.kind == "no_safetensors" and "pytorch_model.bin" in str(err.value)
    assert not hub.served


def test_an_unsupported_family_is_refused_before_any_weight(hub):
    from attention_core.pretrained import config

    files = dict(tiny_gpt2_files())
    files["config.json"] = json.dumps({**json.loads(files["config.json"]), "model_type": "bloom"}).encode()
    hub.repos["org/bloom"] = FakeRepo(files)
    with pytest.raises(DownloadRefused) as err:
        dl.download("org/bloom")
    assert err.value.kind == "unsupported" and "'bloom'" in str(err.value)
    assert all(t in str(err.value) for t in config.FAMILIES)  # names the supported ones, read at call time
    assert not hub.asked("model.safetensors") and set(hub.served) == {("org/bloom", "config.json")}  # config only


def test_the_families_are_read_at_call_time(hub, monkeypatch):
    from attention_core.pretrained import config

    files = dict(tiny_gpt2_files())
    files["config.json"] = json.dumps({**json.loads(files["config.json"]), "model_type": "newfamily"}).encode()
    hub.repos["org/new"] = FakeRepo(files)
    monkeypatch.setitem(config.FAMILIES, "newfamily", "gpt2")
    assert dl.plan_download("org/new").model_type == "newfamily"


def test_too_little_disk_is_refused_before_the_first_byte(hub, monkeypatch):
    monkeypatch.setattr(dl, "free_bytes", lambda _path: 1000)
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO)
    assert err.value.kind == "disk" and "free" in str(err.value)
    assert hub.fetched("model.safetensors") == 0


def test_offline_mode_is_refused_without_a_request(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO)
    assert err.value.kind == "offline" and not hub.requests


@pytest.mark.parametrize("bad", ["", "a/b/c", "../x", "org/", "has space/x"])
def test_a_bad_repository_id_is_refused(bad):
    with pytest.raises(DownloadRefused) as err:
        dl.plan_download(bad)
    assert err.value.kind == "bad_id"


def test_an_unknown_repository_and_revision_are_refused(hub):
    with pytest.raises(DownloadRefused) as err:
        dl.download("org/missing")
    assert err.value.kind == "not_found" and "org/missing" in str(err.value)
    with pytest.raises(DownloadRefused) as err:
        dl.download(REPO, "v9")
    assert err.value.kind == "not_found"
