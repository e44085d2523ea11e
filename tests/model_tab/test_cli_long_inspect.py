"""``inspect`` on a text longer than ``LONG_TRACE_TOKENS``: without ``--layer``/``--head`` the JSON
held ``trace.attentions``, which a long trace does not keep, and the command exited 1 ("unexpected error
(AttributeError …)"); now it writes the overview, checked against transformers' eager attention pooled by hand. A
one-head image of a long text hatched each blocked cell one by one (8.4 million at 4,095 tokens: 125–199 s, a Ctrl+C
acted on only after it); now it draws none. And a stop during the writing of a file still prints the summary line
of the file, whole, before the command ends with 130 (inspect and export)."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest

from app.cli import main
from app.common import stopping
from app.common.entry import guarded
from tests.tolerance import assert_close

T = 1100  # > LONG_TRACE_TOKENS (1,024)


def _text(n: int = T) -> str:
    return " ".join(f"w{i % 2000 + 1}" for i in range(n))


def _summary(capsys) -> dict:
    out = capsys.readouterr().out.strip().splitlines()
    assert out, "no summary line on stdout"
    return json.loads(out[-1])


def _pooled(maps: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """(..., T, T) → block max and block mean (..., P, P), by hand."""
    t = maps.shape[-1]
    side = -(-t // block)
    mx = np.zeros((*maps.shape[:-2], side, side))
    mean = np.zeros_like(mx)
    for i in range(side):
        for j in range(side):
            tile = maps[..., i * block:(i + 1) * block, j * block:(j + 1) * block]
            mx[..., i, j] = tile.max(axis=(-2, -1))
            mean[..., i, j] = tile.mean(axis=(-2, -1))
    return mx, mean


def test_a_long_text_as_json_without_layer_and_head_writes_the_overview(long_llama, tmp_path, capsys):
    import torch
    import transformers as tr

    from attention_core.pretrained.trace import LONG_TRACE_TOKENS

    assert T > LONG_TRACE_TOKENS
    out = tmp_path / "long.json"
    assert main(["inspect", "--model", str(long_llama), "--text", _text(), "--out", str(out)]) == 0
    summary = _summary(capsys)
    assert summary["tokens"] == T and summary["long"]["tokens"] == T
    data = json.loads(out.read_text())
    assert data["attentions"] is None
    ov = data["overview"]
    block = ov["block"]
    assert block == -(-T // 128)
    ref_model = tr.AutoModelForCausalLM.from_pretrained(long_llama, attn_implementation="eager")
    with torch.no_grad():
        ref = ref_model(torch.tensor([data["ids"]]), output_attentions=True).attentions
    maps = np.stack([a[0].numpy() for a in ref])  # (layers, heads, T, T), transformers' eager weights
    want_max, want_mean = _pooled(maps, block)
    assert_close(np.array(ov["max"]), want_max, dtype=np.float32)
    assert_close(np.array(ov["mean"]), want_mean, dtype=np.float32)

    one = tmp_path / "layer1.json"  # --layer alone: that layer's heads (a long trace refused it before)
    assert main(["inspect", "--model", str(long_llama), "--text", _text(), "--layer", "1", "--out", str(one)]) == 0
    assert np.array_equal(np.array(json.loads(one.read_text())["overview"]["max"]), np.array(ov["max"][1]))


def test_a_long_texts_one_head_image_hatches_no_cell(long_llama, tmp_path, capsys, monkeypatch):
    """The blocked cells of a long map are drawn as their weight, 0 (hatching painted one rectangle per cell); a
    short map keeps its hatching. Checked on what the figure hands the heatmap writer, which still writes it."""
    import app.widgets.file_export as file_export

    real, seen = file_export.export_heatmap, []

    def spy(*args, **kwargs):
        seen.append(kwargs.get("blocked"))
        return real(*args, **kwargs)

    monkeypatch.setattr(file_export, "export_heatmap", spy)
    for n, name in ((T, "long.png"), (12, "short.png")):
        out = tmp_path / name
        assert main(["inspect", "--model", str(long_llama), "--text", _text(n), "--layer", "0", "--head", "1",
                     "--out", str(out)]) == 0
        assert _summary(capsys)["out"] == str(out) and out.stat().st_size > 1000
    assert seen[0] is None
    assert seen[1] is not None and seen[1].shape == (12, 12) and seen[1][0, 1]  # causal: the future blocked


@pytest.fixture
def _stop_handling():
    stopping.reset()
    yield
    stopping.reset()


def _signalling(real):
    """``real`` with a Ctrl+C sent to this process as it starts: the stop lands inside the writing."""
    def write(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)
    return write


def test_a_stop_while_inspect_writes_its_file_still_prints_its_summary(long_llama, tmp_path, capsys, monkeypatch,
                                                                       _stop_handling):
    import app.model_tab.cli as inspect_cli

    monkeypatch.setattr(inspect_cli, "_write_json", _signalling(inspect_cli._write_json))
    out = tmp_path / "short.json"
    argv = ["inspect", "--model", str(long_llama), "--text", _text(8), "--out", str(out)]
    assert guarded(lambda: main(argv), argv) == 130
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])["out"] == str(out)  # the file is whole: said so
    assert len(json.loads(out.read_text())["attentions"]) == 2
    assert "attention-playground inspect: stopped" in captured.err


def test_a_stop_while_export_writes_its_image_still_prints_its_path(tmp_path, capsys, monkeypatch, _stop_handling):
    import app.playground.cli as export_cli

    monkeypatch.setattr(export_cli, "_write", _signalling(export_cli._write))
    out = tmp_path / "w.png"
    argv = ["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", str(out)]
    assert guarded(lambda: main(argv), argv) == 130
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == str(out.resolve()) and out.stat().st_size > 1000
    assert "attention-playground export: stopped" in captured.err
