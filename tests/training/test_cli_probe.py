"""``attention-playground probe``: exact JSON fields, 0.0 before T with the causal mask and > 0 without, for a preset
and for checkpoints saved each way; bad input gives a message on stderr and exit code 2, never a traceback. One preset
and one checkpoint run as users run them (a subprocess of ``python -m app``; a checkpoint's imports torch, ~2-5 s);
the other cases call the same ``main`` in this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_core import get_preset

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ["position", "max_change_before", "max_change_after", "causal"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "app", "probe", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def run_main(capsys, *args: str) -> subprocess.CompletedProcess:
    """``app.cli.main`` in this process, its outcome shaped like a subprocess's."""
    from app.cli import main

    try:
        code = main(["probe", *args])
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


def _json(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip())
    assert list(out) == FIELDS
    return out


def test_preset_probe_json():
    p = get_preset("cat-sat-mat")
    causal = _json(run_cli("--preset", "cat-sat-mat", "--position", "1"))
    assert causal["position"] == 1 and causal["causal"] is True
    assert causal["max_change_before"] == 0.0
    # the last query row sees the replaced keys: its largest possible change is bounded by hand below
    assert 0.0 < causal["max_change_after"] < 10 * np.abs(p.v).max()
    none = _json(run_cli("--preset", "cat-sat-mat", "--position", "1", "--mask", "none", "--trials", "3"))
    assert none["position"] == 1
    assert none["causal"] is False and none["max_change_before"] > 0.0


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Untrained tiny models saved the app's way, one marked as trained with the mask and one without (the core
    tests probe models really trained each way; here the CLI's plumbing is what is tested)."""
    import torch

    from attention_core import TinyTransformer
    from attention_core.tiny.checkpoint import save_model_files
    from attention_core.tiny.config import TrainConfig

    folder = tmp_path_factory.mktemp("cli-probe")
    paths = {}
    for causal in (True, False):
        cfg = TrainConfig(seq_len=3, vocab_size=6, d_model=8, num_heads=2, num_layers=1, causal=causal)
        torch.manual_seed(0)
        model = TinyTransformer.from_config(cfg.model_config())
        paths[causal] = folder / f"m{int(causal)}.safetensors"
        save_model_files(paths[causal], model, cfg.to_dict(), step=1, probe=[2, 3, 4, 1, 4, 3, 2])
    return paths


def test_checkpoint_probe_json(checkpoints, capsys):
    masked = _json(run_cli("--checkpoint", str(checkpoints[True]), "--position", "2", "--trials", "4"))
    assert masked == {"position": 2, "max_change_before": 0.0, "max_change_after": masked["max_change_after"],
                      "causal": True}
    assert masked["max_change_after"] > 0.0
    leaky = _json(run_main(capsys, "--checkpoint", str(checkpoints[False])))
    assert leaky["position"] == 3  # the default: the SEP position L
    assert leaky["causal"] is False and leaky["max_change_before"] > 0.0


@pytest.mark.parametrize("args, words", [
    (("--checkpoint", "/no/such/model.safetensors"), "no such file"),
    (("--preset", "nope", "--position", "1"), "unknown preset"),
    (("--preset", "cat-sat-mat", "--position", "2"), "--position 2 is out of range: expected an integer from 0 to 1"),
    (("--preset", "cat-sat-mat"), "needs --position"),
    (("--preset", "it-animal-street", "--position", "0"), "as many queries as keys"),
])
def test_bad_input_exit_2_with_message(args, words, capsys):
    r = run_main(capsys, *args)
    assert r.returncode == 2
    assert words in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_foreign_checkpoint_and_out_of_range_position(tmp_path, checkpoints, capsys):
    foreign = tmp_path / "other.safetensors"
    foreign.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    r = run_main(capsys, "--checkpoint", str(foreign))
    assert r.returncode == 2 and str(foreign) in r.stderr and "not" in r.stderr
    r = run_main(capsys, "--checkpoint", str(checkpoints[True]), "--position", "9")
    assert r.returncode == 2 and "--position 9 is out of range: expected an integer from 0 to 4" in r.stderr
