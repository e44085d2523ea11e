"""File dialogs open in the folder the user last chose, in any of the app's dialogs; the first time in their
Documents (or home) folder, never the app's hidden data folder."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from app.common.paths import data_dir, default_dir


def test_the_first_dialog_opens_in_documents_or_home_then_where_the_user_went(window, tmp_path, monkeypatch):
    starts: list[str] = []
    chosen = tmp_path / "figures"
    chosen.mkdir()

    def save(_parent, _title, start, _filter=""):
        starts.append(start)
        return str(chosen / "w.png"), ""

    def folder(_parent, _title, start):
        starts.append(start)
        return str(tmp_path)

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(save))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(folder))
    first = Path(window.settings.last_dir())
    assert first == default_dir() and first in (Path.home(), Path(default_dir()))
    assert first == Path.home() or first.parent == Path.home()  # home, or its Documents folder
    assert "AttentionPlayground" not in str(first) and first != data_dir(create=False)
    hm = window.pipeline.heatmaps["weights"]
    hm.export_dialog("png")  # a map's Export PNG…
    assert Path(starts[-1]).parent == first
    assert (chosen / "w.png").is_file()
    window.save_session_as()  # another dialog: it opens where the user went last
    assert Path(starts[-1]).parent == chosen
    window.export_all_dialog()  # a folder dialog too
    assert Path(starts[-1]) == chosen
    window.save_session_as()
    assert Path(starts[-1]).parent == tmp_path  # the folder chosen for "Export all steps"
    # remembered in the window's settings, for the next start
    window.settings.q.sync()
    assert Path(str(window.settings.q.value("files/last_dir"))) == chosen  # the last one: w.png in figures/


def test_the_model_dialogs_do_not_open_the_data_folder(panel, tmp_path, monkeypatch):
    starts: list[str] = []

    def open_file(_parent, _title, start, _filter=""):
        starts.append(start)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(open_file))
    panel._load_dialog()
    assert starts == [str(default_dir())]  # not the hidden data folder's models/
