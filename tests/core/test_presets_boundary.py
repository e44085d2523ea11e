"""Presets are recomputed from the documents' inputs; the core never imports Qt; devices are honest."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import attention_core
from attention_core import PRESET_NAMES, attention_steps, available_devices, get_preset, random_preset

CORE = Path(attention_core.__file__).parent


def test_presets_inputs_and_projections():
    cat = get_preset("cat-sat-mat")
    assert cat.query_tokens == ("cat", "sat", "mat") and cat.q.shape == (3, 4)
    np.testing.assert_array_equal(cat.q, cat.x_q)  # identity projections
    mag = get_preset("magnitude")
    raw = attention_steps(mag.q, mag.k, mag.v, scale=1.0).scores[0]
    # Q=[3,1]: K1=[1.5,.5] -> 5, K2=[4.5,1.5] -> 15, K3=[1,4] -> 7 (misaligned beats short-aligned)
    np.testing.assert_allclose(raw, [5.0, 15.0, 7.0])
    it = get_preset("it-animal-street")
    w = attention_steps(it.q, it.k, it.v).weights[0]
    e = np.exp(np.array([10.0, 7.0, 5.0]) / math.sqrt(2))
    np.testing.assert_allclose(w, e / e.sum())
    bank = get_preset("bank-river-loan")
    assert bank.q[0] @ bank.k[1] == pytest.approx(0.5 * 0.2 + 0.3 * 0.9 + 0.8 * 0.1 + 0.2 * 0.3)
    assert "loan" in bank.story  # the vectors make 'loan' the better match, and the story says so


def test_lesson_random_matches_legacy_seeded_draw():
    p = get_preset("lesson-random-4x8")
    np.random.seed(42)
    x = np.random.randn(4, 8)
    w_q = np.random.randn(8, 8) * 0.1
    np.testing.assert_allclose(p.x_q, x)
    np.testing.assert_allclose(p.q, x @ w_q)
    assert p.has_projections and p.self_attention


def test_every_preset_computes_and_unknown_is_refused():
    for name in PRESET_NAMES:
        p = get_preset(name)
        s = attention_steps(p.q, p.k, p.v)
        assert s.weights.shape == (len(p.query_tokens), len(p.key_tokens)) and p.story
    assert np.array_equal(random_preset(3).q, get_preset("random-3").q)
    assert not np.array_equal(random_preset(3).q, random_preset(4).q)
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("nope")


def test_core_never_imports_qt_or_pyqtgraph():
    banned = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "shiboken6", "app")
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in banned]
    assert offenders == []
    code = ("import sys, attention_core as a; a.TinyTransformer; a.ReversalTrainer; a.save_checkpoint; "
            "bad=[m for m in sys.modules if m.split('.')[0] in ('PySide6','pyqtgraph')]; print(bad); "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_numpy_path_does_not_import_torch():
    """Live edits, presets, the head split and validating a TrainConfig (the training form does it per keystroke)."""
    code = ("import sys, attention_core as a; a.attention_steps([[1.0]], [[1.0]], [[1.0]]); "
            "a.get_preset('cat-sat-mat'); a.multi_head_steps([[1.0, 2.0]], [[1.0, 2.0]], [[1.0, 2.0]], 2); "
            "a.parameter_count(4, 2); c = a.TrainConfig(num_heads=2).validate(); c.total_steps; "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_views_and_playground_model_do_not_load_torch():
    """Importing any view, the playground model or the export functions loads no torch (import-linter cannot tell
    a function-level import from a module-level one; this checks what an import really loads)."""
    app_dir = CORE.parent / "app"
    qt_parts = [*app_dir.glob("widgets/**/*.py"), *app_dir.glob("*/qt/**/*.py")]  # every view and shared widget
    views = sorted(".".join(p.relative_to(CORE.parent).with_suffix("").parts) for p in qt_parts
                   if p.stem != "__init__")
    modules = [*views, "app.playground.model.playground", "app.widgets.file_export", "app.widgets.rendering"]
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "    if 'torch' in sys.modules:\n"
            "        sys.exit('importing ' + name + ' loaded torch')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(views) >= 50  # the globs found the views


def test_csv_export_loads_neither_qt_nor_torch(tmp_path):
    code = ("import sys; from app.widgets.file_export import export_heatmap; "
            f"export_heatmap({str(tmp_path / 'w.csv')!r}, [[1.0, float('-inf')]], ['q'], ['a', 'b'], 't'); "
            "bad = [m for m in ('torch', 'PySide6', 'pyqtgraph') if m in sys.modules]; "
            "sys.exit(str(bad) if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "w.csv").read_text()  # '#' lines name what it is and its labels, then the numbers alone
    assert text.startswith("# ") and text.endswith("\n1.0,-inf\n") and '["a", "b"]' in text


def test_one_default_scale_and_one_list_of_steps():
    from dataclasses import fields

    from attention_core import OPTIONAL_STEPS, STEP_NAMES, STEP_TITLES, AttentionSteps, default_scale

    assert default_scale(4) == 0.5 and default_scale(0) == 1.0
    assert attention_steps(np.ones((2, 9)), np.ones((3, 9)), np.ones((3, 1))).scale == default_scale(9)
    assert set(STEP_NAMES) <= {f.name for f in fields(AttentionSteps)}
    assert list(STEP_TITLES) == [*STEP_NAMES, *OPTIONAL_STEPS] and all(STEP_TITLES.values())


def test_available_devices_starts_with_cpu():
    import torch

    devs = available_devices()
    assert devs[0] == "cpu"
    assert len(devs) == 1 + (torch.cuda.device_count() if torch.cuda.is_available() else 0)
    assert all(d.startswith("cuda:") for d in devs[1:])


def test_train_config_is_the_same_class_everywhere():
    from attention_core import TrainConfig
    from attention_core.tiny import config as train_config
    from attention_core.tiny import training

    assert TrainConfig is training.TrainConfig is train_config.TrainConfig
    assert TrainConfig().model_config().max_seq_len == 13


def test_the_torch_free_parts_of_the_tiny_transformer_stay_torch_free():
    """A settings form validates a config on every keystroke: the config, the tasks' names and shapes and the kinds
    of positions answer without torch (tasks and positions hold torch code too, loaded on first use)."""
    code = ("import sys\n"
            "from attention_core.tiny.config import TrainConfig\n"
            "from attention_core.tiny.tasks import TASKS, TASK_NAMES, sequence_length, task_problems\n"
            "from attention_core.positions import POSITIONAL_KINDS, check_positional\n"
            "from attention_core.scaling.results import ScalingConfig\n"
            "TrainConfig(task='sort', positional='rotary').validate()\n"
            "assert task_problems('sort', 20, 16) and sequence_length('induction', 6) == 12\n"
            "assert TASKS['copy'].scored_queries(3) == range(3, 6) and len(TASK_NAMES) == 4\n"
            "check_positional('sinusoidal', 32, 4); ScalingConfig()\n"
            "sys.exit('torch loaded' if 'torch' in sys.modules else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=CORE.parent, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    # and the torch part still works once asked for
    from attention_core.tiny.tasks import generate_task_data

    assert generate_task_data("copy", 2, 3, 8, seed=0).shape == (2, 7)
