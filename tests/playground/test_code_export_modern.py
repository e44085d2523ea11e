"""Copy as code with the modern options: the generated numpy-only script, run in a fresh interpreter, prints every
optional step (q_rotated, k_rotated, biased, capped), the sliding mask's steps, each query head's weights with its
K/V head, and FlashAttention's tiled output, every number equal to the Playground's to 1e-12."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.playground.model.code_export import FLASH_LINE, OPTIONAL_LINES, STEP_LINES, parse_printed, script_for_model
from app.playground.model.playground import PlaygroundModel


def run_script(script: str, tmp_path: Path) -> tuple[dict, str]:
    path = tmp_path / "attention_script.py"
    path.write_text(script, encoding="utf-8")
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(script))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert imported == {"numpy"}, imported
    r = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    return parse_printed(r.stdout), r.stdout


def close(printed: np.ndarray, expected: np.ndarray, what: str) -> None:
    expected = np.asarray(expected, dtype=np.float64)
    assert printed.shape == expected.shape, what
    np.testing.assert_array_equal(np.isinf(printed), np.isinf(expected), err_msg=what)
    finite = np.isfinite(expected)
    np.testing.assert_allclose(printed[finite], expected[finite], rtol=0, atol=1e-12, err_msg=what)


def every_option() -> PlaygroundModel:
    m = PlaygroundModel("lesson-random-4x8")
    m.set_heads(4)
    m.set_kv_heads(2)
    m.set_rotary(500.0, 6)
    m.set_alibi(True)
    m.set_softcap(0.4)
    m.set_mask("sliding")
    m.set_window(2, 1)
    m.set_blocks(3, 2)
    return m


def rotary_cross() -> PlaygroundModel:
    m = PlaygroundModel("cat-sat-mat")
    m.set_mode("projection", "cross")
    m.set_dim("Lk", 5)
    m.set_cell("X_kv", 4, 1, 0.7)
    m.set_rotary(10000.0)
    m.set_mask("padding")
    m.toggle_padding(2)
    return m


def multi_query_softcap() -> PlaygroundModel:
    m = PlaygroundModel("lesson-random-4x8")
    m.set_mode("qkv")
    m.set_heads(2)
    m.set_kv_heads(1)
    m.set_softcap(0.2)
    m.set_mask("causal")
    return m


def alibi_window_only() -> PlaygroundModel:
    m = PlaygroundModel("bank-river-loan")
    m.set_alibi(True)
    m.set_mask("sliding")
    m.set_window(1, 2)
    return m


CASES = {"every option (GQA 4/2, rotary 6 of 8, ALiBi, soft-cap, window 2 + 1 sink, blocks 3×2)": every_option,
         "rotary, cross-attention with padding": rotary_cross,
         "multi-query with a soft-cap, causal": multi_query_softcap,
         "ALiBi and a window of 1 with 2 sinks": alibi_window_only}


@pytest.mark.parametrize("case", list(CASES))
def test_the_script_reproduces_every_new_field(case, tmp_path):
    m = CASES[case]()
    printed, stdout = run_script(script_for_model(m), tmp_path)
    r = m.result
    on = [f for f, _ in OPTIONAL_LINES if getattr(r, f) is not None]
    heads = [f"head:{h}" for h in range(m.num_heads)] if m.num_kv_heads is not None else []
    assert list(printed) == [*on, *(f for f, _ in STEP_LINES), *heads, FLASH_LINE[0]]
    for field in (*on, *(f for f, _ in STEP_LINES)):
        close(printed[field][2], getattr(r, field), field)
    assert printed["k_rotated" if "k_rotated" in printed else "scores"][0] == (
        list(m.key_tokens) if "k_rotated" in printed else list(m.query_tokens))
    for name in heads:
        h = int(name.split(":")[1])
        close(printed[name][2], m.computation.heads.heads.weights[h], name)
    close(printed["flash_output"][2], m.flash.output, "flash output")
    assert m.flash_note == ""
    assert "largest |flash output - output|" in stdout


def test_the_sliding_mask_is_written_as_its_rule_and_the_options_are_named(tmp_path):
    m = every_option()
    script = script_for_model(m)
    assert "window, sinks = 2, 1" in script and "(key_pos > query_pos - window) | (key_pos < sinks)" in script
    assert "rotary_base = 500.0" in script and "rotary_dims = 6" in script and "softcap = 0.4" in script
    assert "num_heads, num_kv_heads = 4, 2" in script and "block_q, block_k = 3, 2" in script
    assert "rotary base 500 on 6 of 8 columns" in script and "window 2 + 1 sink" in script  # the setting line


def test_a_plain_setting_prints_the_five_steps_only(tmp_path):
    printed, _ = run_script(script_for_model(PlaygroundModel("cat-sat-mat")), tmp_path)
    assert list(printed) == [f for f, _ in STEP_LINES]
