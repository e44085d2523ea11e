"""The window is typed: rules read from the source with ``ast``, each also run on a small planted tree so a rule
that silently stopped finding anything fails a test.

- No parameter named ``window`` or ``host`` is annotated ``Any`` (in app/): a feature states what it uses of the
  window as a Protocol (``app/widgets/window_api.py``'s ``HostWindow``, ``app/learn/qt/window.py`` …).
- No private attribute of one of our packages is read from another package (``getattr(w, "_closed")``,
  ``w._closed``): what a package offers another is public (``MainWindow.closed``).
- No assignment to a class attribute of an imported class (``MainWindow.detect_devices = False``, or ``setattr``
  on it) in app/, scripts/ or benchmarks/: a run is configured through constructor options (``create_main_window(
  detect_devices=False)``), never by changing a class for every later instance.
- mypy checks the Qt layers: every ``qt/`` package, ``app/widgets`` and ``app/shell`` are in ``[tool.mypy] files``
  (pyproject.toml), so ``./test.sh`` type-checks the window's Protocols against the window.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WINDOW_NAMES = {"window", "host"}


def _modules(root: Path, folder: str) -> list[Path]:
    return sorted(p for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _package(root: Path, path: Path) -> str:
    """``app/<feature>`` for a module of the app (``app`` for its top-level modules), else the top folder."""
    parts = path.relative_to(root).parts
    return "/".join(parts[:2]) if parts[0] == "app" and len(parts) > 2 else parts[0]


def _is_any(node: ast.expr | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any")


def window_params_typed_any(root: Path, folders: tuple[str, ...] = ("app",)) -> list[str]:
    found = []
    for folder in folders:
        for path in _modules(root, folder):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    a = node.args
                    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                        if arg.arg in WINDOW_NAMES and _is_any(arg.annotation):
                            found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}({arg.arg}: Any)")
    return found


def _private_attrs_defined(root: Path, folders: tuple[str, ...]) -> dict[str, set[str]]:
    """Private name -> the packages whose modules define it (``self._x = ...``, ``def _x``, a class body's
    ``_x = ...``)."""
    defined: dict[str, set[str]] = {}
    for folder in folders:
        for path in _modules(root, folder):
            pkg = _package(root, path)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names: list[str] = []
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(
                        node.value, ast.Name) and node.value.id in ("self", "cls"):
                    names.append(node.attr)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.append(node.name)
                elif isinstance(node, ast.ClassDef):
                    for stmt in node.body:
                        if isinstance(stmt, ast.Assign):
                            names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
                        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                            names.append(stmt.target.id)
                for name in names:
                    if name.startswith("_") and not name.startswith("__"):
                        defined.setdefault(name, set()).add(pkg)
    return defined


def private_reads_across_packages(root: Path, folders: tuple[str, ...] = ("app", "scripts")) -> list[str]:
    """Reads of ``x._name`` (x not ``self``/``cls``) or ``getattr(x, "_name", …)`` where ``_name`` is defined
    only in other packages of ours. (A third party's private, or a mark a module puts on a foreign object and
    reads back itself, is not another package's.)"""
    defined = _private_attrs_defined(root, folders)
    found = []
    for folder in folders:
        for path in _modules(root, folder):
            pkg = _package(root, path)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                name = None
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and not (
                        isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    name = node.attr
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                      and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                      and isinstance(node.args[1].value, str)):
                    name = node.args[1].value
                if name and name.startswith("_") and not name.startswith("__") and name in defined and (
                        pkg not in defined[name]):
                    found.append(f"{path.relative_to(root)}:{node.lineno} reads {name} of "
                                 f"{', '.join(sorted(defined[name]))}")
    return found


def _imported_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def class_attributes_assigned(root: Path, folders: tuple[str, ...] = ("app", "scripts")) -> list[str]:
    """``Imported.attr = …`` (or ``+=``, or ``setattr(Imported, …)``) where ``Imported`` is a class name (Capitalised)
    brought in by ``from … import``."""
    found = []
    for folder in folders:
        for path in _modules(root, folder):
            tree = ast.parse(path.read_text(), str(path))
            imported = {n for n in _imported_names(tree) if n[:1].isupper() and not n.isupper()}
            for node in ast.walk(tree):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                      and node.args):
                    targets = [ast.Attribute(value=node.args[0], attr="?", ctx=ast.Store())]
                for t in targets:
                    for el in t.elts if isinstance(t, ast.Tuple) else [t]:
                        if isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name) and (
                                el.value.id in imported):
                            found.append(f"{path.relative_to(root)}:{node.lineno} sets {el.value.id}.{el.attr}")
    return found


def qt_folders_mypy_skips(root: Path) -> list[str]:
    """The Qt folders of app/ (each ``qt/`` package, ``widgets``, ``shell``) that no entry of ``[tool.mypy] files``
    covers (an entry is a path or a glob, as mypy reads it)."""
    section = (root / "pyproject.toml").read_text().split("[tool.mypy]", 1)[1]  # (no tomllib on Python 3.10)
    listing = re.search(r"^files\s*=\s*(\[.*?\])", section, re.S | re.M)
    assert listing is not None, "no files = [...] in [tool.mypy]"
    entries = ast.literal_eval(re.sub(r"#[^\n]*", "", listing.group(1)))
    covered = {p.resolve() for e in entries for p in root.glob(e)}
    folders = sorted(p for p in (root / "app").rglob("qt") if p.is_dir()) + [root / "app/widgets", root / "app/shell"]
    return [f.relative_to(root).as_posix() for f in folders
            if f.is_dir() and not any(c == f.resolve() or c in f.resolve().parents for c in covered)]


# ---------------------------------------------------------------------------------------------- the real tree
def test_mypy_checks_every_qt_folder() -> None:
    assert qt_folders_mypy_skips(ROOT) == []


def test_no_window_parameter_is_typed_any() -> None:
    assert window_params_typed_any(ROOT) == []


def test_no_private_attribute_is_read_across_packages() -> None:
    assert private_reads_across_packages(ROOT, ("app", "scripts", "benchmarks")) == []


def test_no_class_attribute_of_an_imported_class_is_assigned() -> None:
    assert class_attributes_assigned(ROOT, ("app", "scripts", "benchmarks")) == []


# ---------------------------------------------------------------------------------------------- planted trees
def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, source in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source)
    return tmp_path


def test_a_window_parameter_typed_any_is_reported(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "app/lab/qt/host.py": "from typing import Any\n\nclass H:\n    def __init__(self, window: Any) -> None:\n"
                              "        self.window = window\n",
        "app/learn/cli.py": "def run(lesson: object, window: 'Any' = None) -> None: ...\n",
        "app/shell/ok.py": "def f(window: 'HostWindow', model: 'Any') -> None: ...\n",  # typed, or not a window
    })
    assert window_params_typed_any(root) == ["app/lab/qt/host.py:4 __init__(window: Any)",
                                             "app/learn/cli.py:1 run(window: Any)"]


def test_a_private_flag_read_from_another_package_is_reported(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "app/shell/main_window.py": "class MainWindow:\n    def __init__(self):\n        self._closed = False\n"
                                    "    def _push(self):\n        return self._closed\n",
        "app/widgets/tab_host.py": "def done(window):\n    return getattr(window, '_closed', False)\n",
        "app/lab/qt/host.py": "def push(w):\n    w._push()\n",
        "app/shell/presentation.py": "def f(w):\n    return w._closed\n",  # the same package: allowed
        "app/widgets/style.py": "def f(axis):\n    return getattr(axis, '_tickLevels', None)\n",  # a third party's
        "scripts/campaign.py": "def f(w):\n    return w._closed\n",
    })
    assert private_reads_across_packages(root) == [
        "app/lab/qt/host.py:2 reads _push of app/shell",
        "app/widgets/tab_host.py:2 reads _closed of app/shell",
        "scripts/campaign.py:2 reads _closed of app/shell",
    ]


def test_a_class_attribute_flipped_is_reported(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "app/shell/gui.py": "from app.shell.main_window import MainWindow\n\ndef run():\n"
                            "    MainWindow.detect_devices = False\n",
        "scripts/campaign.py": "from app.training.qt.panel import TrainingPanel\n"
                               "TrainingPanel.warm_up_torch, x = True, 1\n"
                               "setattr(TrainingPanel, 'preview_untrained', False)\n",
        "app/shell/ok.py": "from app.shell.main_window import MainWindow\n\ndef run(w: MainWindow):\n"
                           "    w.detect_devices = False\n    MAX = 3\n",  # an instance's attribute: allowed
    })
    assert class_attributes_assigned(root) == [
        "app/shell/gui.py:4 sets MainWindow.detect_devices",
        "scripts/campaign.py:2 sets TrainingPanel.warm_up_torch",
        "scripts/campaign.py:3 sets TrainingPanel.?",
    ]


def test_a_qt_folder_left_out_of_mypy_is_reported(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "pyproject.toml": '[tool.mypy]\nfiles = ["app/widgets", "app/lab/qt", "app/shell/main_window.py"]\n',
        "app/widgets/theme.py": "", "app/lab/qt/tab.py": "", "app/training/qt/panel.py": "",
        "app/shell/main_window.py": "", "app/shell/gui.py": "",
    })
    assert qt_folders_mypy_skips(root) == ["app/training/qt", "app/shell"]
