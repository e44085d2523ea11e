"""Copy as code: the generated script needs numpy alone, rebuilds the inputs, mask and scale, and prints
the five steps the Steps view shows, every number equal to the model's (to 1e-12) — Q, K, V or projection mode
(self and cross), every mask, a custom scale, heads > 1, tokens with quotes; from the window's Edit menu (on the
clipboard) and from ``export --view code``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.playground.model.code_export import STEP_LINES, parse_printed, script_for_model
from app.playground.model.playground import PlaygroundModel
from attention_core import attention_steps, causal_mask, get_preset

ROOT = Path(__file__).resolve().parents[1]


def run_script(script: str, tmp_path: Path) -> dict:
    path = tmp_path / "attention_script.py"
    path.write_text(script, encoding="utf-8")
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(script))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert imported == {"numpy"}, imported  # self-contained: numpy only
    r = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    return parse_printed(r.stdout)


def assert_same(printed: dict, steps, rows: list[str], cols: list[str]) -> None:
    assert list(printed) == [field for field, _ in STEP_LINES]
    for field, (labels, columns, values) in printed.items():
        expected = np.asarray(getattr(steps, field), dtype=np.float64)
        assert labels == rows
        assert columns == (cols if field != "output" else [f"v{j}" for j in range(expected.shape[1])])
        assert values.shape == expected.shape, field
        np.testing.assert_array_equal(np.isinf(values), np.isinf(expected), err_msg=field)
        finite = np.isfinite(expected)
        np.testing.assert_allclose(values[finite], expected[finite], rtol=0, atol=1e-12, err_msg=field)
        assert np.all(values[~finite] == expected[~finite]), field


def edited_qkv() -> PlaygroundModel:
    m = PlaygroundModel("magnitude")
    m.set_mode("qkv")
    m.set_dim("Lq", 3)
    m.set_tokens("query", ["it's", 'say "hi": no', "ünï"])
    m.set_cell("Q", 1, 0, -2.75)
    m.set_cell("K", 2, 1, 1e-3)
    m.set_scale_mode("custom", 3.3)
    return m


def cross() -> PlaygroundModel:
    m = PlaygroundModel("cat-sat-mat")
    m.set_mode("projection", "cross")
    m.set_dim("Lk", 4)
    m.set_cell("X_kv", 3, 1, 0.9)
    m.set_cell("W_K", 0, 2, -1.5)
    m.set_mask("padding")
    m.toggle_padding(1)
    return m


def fully_masked_row() -> PlaygroundModel:
    m = PlaygroundModel("bank-river-loan")
    m.set_mask("custom")
    for col in range(3):
        m.toggle_custom(1, col)  # query 1 sees no key: zeros, not NaN
    m.set_scale_mode("one")
    return m


def heads() -> PlaygroundModel:
    m = PlaygroundModel("lesson-random-4x8")
    m.set_mask("causal")
    m.set_heads(2)
    return m


CASES = {
    "cat-sat-mat causal": lambda: (lambda m: (m.set_mask("causal"), m)[1])(PlaygroundModel("cat-sat-mat")),
    "edited Q, K, V, custom scale, odd tokens": edited_qkv,
    "cross-attention with a padding mask": cross,
    "a fully masked row, unscaled": fully_masked_row,
    "heads = 2 (the Steps view: one head over all d_k)": heads,
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_script_prints_what_the_steps_view_shows(case, tmp_path):
    model = CASES[case]()
    printed = run_script(script_for_model(model), tmp_path)
    assert_same(printed, model.result, list(model.query_tokens), list(model.key_tokens))


def test_heads_above_one_match_the_steps_view_not_a_head(tmp_path):
    model = heads()
    script = script_for_model(model)
    assert "Heads = 2" in script and "Multi-head" in script
    one_head = attention_steps(*model.state.projected(), mask=model.state.mask(), scale=model.state.scale())
    np.testing.assert_array_equal(model.result.weights, one_head.weights)  # what the Steps view draws


def test_cli_export_view_code(tmp_path):
    out = tmp_path / "code.py"
    r = subprocess.run([sys.executable, "-m", "app", "export", "--preset", "cat-sat-mat", "--view", "code", "--mask",
                        "causal", "--scale", "0.25", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out.resolve())
    p = get_preset("cat-sat-mat")
    printed = run_script(out.read_text(encoding="utf-8"), tmp_path)
    assert_same(printed, attention_steps(p.q, p.k, p.v, mask=causal_mask(3), scale=0.25), list(p.query_tokens),
                list(p.key_tokens))
    bad = subprocess.run([sys.executable, "-m", "app", "export", "--preset", "cat-sat-mat", "--view", "code",
                          "--out", str(tmp_path / "code.csv")], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert bad.returncode == 2 and "--out must end in .py for --view code" in bad.stderr
    assert not (tmp_path / "code.csv").exists()


def test_edit_menu_copies_the_script_and_says_so(window):
    from PySide6.QtGui import QGuiApplication

    from app.playground.model.concealment import Concealment
    from app.playground.qt.copy_code import COPIED

    window.playground.set_mask("causal")
    QGuiApplication.clipboard().setText("before")
    edit = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Edit")
    assert window.copy_code_action in edit.actions()
    window.copy_code_action.trigger()
    assert QGuiApplication.clipboard().text() == script_for_model(window.playground)
    assert window.statusBar().currentMessage() == COPIED
    Concealment.of(window.playground).hide(("weights",))  # a lesson's question covers the weights
    QGuiApplication.clipboard().setText("before")
    window.copy_code_action.trigger()
    assert QGuiApplication.clipboard().text() == "before"
    assert window.statusBar().currentMessage().startswith("⚠ Copy as code: Covered until you answer")
    Concealment.of(window.playground).hide(())
