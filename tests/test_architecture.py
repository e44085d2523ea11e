"""Architecture rules that tools enforce: the import contracts bite, and no module grows past its size limit.

``test.sh`` runs ``lint-imports`` on the real tree; here the contracts are run on a copy with planted
violations, so a contract that silently stopped checking anything (a typo in a module name, a wrong option)
fails a test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# planted module -> (its source, the chain line lint-imports must report)
PLANTED = {
    # function-level imports count: the library may not reach Qt even lazily
    "attention_core/_planted.py": ("def f():\n    from PySide6 import QtCore\n", "attention_core._planted -> PySide6"),
    # indirect imports count: a model importing a view reaches pyqtgraph through it
    "app/models/_planted.py": ("from ..views import heatmap_style\n", "app.models._planted -> app.widgets.heatmap.style"),
    # a view importing torch itself, and a view importing the export functions (the old cycle)
    "app/views/_planted.py": ("def f():\n    import torch\n    from .. import export\n",
                              "app.views._planted -> torch"),
}


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (pip install -e .[test])")
def test_import_contracts_catch_planted_violations(tmp_path):
    for pkg in ("app", "attention_core"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for rel, (source, _) in PLANTED.items():
        (tmp_path / rel).write_text(source)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}  # grimp must read the copy, not the installed tree
    r = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", "pyproject.toml"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    for _, chain in PLANTED.values():
        assert chain in out, f"{chain!r} not reported:\n{out}"
    assert "app.views._planted -> app.widgets.file_export" in out, out
    broken = out.partition("Broken contracts")[2]
    for contract in ("attention_core is a library", "app.models is Qt-free", "app.views never import torch",
                     "app.views do not import the export functions"):
        assert contract in broken, f"{contract!r} not broken:\n{out}"


LIMITS = {"app/shell/main_window.py": 400, "app/training/qt/panel.py": 400}
DEFAULT_LIMIT = 500


def test_modules_stay_small():
    """A module past its limit is doing more than one job: split it by responsibility."""
    too_long = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        n = len(path.read_text(encoding="utf-8").splitlines())
        limit = LIMITS.get(rel, DEFAULT_LIMIT)
        if n > limit:
            too_long.append(f"{rel}: {n} lines > {limit}")
    assert too_long == []
    assert all((ROOT / rel).exists() for rel in LIMITS)  # the limits name real files
