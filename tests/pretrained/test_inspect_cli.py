"""``inspect`` through argparse built here (the lead wires it into app/cli.py): json, csv, images, detect, ablate,
and every refusal as exit 2 with a one-line reason."""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import types

import numpy as np
import pytest

pytest.importorskip("transformers")

from app.model_tab.cli import add_inspect_parser, cmd_inspect  # noqa: E402
from attention_core import load_pretrained  # noqa: E402
from tests.tolerance import assert_close

TEXT = "The quick brown fox and Mary went to the café. The quick brown fox"


def _run(argv, capsys):
    parser = argparse.ArgumentParser(prog="attention-playground")
    add_inspect_parser(parser.add_subparsers(dest="command"))
    code = cmd_inspect(parser.parse_args(["inspect", *map(str, argv)]))
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    return code, (json.loads(lines[-1]) if code == 0 else None), err


def test_json_whole_model_and_one_head(hf_models, tmp_path, capsys):
    folder = hf_models["gpt2"]
    trace = load_pretrained(folder).trace(TEXT)
    code, summary, _ = _run(["--model", folder, "--text", TEXT, "--out", tmp_path / "a.json"], capsys)
    assert code == 0 and summary["tokens"] == len(trace) and summary["layer"] is None
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["ids"] == trace.ids.tolist() and data["tokens"] == trace.tokens
    assert data["info"]["family"] == "gpt2" and len(data["top_next"]) == len(trace)
    assert_close(np.array(data["attentions"]), trace.attentions)
    code, summary, _ = _run(["--model", folder, "--text", TEXT, "--layer", 1, "--head", 2, "--out",
                             tmp_path / "b.json"], capsys)
    data = json.loads((tmp_path / "b.json").read_text())
    assert (summary["layer"], summary["head"], data["layer"], data["head"]) == (1, 2, 1, 2)
    assert_close(np.array(data["attentions"]), trace.attentions[1, 2])  # 0-based CLI


def test_csv_rows_are_the_attended_pairs(hf_models, tmp_path, capsys):
    folder = hf_models["gpt_neo"]  # layer 1 is local (window 4)
    trace = load_pretrained(folder).trace(TEXT)
    code, summary, _ = _run(["--model", folder, "--text", TEXT, "--layer", 1, "--out", tmp_path / "w.csv"], capsys)
    rows = list(csv.DictReader(ln for ln in (tmp_path / "w.csv").open(encoding="utf-8") if not ln.startswith("#")))
    assert code == 0 and summary["rows"] == len(rows) == 4 * int(trace.mask(1).sum())
    assert {r["layer"] for r in rows} == {"1"} and {r["head"] for r in rows} == {"0", "1", "2", "3"}
    assert all(0 <= int(r["query_pos"]) - int(r["key_pos"]) < 4 for r in rows)
    r = rows[7]
    assert float(r["weight"]) == pytest.approx(trace.attentions[1, int(r["head"]), int(r["query_pos"]),
                                                                int(r["key_pos"])], abs=1e-6)
    assert r["query_token"] == trace.tokens[int(r["query_pos"])]


def test_images_go_to_the_figure_module_or_are_refused(hf_models, tmp_path, capsys, monkeypatch):
    folder = hf_models["gpt2"]
    monkeypatch.setitem(sys.modules, "app.model_tab.qt.figure", None)  # as when the module is missing
    code, _, err = _run(["--model", folder, "--text", TEXT, "--out", tmp_path / "f.png"], capsys)
    assert code == 2 and "attention-playground inspect: image output is unavailable" in err
    assert "Traceback" not in err and not (tmp_path / "f.png").exists()
    calls = []
    fake = types.ModuleType("app.model_tab.qt.figure")
    fake.write_inspect_figure = lambda trace, path, *, layer, head, title: calls.append((len(trace), path, layer,
                                                                                        head, title))
    monkeypatch.setitem(sys.modules, "app.model_tab.qt.figure", fake)
    code, summary, _ = _run(["--model", folder, "--text", TEXT, "--layer", 1, "--head", 2, "--out",
                             tmp_path / "f.svg"], capsys)
    assert code == 0 and calls == [(summary["tokens"], tmp_path / "f.svg", 1, 2, "gpt2 · layer 1 · head 2")]


def test_a_real_image_through_the_apps_figure(hf_models, tmp_path, capsys):
    pytest.importorskip("app.model_tab.qt.figure", reason="the Model tab's figure module is not importable here")
    out = tmp_path / "heads.png"
    code, summary, err = _run(["--model", hf_models["gpt2"], "--text", TEXT, "--layer", 1, "--head", 0, "--out", out],
                              capsys)
    assert code == 0, err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and summary["out"] == str(out)


def test_detect_writes_scores_and_heads_above(own_model_dir, tmp_path, capsys):
    out = tmp_path / "ind.json"
    code, summary, _ = _run(["--model", own_model_dir, "--detect", "induction", "--batch", 16, "--out", out], capsys)
    data = json.loads(out.read_text())
    assert code == 0 and data["kind"] == "induction" and data["threshold"] == 0.4 and data["seq_len"] == 5
    assert np.array(data["scores"]).shape == (2, 4) and np.array(data["ids"]).shape == (16, 10)
    assert data["best"]["layer"] == 1 and data["best"]["score"] > 0.4  # numbered from 0: the second layer
    assert all(h["layer"] == 1 for h in data["heads_above"]) and summary["best"] == data["best"]
    assert summary["heads_above"] == [[h["layer"], h["head"]] for h in data["heads_above"]]


def test_ablate_prints_the_losses(own_model_dir, capsys):
    code, summary, _ = _run(["--model", own_model_dir, "--ablate", "1.0,1.1,1.2,1.3", "--text", "5 9 3 12 5 9 3 12",
                             "--batch", 8], capsys)
    assert code == 0 and summary["heads"] == [[1, 0], [1, 1], [1, 2], [1, 3]] and summary["how"] == "zero"
    assert summary["repeat_second_half_loss_ablated"] > summary["repeat_second_half_loss"] + 1.0
    assert summary["text_change"] == pytest.approx(summary["text_loss_ablated"] - summary["text_loss"], abs=1e-5)


@pytest.mark.parametrize(("argv", "reason"), [
    (["--text", "hi", "--out", "x.json"], "no such file or folder"),
    (["--text", "hi", "--out", "x.txt"], "must end in .json, .csv, .png, .svg, .pdf"),
    (["--text", "hi"], "--out FILE is required"),
    (["--out", "x.json"], "--text is required"),
    (["--text", "hi", "--head", "1", "--out", "x.json"], "--head needs --layer"),
    (["--text", "hi", "--layer", "2", "--out", "x.json"], "--layer 2 does not exist: the model has layers 0 to 1"),
    (["--text", "hi", "--layer", "1", "--head", "4", "--out", "x.json"], "--head 4 does not exist"),
    (["--detect", "induction", "--out", "x.csv"], "--detect writes FILE.json"),
    (["--ablate", "2-1", "--text", "hi"], "bad --ablate '2-1': use LAYER.HEAD numbered from 0"),
    (["--ablate", "-1.1", "--text", "hi"], "bad --ablate '-1.1'"),
    (["--ablate", "2.1", "--text", "hi"], "--ablate 2.1: the model has no layer 2 (layers 0 to 1)"),
    (["--text", "x " * 100, "--out", "x.json"], "longer than the model's 64 positions"),
    (["--detect", "induction", "--seq-len", "40", "--out", "x.json"], "--seq-len 40 does not fit"),
])
def test_refusals_exit_2_with_the_reason(hf_models, tmp_path, capsys, monkeypatch, argv, reason):
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "missing" if reason == "no such file or folder" else hf_models["gpt2"]
    code, _, err = _run(["--model", model, *argv], capsys)
    assert code == 2 and err.startswith("attention-playground inspect: ") and reason in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_json_csv_detect_and_ablate_load_no_qt(hf_models, tmp_path):
    folder = hf_models["gpt2"]
    code = (
        "import argparse, sys\n"
        "from app.model_tab.cli import add_inspect_parser, cmd_inspect\n"
        "p = argparse.ArgumentParser(); add_inspect_parser(p.add_subparsers())\n"
        f"for argv in ([ '--text', 'hi there', '--out', {str(tmp_path / 'q.json')!r}],"
        f" ['--text', 'hi there', '--out', {str(tmp_path / 'q.csv')!r}],"
        f" ['--detect', 'first-token', '--seq-len', '5', '--out', {str(tmp_path / 'd.json')!r}],"
        " ['--ablate', '1.1', '--text', 'hi there', '--seq-len', '5']):\n"
        f"    assert cmd_inspect(p.parse_args(['inspect', '--model', {str(folder)!r}, *argv])) == 0\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6', 'superqt')]\n"
        "sys.exit(str(bad) if bad else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(r.stdout.strip().splitlines()) == 4
