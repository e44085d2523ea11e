"""The app's layers, counting every import: nothing below the window (``app.shell``) imports it, and the shared
widgets (``app.widgets``) import no feature.

``lint-imports`` checks the same layers (pyproject.toml's layers contract) but skips type-only imports; here every
``import`` statement of every module counts, wherever it sits (module level, inside a function, under
``TYPE_CHECKING``), ``python -m app.<feature>`` modules (``__main__.py``) included, and so does
``importlib.import_module("app....")`` with a literal name. A type-only import still makes the lower layer name the
upper one's types: a feature hands a widget a Protocol instead (``app/widgets/window_api.py``).

Above the window are only the command line (``app/cli.py``, ``app/__main__.py``, a feature's ``cli.py``) and the
package's ``create_main_window`` (``app/__init__.py``). Each rule is run on a copy of the tree with a planted
violation, so a rule that stopped seeing anything fails a test.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SHARED = ("common", "widgets")
"""The packages under every feature: they import nothing of app but each other (common imports neither)."""
ABOVE_THE_WINDOW = ("app", "app.__main__", "app.cli")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, relative ones resolved; ``from a import b`` counts as ``a.b``
    (``b`` may be a module), and ``importlib.import_module("x")`` with a literal name as ``x``."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base) for alias in node.names]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.lineno, node.args[0].value))
    return found


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_violations(root: Path = ROOT) -> list[str]:
    """``file:line: module -> imported`` for each import that runs up the layers: a module below the window
    importing ``app.shell`` (or ``app`` itself, whose ``create_main_window`` builds the window), or a shared
    package (``app.common``, ``app.widgets``) importing anything of app outside the shared packages."""
    found = []
    for path in sorted((root / "app").rglob("*.py")):
        module = module_name(path, root)
        parts = module.split(".")
        top = parts[1] if len(parts) > 1 else ""
        above = module in ABOVE_THE_WINDOW or top == "shell" or parts[-1] == "cli"
        for line, imported in imports_of(path, root):
            if not within(imported, "app"):
                continue
            target = imported.split(".")[1] if "." in imported else ""
            bad = (not above and (within(imported, "app.shell") or target in ("", "create_main_window")))
            if top == "widgets":
                bad = bad or target not in SHARED
            elif top == "common":
                bad = bad or target != "common"
            if bad:
                found.append(f"{path.relative_to(root).as_posix()}:{line}: {module} -> {imported}")
    return found


def test_no_import_runs_up_the_layers():
    """Today's tree: no feature, widget or common module imports the window, and the widgets import no feature,
    counting type-only imports and the features' ``__main__`` modules."""
    assert layer_violations() == []


PLANTED = {
    # a type-only import of a feature's model in the shared widgets
    "app/widgets/_planted_types.py": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                      "    from app.playground.model.playground import PlaygroundModel\n",
                                      "app.widgets._planted_types -> app.playground.model.playground.PlaygroundModel"),
    # a development window assembling its tab from the window's module, inside a function
    "app/playground/views/vectors/__main__.py": ("def _build():\n    from app.shell import main_window\n",
                                                 "app.playground.views.vectors.__main__ -> app.shell.main_window"),
    # a relative import reaching the window from a feature's Qt part
    "app/training/qt/_planted_relative.py": ("from ...shell import hosts\n",
                                             "app.training.qt._planted_relative -> app.shell.hosts"),
    # a feature building the whole window through the package's entry
    "app/lab/model_planted.py": ("def f():\n    from app import create_main_window\n",
                                 "app.lab.model_planted -> app.create_main_window"),
    # a widget opening a feature by name
    "app/widgets/_planted_dynamic.py": ("import importlib\n\nTAB = importlib.import_module('app.lab.qt.tab')\n",
                                        "app.widgets._planted_dynamic -> app.lab.qt.tab"),
    # app.common reaching up to the widgets
    "app/common/_planted.py": ("import app.widgets.theme\n", "app.common._planted -> app.widgets.theme"),
}


def test_the_layer_rule_reports_each_planted_violation(tmp_path):
    shutil.copytree(ROOT / "app", tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for rel, (source, _) in PLANTED.items():
        (tmp_path / rel).write_text(source)
    found = layer_violations(tmp_path)
    for rel, (_, chain) in PLANTED.items():
        assert any(f.startswith(rel + ":") and f.endswith(chain) for f in found), (chain, found)
    assert len(found) == len(PLANTED), found  # nothing else: the copy of today's tree keeps the rule


def test_the_command_line_may_open_the_window(tmp_path):
    """Above the window: app/cli.py, a feature's cli.py (``lessons --check`` runs the whole window) and the
    window itself; they are not reported."""
    shutil.copytree(ROOT / "app", tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (tmp_path / "app/lab/cli.py").write_text("def f():\n    from app import create_main_window\n"
                                              "    from app.shell import gui\n")
    assert layer_violations(tmp_path) == []
