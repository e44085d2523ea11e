"""``lens`` and ``attribute`` through argparse built here: their JSON and CSV equal the library's numbers, an image
is written through the app's heatmap export, and every refusal is exit 2 with a one-line reason and no file."""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("transformers")

from family_models import build  # noqa: E402

from app.model_tab.lens_cli import add_attribute_parser, add_lens_parser, cmd_attribute, cmd_lens  # noqa: E402
from attention_core import load_pretrained  # noqa: E402

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"


def _run(command, argv, capsys):
    parser = argparse.ArgumentParser(prog="attention-playground")
    sub = parser.add_subparsers(dest="command")
    add_lens_parser(sub)
    add_attribute_parser(sub)
    run = cmd_lens if command == "lens" else cmd_attribute
    code = run(parser.parse_args([command, *map(str, argv)]))
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    return code, (json.loads(lines[-1]) if code == 0 else None), err


def test_lens_json_and_csv_are_the_librarys(hf_models, tmp_path, capsys):
    folder = hf_models["llama"]
    model = load_pretrained(folder)
    lens = model.logit_lens(TEXT, position=5, top_k=3)
    code, summary, _ = _run("lens", ["--model", folder, "--text", TEXT, "--position", 5, "--top-k", 3,
                                     "--target", " brown", "--out", tmp_path / "l.json"], capsys)
    target = model.encode(" brown")[1]
    assert code == 0 and summary["position"] == 5 and summary["target"] == target
    data = json.loads((tmp_path / "l.json").read_text(encoding="utf-8"))
    assert data["labels"] == list(lens.labels) and data["tokens"] == list(lens.tokens)
    assert [[t["id"] for t in row] for row in data["top"]] == [[i for i, _, _ in row] for row in lens.top]
    assert data["target"]["rank"] == lens.rank_of(target).tolist() and data["target"]["token"] == "␣brown"
    assert summary["target_rank"] == lens.rank_of(target)[-1]
    code, _, _ = _run("lens", ["--model", folder, "--text", TEXT, "--top-k", 2, "--target-id", 7,
                               "--out", tmp_path / "l.csv"], capsys)
    rows = list(csv.DictReader(ln for ln in (tmp_path / "l.csv").open(encoding="utf-8") if not ln.startswith("#")))
    full = model.logit_lens(TEXT, top_k=2)
    assert code == 0 and len(rows) == 2 * len(full.labels)
    assert [int(r["token_id"]) for r in rows[:2]] == [i for i, _, _ in full.top[0]]
    assert float(rows[-1]["target_probability"]) == pytest.approx(full.probs_of(7)[-1], rel=1e-6)


def test_attribute_json_and_csv_are_the_librarys(hf_models, tmp_path, capsys):
    folder = hf_models["gpt2"]
    a = load_pretrained(folder).attribute(TEXT, target=11, foil=7, position=-2)
    code, summary, _ = _run("attribute", ["--model", folder, "--text", TEXT, "--target-id", 11, "--foil-id", 7,
                                          "--position", -2, "--out", tmp_path / "a.json"], capsys)
    data = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert code == 0 and summary["position"] == a.position and data["foil"]["id"] == 7
    np.testing.assert_array_equal(np.array(data["heads"]), a.heads)
    assert data["total"] == a.total and data["actual"] == a.actual and data["biases"] == a.biases
    code, _, _ = _run("attribute", ["--model", folder, "--text", TEXT, "--target-id", 11, "--foil-id", 7,
                                    "--position", -2, "--out", tmp_path / "a.csv"], capsys)
    rows = list(csv.DictReader(ln for ln in (tmp_path / "a.csv").open(encoding="utf-8") if not ln.startswith("#")))
    assert code == 0 and len(rows) == 2 + a.heads.size + len(a.mlps)
    assert sum(float(r["value"]) for r in rows) == pytest.approx(a.total, rel=1e-12)


def test_images_are_written(hf_models, tmp_path, capsys):
    folder = hf_models["gpt2"]
    for command, extra in (("lens", ["--target-id", 11]), ("attribute", ["--target-id", 11])):
        out = tmp_path / f"{command}.png"
        code, summary, err = _run(command, ["--model", folder, "--text", TEXT, *extra, "--out", out], capsys)
        assert code == 0, err
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and summary["out"] == str(out)


def test_refusals_exit_2_with_the_reason_and_write_nothing(hf_models, tmp_path, capsys):
    llama = hf_models["llama"]
    out = tmp_path / "x.json"
    n = len(load_pretrained(llama).encode(TEXT))
    cases = [
        ("attribute", ["--target", " fox"], "--target: ' fox' is 2 tokens ('␣fo', 'x'), not one"),
        ("attribute", ["--target-id", 400], "--target-id: token id 400 is outside the vocabulary (0 to 399)"),
        ("attribute", ["--target-id", 5, "--foil-id", 5], "--foil is the same token as --target (5)"),
        ("lens", ["--position", n], f"--position {n} is outside the text's {n} tokens"),
        ("lens", ["--top-k", 0], "--top-k 0 is out of range: expected 1 to 100"),
        ("lens", ["--model", tmp_path / "nowhere"], "no such file or folder"),
    ]
    for command, argv, reason in cases:
        base = ["--model", llama, "--text", TEXT, "--out", out]
        if "--model" in argv:
            base = base[2:]
        code, _, err = _run(command, [*base, *argv], capsys)
        assert code == 2 and f"attention-playground {command}: " in err and reason in err, (argv, err)
        assert "Traceback" not in err and not out.exists()
    code, _, err = _run("lens", ["--model", llama, "--text", TEXT, "--out", tmp_path / "x.txt"], capsys)
    assert code == 2 and "--out" in err and ".json, .csv, .png, .svg, .pdf" in err
    bert = build(tmp_path / "models", ("bert",))["bert"]
    code, _, err = _run("attribute", ["--model", bert, "--text", "the [MASK] fox", "--target-id", 5, "--out", out],
                        capsys)
    assert code == 2 and "post-LN blocks renormalise" in err and not out.exists()


def test_flag_refusals_come_before_torch(tmp_path):
    code = ("import argparse, sys\n"
            "from app.model_tab.lens_cli import add_lens_parser, cmd_lens\n"
            "p = argparse.ArgumentParser(); add_lens_parser(p.add_subparsers())\n"
            f"argv = ['lens', '--model', {str(tmp_path)!r}, '--text', 'hi', '--top-k', '500', '--out', 'x.json']\n"
            "assert cmd_lens(p.parse_args(argv)) == 2\n"
            "sys.exit('torch imported' if 'torch' in sys.modules else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "--top-k 500 is out of range" in r.stderr
