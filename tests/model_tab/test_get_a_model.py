""""Get a model" in the Model tab against the fake hub (tests/pretrained/fake_hub.py): pick GPT-2 in the catalogue,
the progress bar moves, the model lands in the Hugging Face cache, the tab lists it and opens it; Cancel keeps a
resumable state; refusals are shown in the dialog. Offline stays the default: the window and the tab open without a
socket or the hub library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pretrained.fake_hub import FakeHub, FakeRepo, closed_port, tiny_gpt2_files

ROOT = Path(__file__).resolve().parents[2]
GPT2 = "openai-community/gpt2"  # the catalogue's first entry; the fake hub serves a tiny random GPT-2 under it


@pytest.fixture
def hub(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with FakeHub() as fake:
        fake.repos[GPT2] = FakeRepo(dict(tiny_gpt2_files()))
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake


def open_dialog(window):
    tab = window.inspect.show()
    return window.inspect.model, tab, tab.sources.open_get_model()


def test_get_a_model_picks_downloads_with_progress_lists_and_opens_it(window, qtbot, hub, tmp_path):
    hub.delay, hub.piece = 0.01, 4096
    session, tab, dialog = open_dialog(window)
    assert dialog.isVisible() and not hub.requests  # opening asks nothing of the hub
    assert dialog.table.topLevelItemCount() >= 7
    dialog.table.setCurrentItem(dialog.table.topLevelItem(0))
    assert dialog.repo_edit.text() == GPT2 and dialog.table.topLevelItem(0).text(1) == "548 MB"
    seen: list[int] = []
    dialog.fetch.events.progress.connect(lambda: seen.append(dialog.progress.value()))
    dialog.download_button.click()
    assert not dialog.download_button.isEnabled() and dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.fetch.state == "done", timeout=60_000)
    assert any(0 < v < 1000 for v in seen), seen  # the bar moved through the download
    assert dialog.progress.value() == 1000 and dialog.open_button.isEnabled()
    path = dialog.fetch.path
    assert path is not None and path.is_relative_to(tmp_path / "hub") and str(path) in dialog.status_label.text()
    labels = [tab.sources.list.item(i).text() for i in range(tab.sources.list.count())]
    assert any(label.startswith(GPT2) and "Hugging Face cache" in label for label in labels), labels
    dialog.open_button.click()
    assert not dialog.isVisible()
    qtbot.waitUntil(lambda: session.trace is not None and not session.tracing, timeout=60_000)
    assert session.model.info.family == "gpt2" and session.path == path


def test_cancel_in_the_dialog_keeps_what_arrived_and_download_again_resumes(window, qtbot, hub, tmp_path):
    hub.delay, hub.piece = 0.05, 4096
    _session, _tab, dialog = open_dialog(window)
    dialog.download_button.click()
    qtbot.waitUntil(lambda: hub.fetched("model.safetensors") >= 3 * 4096, timeout=60_000)
    dialog.cancel_button.click()
    assert dialog.fetch.state in ("cancelling", "cancelled") and not dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.fetch.state == "cancelled", timeout=60_000)
    assert "kept" in dialog.status_label.text() and dialog.download_button.text() == "Download again"
    kept = sum(p.stat().st_size for p in (tmp_path / "hub").rglob("*.incomplete"))
    assert kept > 0
    hub.delay = 0.0
    dialog.download_button.click()
    qtbot.waitUntil(lambda: dialog.fetch.state == "done", timeout=60_000)
    # only the rest was asked for and sent
    assert hub.sent_by_last_get("model.safetensors") == (f"bytes={kept}-",
                                                         len(tiny_gpt2_files()["model.safetensors"]) - kept)


def test_refusals_are_shown_in_the_dialog(window, qtbot, hub, monkeypatch):
    _session, _tab, dialog = open_dialog(window)
    dialog.repo_edit.setText("no such/id")
    dialog.download_button.click()
    qtbot.waitUntil(lambda: dialog.fetch.state == "refused", timeout=30_000)
    assert "not a repository id" in dialog.status_label.text() and dialog.download_button.isEnabled()
    hub.repos[GPT2].gated = 403
    dialog.repo_edit.setText(GPT2)
    dialog.download_button.click()
    qtbot.waitUntil(lambda: dialog.fetch.state == "refused", timeout=30_000)
    assert "gated" in dialog.status_label.text() and "accept its licence" in dialog.status_label.text()
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    dialog.download_button.click()
    qtbot.waitUntil(lambda: dialog.fetch.state == "refused" and "cannot reach" in dialog.status_label.text(),
                    timeout=30_000)


OFFLINE_CHILD = """
import json, socket, sys
tried = []
def refuse(*args, **kwargs):
    tried.append(repr(args[:2]))
    raise OSError("no network in this test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
app = QApplication([])
from app import create_main_window
w = create_main_window(settings=QSettings(sys.argv[1], QSettings.Format.IniFormat))
w.confirm_on_close = False
w.show()
tab = w.inspect.show()
dialog = tab.sources.open_get_model()
dialog.table.setCurrentItem(dialog.table.topLevelItem(2))
for _ in range(20):
    app.processEvents()
print(json.dumps({"tried": tried, "hub": "huggingface_hub" in sys.modules, "shown": dialog.isVisible()}))
w.close()
"""


def test_launch_and_the_model_tab_open_no_socket(tmp_path):
    """Offline is the default: the window, the Model tab and the Get-a-model dialog (a model picked) open no
    connection and do not even import the hub library; only Download does."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path),
           "HF_HUB_CACHE": str(tmp_path / "hub")}
    env.pop("HF_HUB_OFFLINE", None)
    r = subprocess.run([sys.executable, "-c", OFFLINE_CHILD, str(tmp_path / "s.ini")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    assert found == {"tried": [], "hub": False, "shown": True}
