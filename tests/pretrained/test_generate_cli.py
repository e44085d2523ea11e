"""``generate`` on the command line: every output format, the summary line, refusals (exit 2 before any work) and
Ctrl+C / SIGTERM between tokens keeping the tokens written so far."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from hang_guard import wait_until  # noqa: E402

from app.cli import main  # noqa: E402
from attention_core import load_pretrained  # noqa: E402
from tests.pretrained.generate_families import text_for  # noqa: E402
from tests.tolerance import assert_close

ROOT = Path(__file__).resolve().parents[2]


def _run(argv, capsys):
    code = main(["generate", *map(str, argv)])
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    return code, (json.loads(lines[-1]) if code == 0 else None), err


def test_json_holds_every_step_as_the_library_writes_it(hf_models, tmp_path, capsys):
    folder = hf_models["llama"]
    gen = load_pretrained(folder).generate(text_for("llama"), max_new_tokens=5, cache="sinks", window=6, sinks=2)
    code, summary, _ = _run(["--model", folder, "--prompt", text_for("llama"), "--max-new-tokens", 5, "--cache",
                             "sinks", "--window", 6, "--sinks", 2, "--out", tmp_path / "g.json"], capsys)
    assert code == 0
    assert {"text", "new_tokens", "tokens_per_second", "cache_bytes"} <= set(summary)
    assert summary["text"] == gen.text and summary["new_tokens"] == len(gen.new_ids)
    assert summary["cache_bytes"] == gen.steps[-1].cache_bytes
    data = json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))
    assert data["new_ids"] == gen.new_ids and data["prompt_ids"] == gen.prompt_ids and data["cache"] == "sinks"
    assert len(data["steps"]) == len(gen.steps)
    for ours, step in zip(data["steps"], gen.steps):
        assert ours["cache_positions"] == step.cache_positions and ours["evicted"] == step.evicted
        assert_close(np.array(ours["attentions"]), step.attentions)
        assert ours["kl_from_full"] == pytest.approx(step.kl_from_full)


def test_csv_one_row_a_step(hf_models, tmp_path, capsys):
    folder = hf_models["gpt2"]
    code, summary, _ = _run(["--model", folder, "--prompt", text_for("gpt2"), "--max-new-tokens", 4, "--temperature",
                             0.9, "--top-k", 5, "--seed", 3, "--out", tmp_path / "g.csv"], capsys)
    rows = list(csv.DictReader(ln for ln in (tmp_path / "g.csv").open(encoding="utf-8") if not ln.startswith("#")))
    gen = load_pretrained(folder).generate(text_for("gpt2"), max_new_tokens=4, temperature=0.9, top_k=5, seed=3)
    assert code == 0 and len(rows) == summary["new_tokens"] == len(gen.steps)
    assert [int(r["id"]) for r in rows] == gen.new_ids
    assert [int(r["query_position"]) for r in rows] == [s.query_position for s in gen.steps]
    assert all(r["kl_from_full"] == "" for r in rows)


@pytest.mark.parametrize("suffix", [".png", ".svg", ".gif"])
def test_images_and_the_film(hf_models, tmp_path, capsys, suffix):
    out = tmp_path / f"g{suffix}"
    code, summary, err = _run(["--model", hf_models["gpt2"], "--prompt", text_for("gpt2"), "--max-new-tokens", 3,
                               "--cache", "window", "--window", 5, "--layer", 1, "--head", 2, "--out", out], capsys)
    assert code == 0, err
    data = out.read_bytes()
    assert data[:4] == {".png": b"\x89PNG", ".svg": b"<?xm", ".gif": b"GIF8"}[suffix] or b"<svg" in data[:400]
    if suffix == ".gif":
        from PIL import Image

        with Image.open(out) as film:
            assert film.n_frames == summary["new_tokens"] == 3


def test_the_grown_map_places_each_row_at_its_cache_positions(hf_models):
    from app.model_tab.qt.generate_figure import grown_attention

    gen = load_pretrained(hf_models["gpt2"]).generate(text_for("gpt2"), max_new_tokens=4, cache="sinks", window=4,
                                                     sinks=1)
    values, blocked, rows, cols = grown_attention(gen, 1, 3)
    assert values.shape == (4, gen.steps[-1].query_position + 1) and len(rows) == 4 and len(cols) == values.shape[1]
    for i, step in enumerate(gen.steps):
        assert np.flatnonzero(~blocked[i]).tolist() == step.cache_positions
        np.testing.assert_array_equal(values[i, step.cache_positions], step.attentions[1, 3])


@pytest.mark.parametrize("extra,reason", [
    (["--cache", "window"], "--cache window needs --window"),
    (["--cache", "window", "--window", "0"], "--window 0 is out of range"),
    (["--cache", "sinks", "--window", "4", "--sinks", "4"], "--sinks 4 is out of range"),
    (["--cache", "sinks", "--window", "4", "--sinks", "-1"], "--sinks -1 is out of range"),
    (["--cache", "sinks", "--window", "3"], "--sinks 4 is out of range"),  # the default 4 against a window of 3
    (["--window", "5"], "--window applies to --cache window and --cache sinks only"),
    (["--cache", "window", "--window", "5", "--sinks", "2"], "--sinks applies to --cache sinks only"),
    (["--top-p", "0"], "--top-p 0.0 is out of range"), (["--top-p", "1.5"], "--top-p 1.5 is out of range"),
    (["--top-k", "0"], "--top-k 0 is out of range"), (["--temperature", "-1"], "--temperature -1.0 is out of range"),
    (["--temperature", "nan"], "--temperature nan is out of range"),
    (["--max-new-tokens", "0"], "--max-new-tokens 0 is out of range"),
    (["--seed", "-3"], "--seed -3 is out of range"),
    (["--layer", "1"], "--layer applies to .png, .svg and .gif only"),
])
def test_bad_options_exit_2_before_the_model_is_read(hf_models, tmp_path, capsys, monkeypatch, extra, reason):
    import attention_core.pretrained as pretrained

    monkeypatch.setattr(pretrained, "load_pretrained", lambda *a, **k: pytest.fail("the model was read"))
    code, _, err = _run(["--model", hf_models["gpt2"], "--prompt", "The", *extra, "--out", tmp_path / "g.json"],
                        capsys)
    assert code == 2 and err.startswith(f"attention-playground generate: {reason}"), err
    assert not (tmp_path / "g.json").exists()


@pytest.mark.parametrize("argv,reason", [
    (["--prompt", "", "--out", "{t}/g.json"], "--prompt is empty"),
    (["--prompt", "x", "--out", "{t}/g.txt"], "--out {t}/g.txt: the file must end in"),
    (["--prompt", "x", "--out", "{t}/no/g.json"], "--out"),
    (["--prompt", "x", "--layer", "7", "--out", "{t}/g.png"], "--layer 7 does not exist: the model has layers 0 to 1"),
    (["--prompt", "x", "--layer", "0", "--head", "4", "--out", "{t}/g.png"], "--head 4 does not exist"),
])
def test_what_only_the_model_or_the_files_tell_is_refused_too(hf_models, tmp_path, capsys, argv, reason):
    argv = [a.replace("{t}", str(tmp_path)) for a in argv]
    code, _, err = _run(["--model", hf_models["gpt2"], *argv], capsys)
    assert code == 2 and err.startswith(f"attention-playground generate: {reason.replace('{t}', str(tmp_path))}"), err
    assert not list(tmp_path.glob("g.*"))


@pytest.fixture(scope="module")
def long_model(tmp_path_factory, hf_models):
    """A tiny GPT-2 with 4096 positions: thousands of tokens to write, so a signal lands mid-way."""
    import torch
    import transformers as T

    from tests.pretrained.conftest import VOCAB, _redraw

    model = T.GPT2LMHeadModel(T.GPT2Config(n_layer=1, n_head=2, n_embd=16, n_positions=4096, vocab_size=VOCAB,
                                           bos_token_id=1, eos_token_id=None))
    torch.manual_seed(0)
    _redraw(model, 0)
    folder = tmp_path_factory.mktemp("long") / "gpt2-long"
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "tokenizer.json").write_bytes((hf_models["gpt2"] / "tokenizer.json").read_bytes())
    return folder


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_stop_keeps_the_tokens_written_so_far(long_model, tmp_path, signal_name):
    sig = getattr(signal, signal_name)
    out = tmp_path / "g.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([sys.executable, "-m", "app", "generate", "--model", str(long_model), "--prompt", "The",
                             "--max-new-tokens", "4000", "--out", str(out)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []

    def progressed() -> bool:  # the first "generate: token N/4000" line: decoding is under way
        line = proc.stderr.readline() if proc.poll() is None else "eof"
        lines.append(line)
        return "generate: token" in line or line == "eof"

    wait_until(progressed, "decoding under way", hang_guard_s=180, poll_s=0.0)
    assert proc.poll() is None, lines
    time.sleep(0.2)
    os.killpg(proc.pid, sig) if sig == signal.SIGINT else proc.send_signal(sig)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert err.strip().splitlines()[-1] == "attention-playground generate: stopped" and "Traceback" not in err
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["stopped"] == "interrupted" and 0 < summary["new_tokens"] < 4000
    data = json.loads(out.read_text(encoding="utf-8"))
    assert len(data["new_ids"]) == len(data["steps"]) == summary["new_tokens"] and data["stopped"] == "interrupted"
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]  # no temporary file left
