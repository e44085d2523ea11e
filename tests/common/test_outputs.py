"""Output paths checked before any work (app/common/outputs.py): the folder exists and can be written, a file is
not a folder and the other way round, a run is not replaced without --force; nothing is created here."""

from __future__ import annotations

import os

import pytest

from app.common.outputs import check_output_file, check_output_folder, check_run_folder
from app.common.validation import Refused

ROOT_USER = os.geteuid() == 0


def test_an_output_file_needs_its_folder(tmp_path):
    assert check_output_file(tmp_path / "x.png") == tmp_path / "x.png"
    with pytest.raises(Refused, match=r"--out .*missing/x.png: the folder .*missing does not exist"):
        check_output_file(tmp_path / "missing" / "x.png")
    assert not (tmp_path / "missing").exists()  # no folder created
    (tmp_path / "file").write_text("x")
    with pytest.raises(Refused, match="is a file, not a folder"):
        check_output_file(tmp_path / "file" / "x.png")
    with pytest.raises(Refused, match="is a folder; name a file"):
        check_output_file(tmp_path)
    with pytest.raises(Refused, match=r"--gif must name a \.gif file"):
        check_output_file(tmp_path / "x.png", "--gif", (".gif",))
    assert list(tmp_path.iterdir()) == [tmp_path / "file"]  # the writability probe left nothing


def test_a_folder_nobody_can_write_in_is_refused():
    with pytest.raises(Refused, match=r"cannot write in /proc \(no file can be created there\)"):
        check_output_file("/proc/x.csv")
    with pytest.raises(Refused, match="cannot write in /proc"):
        check_run_folder("/proc/run")


@pytest.mark.skipif(ROOT_USER, reason="root writes in a read-only folder; /proc stands in for it above")
def test_a_read_only_folder_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(Refused, match="cannot write in"):
            check_output_file(ro / "x.png")
    finally:
        ro.chmod(0o755)


def test_a_run_folder(tmp_path):
    assert check_run_folder(tmp_path / "new") == tmp_path / "new"  # created later, by the run
    assert not (tmp_path / "new").exists()
    assert check_run_folder(tmp_path) == tmp_path  # an empty folder is fine
    (tmp_path / "model.safetensors").write_bytes(b"x")
    with pytest.raises(Refused, match=r"a run is already there \(model.safetensors\); add --force"):
        check_run_folder(tmp_path)
    assert check_run_folder(tmp_path, force=True) == tmp_path
    with pytest.raises(Refused, match="is a file, not a folder"):
        check_run_folder(tmp_path / "model.safetensors")
    with pytest.raises(Refused, match="does not exist"):
        check_run_folder(tmp_path / "a" / "b")


def test_an_output_folder(tmp_path):
    assert check_output_folder(tmp_path / "renders") == tmp_path / "renders"
    (tmp_path / "w.png").write_bytes(b"x")
    with pytest.raises(Refused, match=r"--self-test .*w.png: is a file, not a folder"):
        check_output_folder(tmp_path / "w.png", "--self-test")
