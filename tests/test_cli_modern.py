"""``export`` with the modern options: each flag out of range is refused before any work (exit 2, one line naming
the flag, neither torch nor Qt imported), and an export per option writes the numbers a hand computation gives,
with the option named in the CSV's ``#`` lines; ``--view tiles`` writes FlashAttention's tiles (CSV and image) and
``--view code`` a script that reproduces the options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_child import run_many

from attention_core import get_preset

ROOT = Path(__file__).resolve().parents[1]
P = get_preset("cat-sat-mat")  # 3 × 4, self-attention, scale 1/√4


def export(tmp_path: Path, name: str, *flags: str) -> Path:
    out = tmp_path / name
    r = subprocess.run([sys.executable, "-m", "app", "export", "--preset", "cat-sat-mat", *flags, "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stderr
    return out


def numbers(path: Path) -> np.ndarray:
    return np.atleast_2d(np.genfromtxt(path, comments="#", delimiter=","))


def comments(path: Path) -> list[str]:
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("#")]


def hand_rotate(x: np.ndarray, base: float, dims: int) -> np.ndarray:
    out = x.copy()
    half = dims // 2
    for p in range(x.shape[0]):
        for c in range(half):
            t = p * base ** (-2 * c / dims)
            out[p, c] = x[p, c] * np.cos(t) - x[p, c + half] * np.sin(t)
            out[p, c + half] = x[p, c + half] * np.cos(t) + x[p, c] * np.sin(t)
    return out


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(np.where(np.isfinite(x), x, -1e300), axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


REFUSED = [
    (["--window", "0"], "--window 0: a window of 0 lets a query see no key"),
    (["--window", "2", "--sinks", "-1"], "--window 2: the sinks cannot be negative"),
    (["--sinks", "1"], "--sinks needs --window"),
    (["--window", "2", "--mask", "causal"], "--window is a mask of its own"),
    (["--softcap", "0"], "--softcap 0.0: the soft-cap must be above 0"),
    (["--softcap", "-5"], "--softcap -5.0: the soft-cap must be above 0"),
    (["--rotary-base", "10000", "--rotary-dims", "3"], "--rotary-dims 3: the rotary dims must be even"),
    (["--rotary-base", "10000", "--rotary-dims", "6"], "--rotary-dims 6: the rotary dims (6) cannot be more than d_k"),
    (["--rotary-dims", "2"], "--rotary-dims needs --rotary-base"),
    (["--rotary-base", "0.5"], "--rotary-base 0.5: the rotary base must be above 1"),
    (["--heads", "3"], "--heads 3: 3 heads do not divide d_k = 4"),
    (["--heads", "2", "--kv-heads", "3"], "--kv-heads 3: 3 K/V heads do not divide 2 heads"),
    (["--kv-heads", "2"], "--kv-heads 2: 2 K/V heads do not divide 1 head"),
    (["--view", "tiles", "--block-q", "0"], "the query block must be between 1 and 64"),
    (["--view", "tiles", "--block-k", "65"], "the key block must be between 1 and 64"),
    (["--block-q", "2"], "--block-q and --block-k size FlashAttention's tiles"),
    (["--view", "capped"], "--view capped shows a step that is off: give --softcap"),
    (["--view", "biased"], "--view biased shows a step that is off: give --alibi"),
    (["--view", "rotated"], "--view rotated shows a step that is off: give --rotary-base"),
]


def test_every_out_of_range_option_is_refused_before_work(tmp_path):
    argvs = []
    for flags, _ in REFUSED:
        view = [] if "--view" in flags else ["--view", "weights"]
        argvs.append(["export", "--preset", "cat-sat-mat", *view, *flags, "--out", str(tmp_path / "x.csv")])
    out = run_many(argvs, tmp_path)
    for (flags, said), r in zip(REFUSED, out["results"]):
        assert r["code"] == 2, (flags, r)
        lines = [ln for ln in r["err"].splitlines() if ln.strip()]
        assert len(lines) == 1 and said in lines[0], (flags, r["err"])
    assert not out["torch"] and not out["qt"]  # refused before any work
    assert not (tmp_path / "x.csv").exists()


def test_rotary_weights_and_the_rotated_view_match_a_hand_rotation(tmp_path):
    w = export(tmp_path, "w.csv", "--view", "weights", "--rotary-base", "100", "--rotary-dims", "2")
    q, k = hand_rotate(P.q, 100.0, 2), hand_rotate(P.k, 100.0, 2)
    np.testing.assert_allclose(numbers(w), softmax(q @ k.T / 2), atol=1e-12)
    assert "# rotary: rotary base 100 on 2 of 4 columns" in comments(w)
    r = export(tmp_path, "r.csv", "--view", "rotated", "--rotary-base", "100", "--rotary-dims", "2")
    np.testing.assert_allclose(numbers(r), np.vstack([q, k]), atol=1e-12)


def test_alibi_and_softcap_give_the_biased_and_capped_steps_by_hand(tmp_path):
    scaled = P.q @ P.k.T / 2
    bias = -(2.0 ** -8) * np.abs(np.arange(3)[:, None] - np.arange(3)[None, :])  # one head: slope 2^-8
    b = export(tmp_path, "b.csv", "--view", "biased", "--alibi")
    np.testing.assert_allclose(numbers(b), scaled + bias, atol=1e-12)
    assert "# alibi: ALiBi bias" in comments(b)
    c = export(tmp_path, "c.csv", "--view", "capped", "--softcap", "0.5")
    np.testing.assert_allclose(numbers(c), 0.5 * np.tanh(scaled / 0.5), atol=1e-12)
    assert "# softcap: soft-cap 0.5" in comments(c)


def test_a_window_with_sinks_blocks_the_keys_outside_it(tmp_path):
    w = export(tmp_path, "w.csv", "--view", "weights", "--window", "1", "--sinks", "1")
    allowed = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=bool)  # itself, and key 0 (the sink)
    np.testing.assert_allclose(numbers(w), softmax(np.where(allowed, P.q @ P.k.T / 2, -np.inf)), atol=1e-12)
    lines = comments(w)
    assert "# window: window 1 + 1 sink" in lines and "# mask: sliding" in lines
    assert "window 1 + 1 sink" in lines[0]


def test_kv_heads_read_k_and_v_repeated_for_their_group(tmp_path):
    w = export(tmp_path, "w.csv", "--view", "output", "--heads", "2", "--kv-heads", "1")
    k, v = P.k[:, :2], P.v[:, :2]  # one K/V head: the first 2 columns, read by both query heads
    weights = softmax(P.q @ np.hstack([k, k]).T / 2)
    np.testing.assert_allclose(numbers(w), weights @ np.hstack([v, v]), atol=1e-12)
    assert "# kv heads: 1 K/V head for 2 heads (multi-query)" in comments(w)


def test_tiles_as_csv_and_as_an_image(tmp_path):
    t = export(tmp_path, "t.csv", "--view", "tiles", "--mask", "causal", "--block-q", "2", "--block-k", "1")
    lines = t.read_text(encoding="utf-8").splitlines()
    header = lines.index(next(ln for ln in lines if ln.startswith("tile,")))
    rows = [ln.split(",") for ln in lines[header + 1:]]
    assert len(rows) == 2 * 3  # 2 query blocks × 3 key blocks, each once
    assert [r[5] for r in rows] == ["no", "no", "yes", "no", "no", "no"]  # rows 0-1 never see key 2
    last_m = [float(x) for x in rows[2][7].split()] + [float(rows[5][7])]
    masked = np.where(np.tril(np.ones((3, 3), dtype=bool)), P.q @ P.k.T / 2, -np.inf)
    np.testing.assert_allclose(last_m, masked.max(axis=1), atol=1e-12)  # the running max at the end: the row max
    assert "# blocks: blocks 2×1" in comments(t)
    png = export(tmp_path, "t.png", "--view", "tiles", "--block-q", "3", "--rotary-base", "10000")
    from PIL import Image

    title = Image.open(png).text.get("Title", "")
    assert "FlashAttention" in title and "rotary base 10000" in title and "blocks 3×2" in title


def test_view_code_reproduces_the_options(tmp_path):
    from app.playground.model.code_export import parse_printed

    script = export(tmp_path, "c.py", "--view", "code", "--rotary-base", "100", "--softcap", "0.5", "--window", "2",
                    "--block-q", "1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    printed = parse_printed(r.stdout)
    x, w = P.x_q, (P.w_q, P.w_k)
    q, k = hand_rotate(x @ w[0], 100.0, 4), hand_rotate(x @ w[1], 100.0, 4)
    np.testing.assert_allclose(printed["q_rotated"][2], q, atol=1e-12)
    allowed = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=bool)
    capped = np.where(allowed, 0.5 * np.tanh(q @ k.T / 2 / 0.5), -np.inf)
    np.testing.assert_allclose(printed["weights"][2], softmax(capped), atol=1e-12)
    np.testing.assert_allclose(printed["flash_output"][2], printed["output"][2], atol=1e-12)
    assert "block_q, block_k = 1, 2" in script.read_text(encoding="utf-8")


@pytest.mark.parametrize("view", ["rotated", "biased", "capped"])
def test_the_new_step_names_are_valid_views(view):
    from app.playground.cli import VIEWS

    assert view in VIEWS and "tiles" in VIEWS
