"""A config whose ``bos_token_id`` lies outside the vocabulary (a tiny GPT-2 keeping GPT-2's 50256 with 400 tokens,
as configs copied from a larger model do): the text traced fine but every detector crashed ("IndexError: index
50256 is out of bounds" in the window, "unexpected error" and a crash log from ``inspect --detect``). The probe now
skips a BOS the model cannot embed: it is then exactly the probe of the same model with no BOS configured."""

from __future__ import annotations

import argparse
import json
import shutil

import numpy as np
import pytest

pytest.importorskip("transformers")

from attention_core import load_pretrained  # noqa: E402


@pytest.fixture(scope="module")
def bos_pair(hf_models, tmp_path_factory):
    """(the tiny GPT-2 with bos_token_id 50256, the same model with no bos_token_id)."""
    root = tmp_path_factory.mktemp("bos")
    out = []
    for name, bos in (("far-bos", 50256), ("no-bos", None)):
        folder = root / name
        shutil.copytree(hf_models["gpt2"], folder)
        cfg = json.loads((folder / "config.json").read_text())
        cfg["bos_token_id"] = bos
        (folder / "config.json").write_text(json.dumps(cfg))
        out.append(folder)
    return out


def test_the_detectors_skip_a_bos_outside_the_vocabulary(bos_pair):
    from app.model_tab.model.detect_runs import run_detectors
    from attention_core.phenomena import ablation_scan, all_head_scores, head_scores, repeated_tokens
    from attention_core.phenomena.detect import bos_offset, repeated_ids

    far, plain = (load_pretrained(p) for p in bos_pair)
    assert far.spec.bos_token_id == 50256 and far.spec.vocab_size == 400  # the premise
    assert bos_offset(far) == 0
    ids = repeated_ids(far, 8, 0, 2)
    assert ids.shape == (2, 16) and (ids < 400).all() and (ids[:, :8] == ids[:, 8:]).all()  # x x, no BOS
    for kind in ("previous-token", "induction"):
        np.testing.assert_allclose(head_scores(far, kind).scores, head_scores(plain, kind).scores)
    assert set(all_head_scores(far)) == {"previous-token", "duplicate-token", "induction", "first-token"}
    np.testing.assert_allclose(repeated_tokens(far).losses, repeated_tokens(plain).losses)
    scan = ablation_scan(far, "The quick brown fox")
    assert scan.completed and np.isfinite(scan.repeat_change).all()
    d = run_detectors(far)  # the Detect view's run
    assert d.offset == 0 and len(d.tokens) == 2 * d.seq_len


def test_inspect_detect_on_such_a_model_exits_0(bos_pair, tmp_path, capsys):
    from app.model_tab.cli import add_inspect_parser, cmd_inspect

    parser = argparse.ArgumentParser(prog="attention-playground")
    add_inspect_parser(parser.add_subparsers(dest="command"))
    out = tmp_path / "scores.json"
    code = cmd_inspect(parser.parse_args(["inspect", "--model", str(bos_pair[0]), "--detect", "induction",
                                          "--out", str(out)]))
    assert code == 0, capsys.readouterr().err
    assert np.array(json.loads(out.read_text())["scores"]).shape == (2, 4)
