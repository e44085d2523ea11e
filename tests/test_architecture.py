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
    "app/playground/views/flow/_planted.py": ("def f():\n    from app.training import cli\n",
                                              "app.playground.views.flow._planted -> app.training.cli",
                                              "Qt parts and widgets never import the window"),
    # up the layers: a shared widget importing a feature, a feature importing the window
    "app/widgets/_planted_feature.py": ("def f():\n    from app.lab import model\n",
                                        "app.widgets._planted_feature -> app.lab.model", "Layers: the command line"),
    "app/lab/_planted.py": ("def f():\n    from app.shell import hosts\n", "app.lab._planted -> app.shell.hosts",
                            "Layers: the command line"),
    # a sibling cycle: the Playground's model importing Learn (whose lessons drive the Playground)
    "app/playground/model/_planted.py": ("def f():\n    from app.learn.model import engine\n", "",
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
    assert "Contracts: 6 kept, 0 broken." in r.stdout


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


FEATURES = tuple(sorted(".".join(p.parent.relative_to(ROOT / "app").parts)
                        for p in (ROOT / "app").glob("**/__main__.py") if p.parent != ROOT / "app"))
"""Every dev entry (``python -m app.<feature>``): each ``__main__.py`` below ``app/``, so a new one is opened too."""


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
    assert {"playground", "training", "experiments", "lab", "learn", "model_tab"} <= set(FEATURES)
    for name in FEATURES:
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
    named |= {ref for ref in ("__init__.py",) if f"`{ref}`" in doc}
    alone = doc.split("**One feature alone")[1].split("\n\n")[0]
    named |= {f"{f.replace('.', '/')}/__main__.py" for f in re.findall(r"`(?:python -m )?app\.([a-z_.]+[a-z])`", alone)}
    actual = {p.relative_to(ROOT / "app").as_posix() for p in (ROOT / "app").rglob("*.py")}
    assert sorted(actual - named) == [], "modules missing from docs/architecture.md's feature map"
    assert sorted(named - actual) == [], "the feature map names modules that do not exist"


# ---------------------------------------------------------------- no test bounds how long something took
CLOCK_FUNCTIONS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time", "process_time_ns",
                   "thread_time", "thread_time_ns", "time_ns"}
ASSERT_METHODS = {"assertLess", "assertLessEqual", "assertGreater", "assertGreaterEqual", "assertTrue", "assertFalse"}
HANG_GUARDS = ("tests/hang_guard.py",)
"""The helpers that may read a clock: a wait bounded by a named hang guard, raising ``Hung`` (not an assert)."""


class _ClockReads:
    """Which expressions of one scope (a module's top level, or one function with what it nests) depend on a clock
    reading: a clock call (``time.perf_counter()``, ``monotonic()`` imported bare, ``t.time()`` for ``import time as
    t``, ``datetime.now()``), or a name assigned from one (``t0``, ``elapsed = perf_counter() - t0``, a list a clock
    difference was appended to, a loop variable over such a list), to a fixed point."""

    def __init__(self, nodes: list, functions: set[str], modules: set[str]) -> None:
        import ast

        self.functions, self.modules, self.tainted = functions, modules, set()
        changed = True
        while changed:
            changed = False
            for node in nodes:
                bound: list = []
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and \
                        node.value is not None and self.reads(node.value):
                    bound = list(node.targets) if isinstance(node, ast.Assign) else [node.target]
                elif isinstance(node, (ast.For, ast.comprehension)) and self.reads(node.iter):
                    bound = [node.target]
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in ("append", "extend", "add", "insert") and \
                        any(self.reads(a) for a in node.args):
                    bound = [node.func.value]
                for target in bound:
                    for sub in ast.walk(target):
                        if isinstance(sub, (ast.Name, ast.Attribute)) and ast.unparse(sub) not in self.tainted:
                            self.tainted.add(ast.unparse(sub))
                            changed = True

    def is_clock(self, node) -> bool:
        import ast

        if not isinstance(node, ast.Call):
            return False
        f = node.func
        if isinstance(f, ast.Name):
            return f.id in self.functions
        if not isinstance(f, ast.Attribute):
            return False
        base = ast.unparse(f.value)
        return (f.attr in CLOCK_FUNCTIONS or (f.attr == "time" and base in self.modules)
                or (f.attr in ("now", "utcnow") and base.split(".")[-1] == "datetime"))

    def reads(self, expr) -> bool:
        import ast

        todo = [expr]
        while todo:
            sub = todo.pop()
            if self.is_clock(sub) or (isinstance(sub, (ast.Name, ast.Attribute)) and isinstance(sub.ctx, ast.Load)
                                      and ast.unparse(sub) in self.tainted):
                return True
            if not (isinstance(sub, ast.Call) and ast.unparse(sub.func) == "len"):  # how many: not a time
                todo.extend(ast.iter_child_nodes(sub))
        return False

    def compares(self, expr) -> bool:
        """Whether ``expr`` orders (``<``, ``>=``, ``min(…) <= …``) something that depends on a clock (``len`` of a
        list of timings is a count, not a time)."""
        import ast

        order = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
        return any(isinstance(sub, ast.Compare) and any(isinstance(op, order) for op in sub.ops) and self.reads(sub)
                   for sub in ast.walk(expr))


def clock_assertions(source: str, name: str = "<test>") -> list[str]:
    """``name:line: code`` of each check in ``source`` that compares a clock reading: an ``assert``, a unittest
    ``self.assertLess(…)``-style call, or an ``if …: raise / pytest.fail(…)``."""
    import ast

    tree = ast.parse(source)
    functions, modules = set(), {"time"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == "time" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            functions |= {a.asname or a.name for a in node.names if a.name in CLOCK_FUNCTIONS | {"time"}}

    def inside(node, descend: bool) -> list:
        """``node``'s sub-nodes; without ``descend``, a function's body is left to its own scope."""
        out, todo = [], list(ast.iter_child_nodes(node))
        while todo:
            n = todo.pop()
            out.append(n)
            if descend or not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(n))
        return out

    scopes = [inside(tree, descend=False)]
    scopes += [inside(f, descend=True) for f in ast.walk(tree)
               if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found: dict[int, str] = {}
    for nodes in scopes:
        clock = _ClockReads(nodes, functions, modules)
        for node in nodes:
            if isinstance(node, ast.Assert):
                bad = clock.compares(node.test)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ASSERT_METHODS:
                bad = any(clock.reads(a) for a in node.args)
            elif isinstance(node, ast.If):
                fails = any(isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and ast.unparse(n.func) in
                                                         ("pytest.fail", "fail")) for s in node.body
                            for n in ast.walk(s))
                bad = fails and clock.compares(node.test)
            else:
                continue
            if bad:
                found[node.lineno] = f"{name}:{node.lineno}: {ast.unparse(node).splitlines()[0][:100]}"
    return [found[line] for line in sorted(found)]


def test_no_test_bounds_how_long_something_took():
    """No test bounds how long something took: on a shared machine under load a wall-clock bound fails at random
    (``train --steps 5`` within 1.5 s of its compute failed CI twice) or is too loose to prove anything. A test
    asserts the property instead: what is imported, what is called, which state is reached, how many calls run
    after a cancel. Speeds are figures in ``benchmarks/`` (``bench_responsiveness.py``, in ``run_all.py``).

    Flagged: an ``assert`` (also ``self.assertLess``-style calls, and ``if …: raise`` / ``pytest.fail``) that
    compares a value read from ``time.perf_counter``/``monotonic``/``time``/``process_time`` (or their ``_ns``
    forms, ``datetime.now``), directly or through names assigned from one, across lines.

    Allowed idiom, the hang guard: a wait for a state bounded so that a broken build fails instead of hanging, at
    least ten times the expected time and named as such. Use ``hang_guard.wait_until(done, what,
    hang_guard_s=…)`` (``tests/hang_guard.py``, which raises ``Hung``), a ``timeout=`` handed to
    ``qtbot.waitUntil`` / ``Thread.join`` / ``Event.wait`` followed by an assert on the state (not on a clock), or
    a loop ``while clock() < end`` that asserts the state after it."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in HANG_GUARDS:
            found += clock_assertions(path.read_text(encoding="utf-8"), rel)
    assert found == [], "tests compare clock readings (this test's docstring says how to bound a wait):\n" + \
        "\n".join(found)


PLANTED_TIMINGS = '''
import time
import time as clock
from time import perf_counter as pc, monotonic
from datetime import datetime
from hang_guard import wait_until


def test_planted(worker, stop):
    t0 = time.perf_counter()
    work()
    CHECK time.perf_counter() - t0 < 1.0  # FLAG
    CHECK done and (  # FLAG (multi-line)
        time.monotonic() - t0
        < 2)
    elapsed = pc() - t0
    CHECK elapsed <= 0.5, elapsed  # FLAG (through a name)
    overheads = []
    for _ in range(3):
        start = monotonic()
        run()
        overheads.append(monotonic() - start - compute)
    CHECK min(overheads) <= 1.5  # FLAG (through a list)
    CHECK clock.time() - t0 < 3  # FLAG (the module under another name)
    CHECK (datetime.now() - t0).total_seconds() < 3  # FLAG
    if elapsed > 2:  # FLAG (if ... fail)
        pytest.fail("too slow")
    deadline = time.monotonic() + 120
    CHECK proc.poll() is None and time.monotonic() < deadline  # FLAG (a deadline in an assert)
    self.CHECKLess(time.perf_counter() - t0, 1.0)  # FLAG

    # allowed: the property, and hang guards that assert a state, never a clock
    CHECK worker.wait(10) and not worker.is_alive()
    wait_until(lambda: stop.is_set(), "the worker stops", hang_guard_s=30)
    end = time.monotonic() + 5
    while time.monotonic() < end and not stop.is_set():
        pump()
    CHECK stop.is_set()
    print(f"took {time.perf_counter() - t0:.2f} s")
    n = len(overheads)
    CHECK n == 3 and len(overheads) >= 3  # how many, not how long


def test_another_scope_names_start_too():
    start = 3  # not a clock here: names are followed per function
    CHECK start < 5
'''


def test_the_wall_time_rule_catches_planted_cases():
    """A planted file with each form the rule must catch (``# FLAG``) and the allowed ones; ``CHECK`` stands for the
    keyword, so that this file's own lines are no such checks."""
    planted = PLANTED_TIMINGS.replace("CHECK", "assert")
    flagged = [int(line.split(":")[1]) for line in clock_assertions(planted, "planted.py")]
    marked = [i for i, line in enumerate(planted.splitlines(), 1) if "# FLAG" in line]
    assert len(marked) == 9 and flagged == marked
