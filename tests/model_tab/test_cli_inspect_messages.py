"""``inspect`` on a real (tiny, trained here) model: its refusals name the flag typed, not the library's words
(``--ablate 9.1`` not ``--layer 9``, ``--truncate`` not ``truncate=True``, ``--seq-len`` not ``seq_len``), and the
grid figure (every head, or one layer's) labels each map's rows and columns with the tokens."""

from __future__ import annotations

import contextlib
import io
import re

import pytest


def inspect(*argv: str) -> tuple[int, str, str]:
    from app.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["inspect", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("argv", "line"), [
    (["--ablate", "9.1", "--text", "3 5 7"], "--ablate 9.1: the model has no layer 9 (layers 0 to 1)"),
    (["--ablate", "1.9", "--text", "3 5 7"], "--ablate 1.9: the model has no head 9 (heads 0 to 3)"),
    (["--text", " ".join(["3"] * 30), "--out", "{tmp}/x.json"],
     "--text is 30 tokens, longer than the model's 12 positions; shorten it or add --truncate to keep the first 12"),
    (["--ablate", "1.1", "--text", " ".join(["3"] * 30)], "--text is 30 tokens, longer than the model's 12 positions"),
    (["--text", "3 99", "--out", "{tmp}/x.json"], "--text: "),
    (["--detect", "induction", "--seq-len", "40", "--out", "{tmp}/d.json"], "--seq-len 40 does not fit"),
    (["--ablate", "1.1", "--text", "3 5 7", "--seq-len", "1"], "--seq-len 1 does not fit"),
])
def test_refusals_after_the_model_is_read_name_the_flag(induction_model, tmp_path, argv, line):
    code, _, err = inspect("--model", str(induction_model), *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and err.startswith(f"attention-playground inspect: {line}"), err
    assert len(err.strip().splitlines()) == 1
    for word in ("truncate=True", "seq_len ", "--layer 9", "--head 9"):
        assert word not in err


def test_ablate_cuts_a_long_text_with_truncate(induction_model):
    code, out, err = inspect("--model", str(induction_model), "--ablate", "1.1", "--text", " ".join(["3 5"] * 15),
                             "--truncate", "--seq-len", "4")
    assert code == 0, err
    assert '"heads": [[1, 1]]' in out


def svg_texts(path) -> list[str]:
    """Every text the SVG draws (Qt writes each label as one <text> element)."""
    return [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text(), re.S)]


@pytest.mark.parametrize("layer", [None, 1])
def test_the_grid_figure_labels_every_map_with_the_tokens(induction_model, tmp_path, layer):
    """Queries down the left of every layer's row of maps, keys under every head's column: with 5 tokens every
    label fits, so each token is drawn once per layer (left) and once per head (below); before, the grid had only
    L/H names and a token was nowhere but in the title's quoted text."""
    from app.model_tab.qt.figure import write_inspect_figure
    from attention_core.pretrained import load_pretrained

    model = load_pretrained(induction_model, threads=1)
    trace = model.trace("3 5 7 9 11")
    out = tmp_path / "grid.svg"
    write_inspect_figure(trace, out, layer=layer)
    texts = svg_texts(out)
    layers, heads = (2 if layer is None else 1), trace.info.heads
    for token in ("3", "5", "7", "9", "11"):
        assert texts.count(token) == layers + heads, (token, texts)
    assert "query" in texts and "key" in texts
    assert [t for t in texts if re.fullmatch(r"L\d", t)] == (["L0", "L1"] if layer is None else ["L1"])
    assert [t for t in texts if re.fullmatch(r"H\d", t)] == [f"H{h}" for h in range(heads)]
