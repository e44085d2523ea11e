"""``patch`` through argparse built here: its JSON and CSV equal the library's ``PretrainedModel.patch``, an image is
written through the app's heatmap export, and every refusal is exit 2 with a one-line reason and no file."""

from __future__ import annotations

import argparse
import csv
import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from app.model_tab.lens_cli import add_patch_parser, cmd_patch  # noqa: E402
from attention_core import load_pretrained  # noqa: E402

CLEAN = "The quick brown fox and Mary went to the café. The quick brown fox"
CORRUPTED = "The quick brown quick and Mary went to the café. The quick brown fox"


def _run(argv, capsys):
    parser = argparse.ArgumentParser(prog="attention-playground")
    add_patch_parser(parser.add_subparsers(dest="command"))
    code = cmd_patch(parser.parse_args(["patch", *map(str, argv)]))
    out, err = capsys.readouterr()
    return code, (json.loads(out.strip().splitlines()[-1]) if code == 0 else None), err


def test_patch_json_csv_and_image_are_the_librarys(hf_models, tmp_path, capsys):
    folder = hf_models["llama"]  # grouped-query: k and v count key/value heads
    model = load_pretrained(folder)
    assert len(model.encode(CLEAN)) == len(model.encode(CORRUPTED))
    ref = model.patch(CLEAN, CORRUPTED, target=7, foil=9, sweep="heads")
    code, summary, err = _run(["--model", folder, "--clean", CLEAN, "--corrupted", CORRUPTED, "--target-id", 7,
                               "--foil-id", 9, "--sweep", "heads", "--out", tmp_path / "p.json"], capsys)
    assert code == 0, err
    assert "batched runs" in err  # progress on stderr
    data = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert data["axes"] == ["layer", "head"] and data["sweep"] == "heads"
    np.testing.assert_array_equal(np.array(data["values"], dtype=float), ref.values)
    assert data["clean"] == ref.clean and data["corrupted"] == ref.corrupted
    assert summary["sweep"] == "heads" and summary["clean"] == round(ref.clean, 6)
    ref_k = model.patch(CLEAN, CORRUPTED, target=7, sweep="k", position=6)
    code, _, _ = _run(["--model", folder, "--clean", CLEAN, "--corrupted", CORRUPTED, "--target-id", 7,
                       "--position", 6, "--sweep", "k", "--out", tmp_path / "k.csv"], capsys)
    rows = list(csv.DictReader(ln for ln in (tmp_path / "k.csv").open(encoding="utf-8") if not ln.startswith("#")))
    assert code == 0 and list(rows[0]) == ["layer", "kv_head", "value", "restored"]
    assert len(rows) == ref_k.values.size
    for row in rows:
        cell = (int(row["layer"]), int(row["kv_head"]))
        assert float(row["value"]) == ref_k.values[cell]
    code, _, _ = _run(["--model", folder, "--clean", CLEAN, "--corrupted", CORRUPTED, "--target-id", 7,
                       "--sweep", "resid", "--out", tmp_path / "r.png"], capsys)
    assert code == 0 and (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("extra, words", [
    (["--corrupted", "The quick brown"], "same number of tokens"),
    (["--corrupted", CORRUPTED, "--target", "quick brown"], "one token"),
    (["--corrupted", CORRUPTED, "--target-id", 10**7], "vocabulary"),
    (["--corrupted", CORRUPTED, "--target-id", 7, "--foil-id", 7], "same token"),
    (["--corrupted", CORRUPTED, "--target-id", 7, "--position", 99], "position"),
])
def test_bad_input_exits_2_with_the_reason_and_no_file(hf_models, tmp_path, capsys, extra, words):
    argv = ["--model", hf_models["gpt2"], "--clean", CLEAN, "--sweep", "heads", "--out", tmp_path / "p.json"]
    if "--target" not in extra and "--target-id" not in extra:
        extra = [*extra, "--target-id", 7]
    code, _, err = _run([*argv, *extra], capsys)
    assert code == 2 and err.startswith("attention-playground patch: ") and words in err, err
    assert not (tmp_path / "p.json").exists()
