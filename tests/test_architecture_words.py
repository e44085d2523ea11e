"""One word, one meaning: the names of app/'s packages and modules say what they are.

- A feature package is named as its tab reads (lower case, "_" for a space, "_tab" allowed where the bare word would
  say something else: the Model tab's package is ``model_tab``, since ``model`` means the Qt-free part); so is each
  Playground view's folder (its title in ``app/playground/views/registry.py``; "3D" is ``three_d``).
- ``model`` (a ``model/`` package or a ``model.py``) means only a feature's Qt-free part: it sits directly in a
  feature (or a Playground view) and nothing in it imports Qt; no ``models`` anywhere. A Qt item model
  (``QAbstractTableModel``) is Qt's word and lives in a module named for what it shows.
- Glue's rule: two features have a module of the same name only when it plays the same role in both
  (``SAME_ROLE`` says which role); likewise a class name defined twice under app/ (``SAME_CLASS``).

Each rule is checked on the real tree and, with a violation planted, on a copy of it.
"""

from __future__ import annotations

import ast
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FEATURE_TABS = {  # feature package under app/ -> the title of its tab (the Learn dock's, for learn) in the window
    "playground": "Playground",
    "training": "Training",
    "experiments": "Experiments",
    "lab": "Lab",
    "learn": "Learn",
    "model_tab": "Model",
}
SHARED = {"common", "widgets", "shell"}  # the layers every feature uses: no tab of their own
QT = {"PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph", "superqt"}
DIGITS = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six", "7": "seven",
          "8": "eight", "9": "nine"}
TITLE_CALLS = {"addTab", "insertTab", "QDockWidget", "add"}

SAME_ROLE = {  # a module name two features share -> the one role it plays in each
    "__main__.py": "the feature alone in a development window",
    "cli.py": "the feature's command-line commands",
    "host.py": "the tab's host: builds the tab on first use, gives the window its model",
    "tab.py": "the tab's layout",
    "session.py": "the tab's Qt-free evented session",
    "model.py": "the feature's (or view's) Qt-free part",
    "plots.py": "the tab's pyqtgraph curves",
    "controls.py": "the tab's control panel",
    "panel.py": "the feature's main panel",
    "files.py": "the feature's files on disk: reading, writing, where they go",
    "heads.py": "the layer x head grid of a tiny model's run",
    "compare.py": "two attention snapshots side by side (two steps of a run, two runs)",
    "figure.py": "a view's figure written to a file for the command line's export, offscreen",
}

SAME_CLASS = {  # a class name defined in two modules under app/ -> the one role it plays in each
    "Baseline": "what a lesson's do step must move beyond, in the tab it links (learn/model/training.py, lab.py)",
}


def identifier(title: str) -> str:
    """A title as a package name: "Multi-head" -> "multihead", "3D" -> "three_d", "My tab" -> "my_tab"."""
    word = title.lower().replace("-", "").replace(" ", "_")
    return f"{DIGITS[word[0]]}_{word[1:]}" if word[:1].isdigit() else word


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _packages(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file())


def qt_imports(path: Path) -> list[str]:
    """The Qt modules ``path`` imports anywhere (inside functions too), leaving out ``if TYPE_CHECKING:`` blocks."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.split(".")[0] in QT)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in QT:
            found.append(node.module or "")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def tab_titles(folders: list[Path]) -> set[str]:
    """The titles the code gives tabs and docks: strings passed to addTab/insertTab/QDockWidget/hosts.add, or
    assigned to a name ending in TITLE."""
    titles: set[str] = set()
    for folder in folders:
        for path in _modules(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    if name in TITLE_CALLS:
                        titles |= {a.value for a in node.args
                                   if isinstance(a, ast.Constant) and isinstance(a.value, str)}
                elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                    if any(isinstance(t, ast.Name) and t.id.endswith("TITLE") for t in node.targets):
                        titles.add(str(node.value.value))
    return titles


def feature_name_violations(app: Path, tabs: dict[str, str] = FEATURE_TABS) -> list[str]:
    """Feature packages not named as their tab reads, or not in the table."""
    out = []
    for pkg in _packages(app):
        if pkg.name in SHARED:
            continue
        title = tabs.get(pkg.name)
        if title is None:
            out.append(f"app/{pkg.name}: a feature package whose tab is not in FEATURE_TABS (name it as its tab reads)")
            continue
        if pkg.name not in (identifier(title), identifier(title) + "_tab"):
            out.append(f"app/{pkg.name}: its tab reads {title!r}: name it {identifier(title)!r}")
        if title not in tab_titles([app / "shell", pkg]):
            out.append(f"app/{pkg.name}: no tab or dock titled {title!r} in app/shell or app/{pkg.name}")
    return out


def view_name_violations(app: Path) -> list[str]:
    """Playground view folders not named as their tab reads (``views/registry.py``), or not registered."""
    views = app / "playground" / "views"
    registry = views / "registry.py"
    if not registry.is_file():
        return []
    out, registered = [], set()
    for node in ast.walk(ast.parse(registry.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "PlaygroundView":
            name, title, module = (a.value for a in node.args if isinstance(a, ast.Constant))
            registered.add(name)
            if name != identifier(title):
                out.append(f"views/registry.py: the view titled {title!r} is named {name!r}: "
                           f"name it {identifier(title)!r}")
            if module != f"app.playground.views.{name}.view":
                out.append(f"views/registry.py: the view {name!r} is built by {module}, "
                           f"not app.playground.views.{name}.view")
    for pkg in _packages(views):
        if pkg.name not in registered:
            out.append(f"app/playground/views/{pkg.name}: a view folder not in views/registry.py")
    return out


def model_word_violations(app: Path) -> list[str]:
    """"model" is only a feature's (or a Playground view's) Qt-free part; "models" is nothing."""
    out = []
    for path in sorted({*app.rglob("model"), *app.rglob("model.py"), *app.rglob("models"), *app.rglob("models.py")}):
        if "__pycache__" in path.parts or (path.is_dir() and not (path / "__init__.py").is_file()):
            continue
        rel = path.relative_to(app.parent).as_posix()
        parent = path.parent.relative_to(app).parts
        if path.stem == "models":
            out.append(f"{rel}: 'models' names nothing here: a model lives in its feature's model/ (or model.py)")
            continue
        if not (parent and parent[0] in FEATURE_TABS and (len(parent) == 1 or parent[:2] == ("playground", "views")
                                                          and len(parent) == 3)):
            out.append(f"{rel}: 'model' means a feature's Qt-free part; here it is not one (name it for what it is)")
        for module in _modules(path) if path.is_dir() else [path]:
            for name in qt_imports(module):
                out.append(f"{module.relative_to(app.parent).as_posix()}: imports {name}: 'model' is the Qt-free part")
    return out


def shared_name_violations(app: Path, same_role: dict[str, str] = SAME_ROLE) -> list[str]:
    """Module names two features share that are not known to play one role in both (glue's rule)."""
    features: dict[str, set[str]] = defaultdict(set)
    for pkg in _packages(app):
        if pkg.name in SHARED:
            continue
        for path in _modules(pkg):
            if path.name != "__init__.py":
                features[path.name].add(pkg.name)
    return [f"{name}: in {', '.join(sorted(owners))}: a module name two features share plays one role in both "
            "(say which in SAME_ROLE) or is renamed for what it does"
            for name, owners in sorted(features.items()) if len(owners) > 1 and name not in same_role]


def shared_class_violations(app: Path, same_role: dict[str, str] = SAME_CLASS) -> list[str]:
    """Class names defined in two modules under app/ that are not known to play one role in both."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in _modules(app):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(path.relative_to(app.parent).as_posix())
    return [f"class {name}: in {', '.join(paths)}: one name, two things (rename one for what it is, or say the one "
            "role in SAME_CLASS)" for name, paths in sorted(where.items()) if len(paths) > 1 and name not in same_role]


# ---------------------------------------------------------------- the real tree

def test_feature_packages_are_named_as_their_tabs_read():
    assert feature_name_violations(ROOT / "app") == []


def test_playground_views_are_named_as_their_tabs_read():
    assert view_name_violations(ROOT / "app") == []


def test_model_means_only_the_qt_free_part():
    assert model_word_violations(ROOT / "app") == []


def test_modules_sharing_a_name_play_one_role():
    assert shared_name_violations(ROOT / "app") == []


def test_classes_sharing_a_name_play_one_role():
    assert shared_class_violations(ROOT / "app") == []


def test_the_same_role_table_names_only_shared_modules():
    """An entry whose name no two features share any longer is removed (the table stays a list of real cases)."""
    names = defaultdict(set)
    for pkg in _packages(ROOT / "app"):
        if pkg.name not in SHARED:
            for path in _modules(pkg):
                names[path.name].add(pkg.name)
    assert sorted(n for n in SAME_ROLE if len(names.get(n, ())) < 2) == []


def test_identifier():
    assert [identifier(t) for t in ("Model", "Multi-head", "3D", "Playground", "My tab")] == [
        "model", "multihead", "three_d", "playground", "my_tab"]


# ---------------------------------------------------------------- planted violations, on a copy of app/

@pytest.fixture
def app_copy(tmp_path):
    shutil.copytree(ROOT / "app", tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tmp_path / "app"


def _plant(path: Path, text: str = '"""planted"""\n') -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_planted_feature_named_for_its_command_not_its_tab(app_copy):
    """The Model tab's package as it was: ``app/inspect`` (named for the CLI command)."""
    (app_copy / "model_tab").rename(app_copy / "inspect")
    assert feature_name_violations(app_copy) == [
        "app/inspect: a feature package whose tab is not in FEATURE_TABS (name it as its tab reads)"]


def test_planted_feature_whose_tab_title_changed(app_copy):
    for host in (app_copy / "lab" / "qt" / "host.py", app_copy / "shell" / "hosts.py"):
        host.write_text(host.read_text(encoding="utf-8").replace('"Lab"', '"Cost lab"'))
    assert feature_name_violations(app_copy) == ["app/lab: no tab or dock titled 'Lab' in app/shell or app/lab"]
    assert feature_name_violations(app_copy, {**FEATURE_TABS, "lab": "Cost lab"}) == [
        "app/lab: its tab reads 'Cost lab': name it 'cost_lab'"]


def test_planted_view_named_for_something_else(app_copy):
    """The 3D view as it was: ``surface``."""
    registry = app_copy / "playground" / "views" / "registry.py"
    registry.write_text(registry.read_text(encoding="utf-8").replace(
        'PlaygroundView("three_d", "3D", "app.playground.views.three_d.view")',
        'PlaygroundView("surface", "3D", "app.playground.views.surface.view")'))
    (app_copy / "playground" / "views" / "three_d").rename(app_copy / "playground" / "views" / "surface")
    assert view_name_violations(app_copy) == [
        "views/registry.py: the view titled '3D' is named 'surface': name it 'three_d'"]


def test_planted_models_shim(app_copy):
    """The deprecated re-exports as they were: ``app/models/``."""
    _plant(app_copy / "models" / "__init__.py")
    assert model_word_violations(app_copy) == [
        "app/models: 'models' names nothing here: a model lives in its feature's model/ (or model.py)"]


def test_planted_qt_import_in_a_model(app_copy):
    """A Qt table model in a module called model (function-level import counted; TYPE_CHECKING left out)."""
    lab = app_copy / "lab" / "model.py"
    lab.write_text(lab.read_text(encoding="utf-8") + "\n\nif TYPE_CHECKING:\n"
                   "    from PySide6.QtWidgets import QWidget\n\n\ndef table():\n"
                   "    from PySide6.QtCore import QAbstractTableModel\n\n    return QAbstractTableModel\n")
    assert model_word_violations(app_copy) == ["app/lab/model.py: imports PySide6.QtCore: 'model' is the Qt-free part"]


def test_planted_model_outside_a_feature(app_copy):
    _plant(app_copy / "widgets" / "model.py")
    _plant(app_copy / "training" / "qt" / "model" / "__init__.py", "import pyqtgraph\n")
    assert model_word_violations(app_copy) == [
        "app/training/qt/model: 'model' means a feature's Qt-free part; here it is not one (name it for what it is)",
        "app/training/qt/model/__init__.py: imports pyqtgraph: 'model' is the Qt-free part",
        "app/widgets/model.py: 'model' means a feature's Qt-free part; here it is not one (name it for what it is)"]


def test_planted_module_name_two_features_use_for_different_things(app_copy):
    """The Detect view's module as it was, beside Training's heads grid: a heads view in two features."""
    _plant(app_copy / "model_tab" / "qt" / "heads_view.py")
    _plant(app_copy / "training" / "qt" / "heads_view.py")
    assert shared_name_violations(app_copy) == [
        "heads_view.py: in model_tab, training: a module name two features share plays one role in both (say which "
        "in SAME_ROLE) or is renamed for what it does"]


def test_planted_class_name_for_two_things(app_copy):
    """The Detect view's class as it was (Training's heads grid is a HeadsView too), and a scan's progress named
    as a lesson's saved progress is."""
    _plant(app_copy / "model_tab" / "qt" / "detect_view.py",
           "class HeadsView:\n    pass\n\n\nclass Progress:\n    pass\n")
    assert shared_class_violations(app_copy) == [
        "class HeadsView: in app/model_tab/qt/detect_view.py, app/training/qt/heads.py: one name, two things (rename "
        "one for what it is, or say the one role in SAME_CLASS)",
        "class Progress: in app/common/progress.py, app/model_tab/qt/detect_view.py: one name, two things (rename one "
        "for what it is, or say the one role in SAME_CLASS)"]
