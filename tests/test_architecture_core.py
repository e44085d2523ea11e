"""attention_core's own architecture rules: grouped by subject, every name imported from where it lives, the size caps
of the app, a map in the package docstring, and no forward pass called a "runner".

Each rule is a function of a tree, so the tests below run it on the real tree and on a copy with one violation
planted (the rule must report it).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = "attention_core"
MODULE_LIMIT = 400
FOLDER_LIMIT = 15
SCANNED = ("attention_core", "app", "tests", "benchmarks", "scripts")
FACADES = ("attention_core", "attention_core.pretrained", "attention_core.phenomena")


def _python_files(root: Path, folders: tuple[str, ...] = SCANNED) -> list[Path]:
    return sorted(p for d in folders if (root / d).is_dir() for p in (root / d).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _defined(tree: ast.Module) -> set[str]:
    """Names a module binds at top level by def, class or assignment (not by importing them)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                names.update(e.id for e in elts if isinstance(e, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _public(tree: ast.Module) -> set[str]:
    """A facade package's public names: its ``__all__``, the keys of a lazy map and its eager imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id == "_LAZY" and isinstance(node.value, ast.Dict):
                names.update(k.value for k in node.value.keys if isinstance(k, ast.Constant))
            if node.targets[0].id == "__all__" and isinstance(node.value, ast.List):
                names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
        elif isinstance(node, ast.ImportFrom) and node.level:
            names.update(a.asname or a.name for a in node.names)
    return names


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def misplaced_imports(root: Path, folders: tuple[str, ...] = SCANNED) -> list[str]:
    """Every import of an attention_core name that does not name the module defining it (a re-export used as a
    second address), outside the documented facades' public names; and every lazy-map entry pointing elsewhere."""
    modules: dict[str, tuple[set[str], set[str]]] = {}
    for path in _python_files(root, (CORE,)):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules[_module_name(root, path)] = (_defined(tree), _public(tree))
    problems = []
    for path in _python_files(root, folders):
        module = _module_name(root, path)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or (node.level and not module.startswith(CORE + ".")
                                                        and module != CORE):
                continue
            source = _resolve(node, module, path.name == "__init__.py")
            if source != CORE and not source.startswith(CORE + "."):
                continue
            if source not in modules:
                problems.append(f"{module}: imports from {source}, which does not exist")
                continue
            defined, public = modules[source]
            for alias in node.names:
                name = alias.name
                if name in defined or f"{source}.{name}" in modules:
                    continue
                if source in FACADES and name in public:
                    continue
                homes = sorted(m for m, (d, _) in modules.items() if name in d)
                problems.append(f"{module}: imports {name} from {source}, which does not define it "
                                f"(it lives in {', '.join(homes) or 'no module'})")
    init = ast.parse((root / CORE / "__init__.py").read_text(encoding="utf-8"))
    for node in init.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_LAZY":
            for key, value in zip(node.value.keys, node.value.values):  # type: ignore[attr-defined]
                name, where = key.value, f"{CORE}.{value.value}"
                defined, public = modules.get(where, (set(), set()))
                if name not in defined and not (where in FACADES and name in public):
                    problems.append(f"{CORE}._LAZY: {name} -> {where}, which does not define it")
    return problems


def reexport_markers(root: Path) -> list[str]:
    """``# noqa: F401`` on a from-import inside attention_core marks a name kept only to be imported from here again
    (a plain ``import numpy  # noqa: F401`` loaded for its side effect is no second address)."""
    found = []
    for path in _python_files(root, (CORE,)):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.ImportFrom) and any(
                    "noqa: F401" in lines[i - 1] for i in range(node.lineno, (node.end_lineno or node.lineno) + 1)):
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def foreign_all(root: Path) -> list[str]:
    """A module's ``__all__`` (outside the documented facades) lists only what the module defines: listing an
    imported name makes the module a second address for it."""
    found = []
    for path in _python_files(root, (CORE,)):
        module = _module_name(root, path)
        if module in FACADES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = _defined(tree)
        for node in tree.body:
            if (isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
                    and isinstance(node.value, (ast.List, ast.Tuple))):
                found += [f"{module}.__all__: {e.value}" for e in node.value.elts
                          if isinstance(e, ast.Constant) and e.value not in defined]
    return found


def oversized(root: Path) -> list[str]:
    """Modules past 400 lines and folders past 15 modules (``__init__`` not counted), as under app/."""
    found = []
    files = _python_files(root, (CORE,))
    for path in files:
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MODULE_LIMIT:
            found.append(f"{path.relative_to(root).as_posix()}: {n} lines > {MODULE_LIMIT}")
    for folder in sorted({p.parent for p in files}):
        count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        if count > FOLDER_LIMIT:
            found.append(f"{folder.relative_to(root).as_posix()}: {count} modules > {FOLDER_LIMIT}")
    return found


def off_the_map(root: Path) -> list[str]:
    """Top-level modules and subpackages of attention_core that its docstring (the map) does not name."""
    doc = ast.get_docstring(ast.parse((root / CORE / "__init__.py").read_text(encoding="utf-8"))) or ""
    named = set(re.findall(r"``([A-Za-z_][\w/]*?)/?``", doc))
    entries = [p.stem for p in (root / CORE).glob("*.py") if p.name != "__init__.py"]
    entries += [p.name for p in (root / CORE).iterdir() if (p / "__init__.py").is_file()]
    return sorted(e for e in entries if e not in named)


def runner_names(root: Path) -> list[str]:
    """A forward pass is a forward pass: no module, class, function, attribute or variable of attention_core
    is called a runner (the app's Runner Protocol runs background work; the word keeps that one meaning)."""
    found = []
    for path in _python_files(root, (CORE,)):
        rel = path.relative_to(root).as_posix()
        if "runner" in path.stem.lower():
            found.append(rel)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = (node.name if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                    else node.attr if isinstance(node, ast.Attribute)
                    else node.id if isinstance(node, ast.Name) else None)
            if name and "runner" in name.lower():
                found.append(f"{rel}:{node.lineno} {name}")
    return found


# --- the real tree


def test_every_import_names_the_module_that_defines_it():
    assert misplaced_imports(ROOT) == []
    assert reexport_markers(ROOT) == []
    assert foreign_all(ROOT) == []


def test_attention_core_keeps_the_size_caps():
    assert oversized(ROOT) == []


def test_the_package_docstring_maps_every_module_and_subpackage():
    assert off_the_map(ROOT) == []


def test_no_runner_in_attention_core():
    assert runner_names(ROOT) == []


def test_every_public_name_of_library_md_imports_from_attention_core():
    """Every name docs/library.md writes in backquotes that attention_core's modules define is reachable as
    ``attention_core.<name>`` or from a documented facade (``attention_core.pretrained``, ``.phenomena``)."""
    defined: set[str] = set()
    for path in _python_files(ROOT, (CORE,)):
        defined |= {n for n in _defined(ast.parse(path.read_text(encoding="utf-8"))) if not n.startswith("_")}
    doc = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    # `step()` in the docs is ReversalTrainer.step; optim.step, an internal function, shares the word
    documented = sorted({m for m in re.findall(r"`([A-Za-z_]\w*)", doc) if m in defined} - {"step"})
    code = ("import sys, attention_core, attention_core.pretrained as p, attention_core.phenomena as ph\n"
            f"names = {documented!r}\n"
            "missing = [n for n in names if not any(hasattr(m, n) for m in (attention_core, p, ph))]\n"
            "print(missing); sys.exit(1 if missing else 0)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert len(documented) > 60  # the parse found the public names (the table alone holds more)
    assert result.returncode == 0, result.stdout + result.stderr


# --- planted violations: each rule reports one


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / CORE, tmp_path / CORE, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "app").mkdir()
    return tmp_path


def test_planted_reexport_import_is_reported(tree):
    assert misplaced_imports(tree, (CORE, "app")) == []
    # multihead imports split_heads for itself; importing it from there gives the name a second address
    (tree / "app" / "user.py").write_text("from attention_core.multihead import split_heads\n")
    assert misplaced_imports(tree, (CORE, "app")) == [
        "app.user: imports split_heads from attention_core.multihead, which does not define it "
        "(it lives in attention_core.multihead_steps)"]


def test_planted_relative_reexport_and_noqa_are_reported(tree):
    path = tree / CORE / "tiny" / "training.py"
    path.write_text(path.read_text() + "\nfrom .training import TrainConfig  # noqa: F401\n")
    problems = misplaced_imports(tree, (CORE,))
    assert problems == ["attention_core.tiny.training: imports TrainConfig from attention_core.tiny.training, "
                        "which does not define it (it lives in attention_core.tiny.config)"]
    assert reexport_markers(tree) == [f"attention_core/tiny/training.py:{len(path.read_text().splitlines())}"]


def test_planted_foreign_name_in_all_is_reported(tree):
    assert foreign_all(tree) == []
    path = tree / CORE / "multihead.py"
    path.write_text(path.read_text() + '\n__all__ = ["MultiHeadAttention", "split_heads"]\n')
    assert foreign_all(tree) == ["attention_core.multihead.__all__: split_heads"]


def test_planted_lazy_map_entry_pointing_elsewhere_is_reported(tree):
    init = tree / CORE / "__init__.py"
    init.write_text(init.read_text().replace('"TrainConfig": "tiny.config"', '"TrainConfig": "tiny.training"'))
    assert misplaced_imports(tree, (CORE,)) == [
        "attention_core._LAZY: TrainConfig -> attention_core.tiny.training, which does not define it"]


def test_planted_long_module_and_crowded_folder_are_reported(tree):
    (tree / CORE / "tiny" / "long.py").write_text("x = 1\n" * (MODULE_LIMIT + 1))
    for i in range(FOLDER_LIMIT):
        (tree / CORE / "scaling" / f"m{i}.py").write_text("")
    assert oversized(tree) == [f"attention_core/tiny/long.py: {MODULE_LIMIT + 1} lines > {MODULE_LIMIT}",
                               f"attention_core/scaling: {FOLDER_LIMIT + 3} modules > {FOLDER_LIMIT}"]


def test_planted_module_off_the_map_is_reported(tree):
    (tree / CORE / "blockwise.py").write_text('"""Blockwise attention."""\n')
    (tree / CORE / "decoding").mkdir()
    (tree / CORE / "decoding" / "__init__.py").write_text("")
    assert off_the_map(tree) == ["blockwise", "decoding"]


def test_planted_runner_is_reported(tree):
    path = tree / CORE / "pretrained" / "forward.py"
    path.write_text(path.read_text().replace("class ForwardPass:", "class Runner:"))
    assert [p.split(" ")[-1] for p in runner_names(tree)] == ["Runner"]
