"""Architecture rules that tools enforce: the import contracts bite, no import cycle, small modules, small folders,
and the headless commands never load Qt.

``test.sh`` runs ``lint-imports`` on the real tree; here the contracts are run on a copy with planted
violations, so a contract that silently stopped checking anything (a typo in a module name, a wrong option)
fails a test. The cycle test builds the whole import graph with grimp, counting function-level and type-only
imports (which ``lint-imports`` is configured to skip), and fails on any cycle between modules.
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

# planted module -> (its source, the chain line lint-imports must report, the contract it must break)
PLANTED = {
    # function-level imports count: the library may not reach Qt even lazily
    "attention_core/_planted.py": ("def f():\n    from PySide6 import QtCore\n", "attention_core._planted -> PySide6",
                                   "attention_core is a library"),
    # indirect imports count: a model part importing a widget reaches pyqtgraph through it
    "app/training/model/_planted.py": ("from app.widgets.heatmap import style\n",
                                       "app.training.model._planted -> app.widgets.heatmap.style",
                                       "Feature models and app.common are Qt-free"),
    "app/common/_planted.py": ("def f():\n    import superqt\n", "app.common._planted -> superqt",
                               "Feature models and app.common are Qt-free"),
    # a Qt part importing torch itself
    "app/lab/qt/_planted.py": ("def f():\n    import torch\n", "app.lab.qt._planted -> torch",
                               "Qt parts and widgets never import torch"),
    # a widget importing the window, a Qt part importing a CLI module
    "app/widgets/_planted.py": ("def f():\n    from app.shell import main_window\n",
                                "app.widgets._planted -> app.shell.main_window",
                                "Qt parts and widgets never import the window"),
    "app/flow/qt/_planted.py": ("def f():\n    from app.training import cli\n",
                                "app.flow.qt._planted -> app.training.cli",
                                "Qt parts and widgets never import the window"),
    # a sibling cycle: the Playground's model importing Training (which imports the Playground through flow)
    "app/playground/model/_planted.py": ("def f():\n    from app.training.qt import panel\n", "",
                                         "Sibling packages and modules are acyclic"),
}


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (pip install -e .[test])")
def test_import_contracts_catch_planted_violations(tmp_path):
    for pkg in ("app", "attention_core"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for rel, (source, _, _) in PLANTED.items():
        (tmp_path / rel).write_text(source)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}  # grimp must read the copy, not the installed tree
    r = subprocess.run([str(LINT_IMPORTS), "--no-cache", "pyproject.toml"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    for _, chain, _ in PLANTED.values():
        assert chain in out, f"{chain!r} not reported:\n{out}"
    broken = out.partition("Broken contracts")[2]
    for _, _, contract in PLANTED.values():
        assert contract in broken, f"{contract!r} not broken:\n{out}"
    assert "No cycles are allowed in app." in broken, out  # the real tree keeps it: see the next test


def test_the_real_tree_keeps_every_contract():
    r = subprocess.run([str(LINT_IMPORTS), "--no-cache", "pyproject.toml"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "Contracts: 5 kept, 0 broken." in r.stdout


def import_cycles(packages: tuple[str, ...] = ("app", "attention_core")) -> list[list[str]]:
    """Every strongly connected set of modules (> 1 module) in the import graph, counting every import: top-level,
    function-level and under ``TYPE_CHECKING`` (Tarjan's algorithm on grimp's graph)."""
    import grimp

    graph = grimp.build_graph(*packages, include_external_packages=False, exclude_type_checking_imports=False)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative, so a deep graph never hits the recursion limit
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))

    for module in edges:
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle():
    """No module reaches itself through imports, whatever kind of import: a cycle makes import order matter and
    hides which of two modules is the lower one. A type-only inversion becomes a Protocol (app/widgets/window_api.py,
    app/training/qt/export.py's ExportingPanel) or moves down."""
    assert import_cycles() == []


def test_the_cycle_finder_finds_a_planted_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "plantedpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from plantedpkg import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from plantedpkg import c\n")
    (pkg / "c.py").write_text("def f():\n    from plantedpkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles(("plantedpkg",)) == [["plantedpkg.a", "plantedpkg.b", "plantedpkg.c"]]


MODULE_LIMIT = 400
FOLDER_LIMIT = 15


def test_modules_stay_small():
    """A module past 400 lines is doing more than one job: split it by responsibility."""
    too_long = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MODULE_LIMIT:
            too_long.append(f"{path.relative_to(ROOT).as_posix()}: {n} lines > {MODULE_LIMIT}")
    assert too_long == []


def test_folders_stay_small():
    """A folder of more than ~15 modules no longer shows where a thing goes: group it by what a user sees."""
    crowded = []
    for folder in sorted({p.parent for p in (ROOT / "app").rglob("*.py")}):
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > FOLDER_LIMIT:
            crowded.append(f"{folder.relative_to(ROOT).as_posix()}: {len(modules)} modules")
    assert crowded == []


HEADLESS = {
    "train": ["train", "--steps", "2", "--out", "{tmp}/run"],
    "probe": ["probe", "--preset", "cat-sat-mat", "--position", "1"],
    "bench": ["bench", "--max-n", "32", "--repeat", "1", "--impl", "naive-numpy", "--out", "{tmp}/bench.csv"],
    "experiment": ["experiment", "--list"],
    "lessons --check": ["lessons", "--check", "{lesson}"],
    "export (CSV)": ["export", "--preset", "cat-sat-mat", "--view", "weights", "--out", "{tmp}/w.csv"],
}


@pytest.mark.parametrize("command", sorted(HEADLESS))
def test_headless_commands_load_no_qt(command, tmp_path):
    """The commands that compute and write numbers never import Qt (a server without Qt's libraries runs them; and
    each Qt import costs start-up time): checked on the modules actually loaded, in a child process."""
    lesson = next((ROOT / "resources" / "lessons").glob("*.json"))
    argv = [a.format(tmp=tmp_path, lesson=lesson) for a in HEADLESS[command]]
    code = ("import sys\nfrom app.cli import main\n"
            f"rc = main({argv!r})\n"
            "qt = sorted(m for m in sys.modules\n"
            "            if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph', 'superqt'))\n"
            "print('QT-LOADED', qt) if qt else None\n"
            "sys.exit(rc if not qt else 99)\n")
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])


FEATURES = ("playground", "training", "experiments", "lab", "learn", "vectors", "flow", "surface")


def test_every_feature_opens_alone(tmp_path):
    """``python -m app.<feature>`` opens that feature's tab in a window on its default state (one child process
    opens them all in turn, each rendered to a PNG through the same ``show_alone`` and its ``--grab``)."""
    code = ("import importlib, sys\n"
            "from app.widgets.dev_window import show_alone\n"
            f"for name in {FEATURES!r}:\n"
            "    main = importlib.import_module(f'app.{name}.__main__')\n"
            f"    rc = show_alone(name, main._build, ['--grab', {str(tmp_path)!r} + f'/{{name}}.png'])\n"
            "    if rc:\n"
            "        sys.exit(f'{name}: {rc}')\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in FEATURES:
        assert (ROOT / "app" / name / "__main__.py").is_file()
        png = tmp_path / f"{name}.png"
        assert png.is_file() and png.stat().st_size > 5000, name  # a real picture, not an empty window


def test_resources_are_found_from_the_source_tree():
    """The resource folder is found from ``app/common`` (a move of resources.py once left every lesson and style
    unfound without an error: the lesson list was empty)."""
    from app.common.resources import resource_path, resource_root
    from app.learn.model.files import bundled_lessons

    assert resource_root() == ROOT / "resources"
    assert resource_path("styles", "light.qss").is_file() and resource_path("icons", "app.png").is_file()
    assert len(bundled_lessons()) >= 7


def test_the_feature_map_names_every_module():
    """docs/architecture.md opens with a feature map (place → package → model → views → CLI → tests): every module
    under app/ is named there, and every module it names exists, so the map cannot drift from the tree."""
    import re

    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named: set[str] = set()
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| ") else []
        package = re.search(r"`app/([a-z_/]*)`", cells[1]) if len(cells) >= 6 else None
        if package is None:
            continue
        for cell in cells[2:5]:
            for ref in re.findall(r"`((?:app/)?[a-z_/]+\.py)`", cell):
                named.add(ref[4:] if ref.startswith("app/") else package.group(1) + ref)
    folders = re.search(r"docstring-only `__init__.py`:(.*?)\n\n", doc, re.S)
    assert folders is not None
    named |= {f"{folder}/__init__.py" for folder in re.findall(r"`([a-z_/]+)/`", folders.group(1))}
    named |= {ref for ref in ("__init__.py", "models/__init__.py") if f"`{ref}`" in doc}
    alone = doc.split("**One feature alone")[1].split("\n\n")[0]
    named |= {f"{f}/__main__.py" for f in re.findall(r"`(?:python -m )?app\.([a-z]+)`", alone)}
    actual = {p.relative_to(ROOT / "app").as_posix() for p in (ROOT / "app").rglob("*.py")}
    assert sorted(actual - named) == [], "modules missing from docs/architecture.md's feature map"
    assert sorted(named - actual) == [], "the feature map names modules that do not exist"
