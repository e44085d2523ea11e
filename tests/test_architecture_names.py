"""No name importable from two places inside the project: each name is imported from the module that defines it.

Two rules, read from the source (ast), over ``app/`` and ``attention_core/``:
- **no re-export**: a module does not import a name from another project module to pass it on (unused in the
  module, or listed in its ``__all__``: ``__all__`` names only what the module defines);
- **import from the definer**: no module of the project (``app``, ``attention_core``, ``tests``, ``scripts``,
  ``benchmarks``, and the code they hand a child process in a string) imports a name from a project module that
  did not define it but imported it itself.
The one exception is a package's public face: a package ``__init__.py`` that lists, in its ``__all__``, names of its
own modules (``app.__version__``; ``attention_core``'s documented names; ``attention_core.pretrained``'s and
``attention_core.phenomena``'s). Names its lazy ``__getattr__`` map serves are not bound in the source, so neither
rule sees them.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "attention_core")
"""The project's packages: the modules whose names these rules follow."""
IMPORTERS = (*PACKAGES, "tests", "scripts", "benchmarks")
ANNOTATION = re.compile(r"[\w\[\]., |]{1,200}")
"""A string that may be a quoted annotation (``"tuple[ReversalTrainer, list[Snapshot]]"``), not prose."""


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


@functools.cache
def _parsed(path: Path, mtime: float) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def load(root: Path, folder: str) -> list[Module]:
    out = []
    for path in sorted((root / folder).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(Module(".".join(parts), path, _parsed(path, path.stat().st_mtime)))
    return out


def absolute(module: Module, node: ast.ImportFrom) -> str:
    """The module an ``from … import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's own statements, ``if TYPE_CHECKING:`` and ``try:`` blocks included (not functions' bodies)."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        out.append(node)
        if isinstance(node, ast.If):
            todo[:0] = [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo[:0] = [*node.body, *node.orelse, *node.finalbody, *(s for h in node.handlers for s in h.body)]
    return out


def defined_and_imported(module: Module) -> tuple[set[str], dict[str, ast.ImportFrom | ast.Import]]:
    """The module-level names it defines (def, class, assignment) and those it binds by importing."""
    defined: set[str] = set()
    imported: dict[str, ast.ImportFrom | ast.Import] = {}
    for node in top_level(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            for alias in node.names:
                imported[alias.asname or alias.name.split(".")[0]] = node
    return defined, imported


def all_names(module: Module) -> set[str]:
    names: set[str] = set()
    for node in module.tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                names |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)
                          and isinstance(c.value, str)}
    return names


def used_names(module: Module) -> set[str]:
    """Every name the module reads, in code or in a quoted annotation, outside ``__all__``."""
    body = [n for n in module.tree.body if not (isinstance(n, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == "__all__"
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])))]
    used: set[str] = set()
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and ANNOTATION.fullmatch(node.value):
            try:
                quoted = ast.parse(node.value, mode="eval")
            except SyntaxError:
                continue
            used |= {n.id for n in ast.walk(quoted) if isinstance(n, ast.Name)}
    return used


def public_face(module: Module, name: str, source: str) -> bool:
    """A package ``__init__`` listing in its ``__all__`` a name of one of its own modules."""
    return module.is_package and name in all_names(module) and source.startswith(module.name + ".")


def re_exports(modules: list[Module]) -> list[str]:
    """Names a module imports from the project to pass them on: unused there, or listed in its ``__all__``."""
    found = []
    for m in modules:
        _, imported = defined_and_imported(m)
        used, listed = used_names(m), all_names(m)
        for name, node in imported.items():
            if not isinstance(node, ast.ImportFrom) or (name in used and name not in listed):
                continue
            source = absolute(m, node)
            if source.split(".")[0] in PACKAGES and not public_face(m, name, source):
                found.append(f"{m.path.relative_to(ROOT) if m.path.is_relative_to(ROOT) else m.path}:{node.lineno} "
                             f"re-exports {name} (from {source})")
    return found


def imports_not_from_the_definer(project: list[Module], importers: list[Module]) -> list[str]:
    """``from X import name`` where X binds ``name`` by importing it (and is not its package's public face), or
    does not bind it at all (a name gone from a module, still imported in a child process's code)."""
    by_name = {m.name: m for m in project}
    bindings = {m.name: defined_and_imported(m) for m in project}
    found = []
    for m in importers:
        where = m.path.relative_to(ROOT) if m.path.is_relative_to(ROOT) else m.path
        for line, node in import_statements(m.tree, in_strings=not m.path.name.startswith("test_architecture")):
            source = absolute(m, node)
            if source not in by_name:
                continue
            defined, imported = bindings[source]
            for alias in node.names:
                name, origin = alias.name, imported.get(alias.name)
                if name in defined or f"{source}.{name}" in by_name or name == "*":
                    continue
                if origin is None:
                    if "__getattr__" not in defined:  # a lazy map serves names the source does not bind
                        found.append(f"{where}:{line} imports {name} from {source}, which has no such name")
                elif isinstance(origin, ast.ImportFrom) and not public_face(by_name[source], name,
                                                                            absolute(by_name[source], origin)):
                    found.append(f"{where}:{line} imports {name} from {source}, which imports it from "
                                 f"{absolute(by_name[source], origin)}")
    return found


def import_statements(tree: ast.Module, in_strings: bool = True) -> list[tuple[int, ast.ImportFrom]]:
    """Every ``from … import`` of the module with its line, and (``in_strings``) those of the code it hands a child
    process in a string (``textwrap.dedent(\"\"\"… from app… import …\"\"\")``): that code imports from the project
    too. The architecture tests' own strings are planted violations, not code to run."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node))
        elif in_strings and isinstance(node, ast.Constant) and isinstance(node.value, str) and "import " in node.value:
            try:
                code = ast.parse(textwrap.dedent(node.value))
            except SyntaxError:
                continue
            found += [(node.lineno, n) for n in ast.walk(code) if isinstance(n, ast.ImportFrom)]
    return found


def project(root: Path = ROOT) -> list[Module]:
    return [m for folder in PACKAGES for m in load(root, folder)]


def test_no_module_re_exports_a_name():
    assert re_exports(project()) == []


def test_every_name_is_imported_from_the_module_that_defines_it():
    importers = [m for folder in IMPORTERS for m in load(ROOT, folder)]
    assert imports_not_from_the_definer(project(), importers) == []


def _fake_tree(tmp_path: Path) -> Path:
    files = {
        "app/__init__.py": "from app.common.version import VERSION\n__all__ = ['VERSION']\n",
        "app/common/__init__.py": "",
        "app/common/version.py": "VERSION = '1'\n",
        "app/common/runner.py": "class Runner: ...\n",
        "app/training/__init__.py": "",
        "app/training/driver.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from app.common.runner import Runner\n"
                                  "def drive(r: 'Runner') -> None: ...\n",
        "attention_core/__init__.py": "",
        "tests/test_x.py": "from app import VERSION\nfrom app.training.driver import drive\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_a_clean_fake_tree_passes(tmp_path):
    """The public face, a name used only in a quoted annotation and an import from the definer are all fine."""
    root = _fake_tree(tmp_path)
    modules = project(root)
    assert re_exports(modules) == []
    assert imports_not_from_the_definer(modules, [*modules, *load(root, "tests")]) == []


def test_a_planted_re_export_is_reported(tmp_path):
    root = _fake_tree(tmp_path)
    (root / "app/training/driver.py").write_text(
        "from app.common.runner import Runner  # noqa: F401 (re-exported)\n__all__ = ['Runner', 'drive']\n"
        "def drive() -> None: ...\n")
    (root / "tests/test_x.py").write_text("from app.training.driver import Runner, drive\n")
    modules = project(root)
    assert [r.split(" ", 1)[1] for r in re_exports(modules)] == ["re-exports Runner (from app.common.runner)"]
    assert [r.split(" ", 1)[1] for r in imports_not_from_the_definer(modules, load(root, "tests"))] == [
        "imports Runner from app.training.driver, which imports it from app.common.runner"]


def test_a_name_used_where_imported_is_still_imported_from_its_definer(tmp_path):
    """Used in the module that imports it, a name is still not to be imported from there."""
    root = _fake_tree(tmp_path)
    (root / "app/training/driver.py").write_text(
        "from app.common.runner import Runner\ndef drive(r: Runner) -> None: ...\n")
    (root / "app/training/panel.py").write_text("from .driver import Runner\nx: Runner\n")
    modules = project(root)
    assert re_exports(modules) == []
    assert [r.split(" ", 1)[1] for r in imports_not_from_the_definer(modules, modules)] == [
        "imports Runner from app.training.driver, which imports it from app.common.runner"]


def test_a_package_face_re_exports_only_its_own_modules_names(tmp_path):
    """A package ``__init__`` may list its own modules' names in ``__all__``, not another package's."""
    root = _fake_tree(tmp_path)
    (root / "app/training/__init__.py").write_text(
        "from app.common.runner import Runner\n__all__ = ['Runner']\n")
    assert [r.split(" ", 1)[1] for r in re_exports(project(root))] == [
        "re-exports Runner (from app.common.runner)"]


def test_a_name_listed_in_all_but_defined_elsewhere_is_a_re_export(tmp_path):
    """Used in the module, and also listed in its ``__all__``: advertised from two places."""
    root = _fake_tree(tmp_path)
    (root / "app/training/driver.py").write_text(
        "from app.common.runner import Runner\n__all__ = ['Runner', 'drive']\ndef drive(r: Runner) -> None: ...\n")
    assert [r.split(" ", 1)[1] for r in re_exports(project(root))] == ["re-exports Runner (from app.common.runner)"]


def test_an_import_in_a_child_process_script_is_checked_too(tmp_path):
    root = _fake_tree(tmp_path)
    (root / "app/training/driver.py").write_text(
        "from app.common.runner import Runner\ndef drive(r: Runner) -> None: ...\n")
    (root / "tests/test_x.py").write_text(
        'import textwrap\nCODE = textwrap.dedent("""\n    import sys\n'
        '    from app.training.driver import Runner\n""")\n')
    assert [r.split(" ", 1)[1] for r in imports_not_from_the_definer(project(root), load(root, "tests"))] == [
        "imports Runner from app.training.driver, which imports it from app.common.runner"]


def test_a_name_no_longer_in_its_module_is_reported(tmp_path):
    """A child process's code importing a name its module no longer has fails only when run: reported here."""
    root = _fake_tree(tmp_path)
    (root / "tests/test_x.py").write_text('CODE = "from app.training.driver import drive_fast\\nprint(1)"\n')
    assert [r.split(" ", 1)[1] for r in imports_not_from_the_definer(project(root), load(root, "tests"))] == [
        "imports drive_fast from app.training.driver, which has no such name"]
