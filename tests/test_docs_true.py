"""The docs name only what is there: every path and every dotted module name the Markdown docs write in backticks
exists in the tree, so a move that forgets a doc fails here instead of misleading the next reader.

Why a test: the architecture doc's recipes and rooms drifted twice (a "How to add a view" step naming a file that
had moved, a layering line missing a package) with nothing to notice it."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md"])
TOP = ("app", "attention_core", "tests", "scripts", "benchmarks", "resources", "docs")
PATH = re.compile(r"`((?:{})/[A-Za-z0-9_./-]*)`".format("|".join(TOP)))
DOTTED = re.compile(r"`((?:app|attention_core)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
GENERATED = {"resources/icons/app.icns", "resources/icons/app.ico"}  # made by the bundle build on macOS / Windows
INSTALLED = {"app/resources/", "app.resources"}  # resources/ as the package an install maps it to (setup.py)
GONE = {"app.models", "app.gui"}  # scripting.md tells old scripts where these went
FILE_SUFFIXES = {"png", "svg", "ico", "icns", "json", "csv", "qss", "md", "py", "txt", "spec"}  # `app.png`: a file


def doc_mentions(pattern: re.Pattern[str], text: str) -> list[str]:
    return sorted({m.group(1) for m in pattern.finditer(text)})


def missing_paths(root: Path, text: str) -> list[str]:
    return [p for p in doc_mentions(PATH, text)
            if p not in GENERATED | INSTALLED and not (root / p.rstrip("/")).exists()]


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Names a module defines or imports (a dotted mention may end in a class, function, constant or attribute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if isinstance(node.value, ast.Dict):  # a lazy map: its keys import from the package
                names.update(k.value for k in node.value.keys
                             if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def resolves(root: Path, dotted: str) -> bool:
    """``a.b.c`` names a package, a module, or a name (and its attributes) defined in the longest module prefix."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:n])
        module = base.with_suffix(".py") if not base.is_dir() else base / "__init__.py"
        if not module.is_file():
            continue
        rest = parts[n:]
        return not rest or rest[0] in defined_names(module) or rest[0] in {"__main__"}
    return False


def unresolved_names(root: Path, text: str) -> list[str]:
    return [d for d in doc_mentions(DOTTED, text)
            if d not in GONE | INSTALLED and d.rsplit(".", 1)[1] not in FILE_SUFFIXES and not resolves(root, d)]


def test_every_path_the_docs_name_exists():
    missing = {doc.name: missing_paths(ROOT, doc.read_text(encoding="utf-8")) for doc in DOCS}
    assert not {k: v for k, v in missing.items() if v}


def test_every_module_the_docs_name_exists():
    missing = {doc.name: unresolved_names(ROOT, doc.read_text(encoding="utf-8")) for doc in DOCS}
    assert not {k: v for k, v in missing.items() if v}


def test_a_moved_path_or_module_is_reported(tmp_path):
    (tmp_path / "app" / "shell").mkdir(parents=True)
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "shell" / "__init__.py").write_text("")
    (tmp_path / "app" / "shell" / "hosts.py").write_text("def add_hosts():\n    pass\n")
    text = ("See `app/shell/hosts.py`, `app/shell/playground_tab.py`, `app.shell.hosts.add_hosts`, "
            "`app.shell.playground_tab` and `app.shell.hosts.gone`.")
    assert missing_paths(tmp_path, text) == ["app/shell/playground_tab.py"]
    assert unresolved_names(tmp_path, text) == ["app.shell.hosts.gone", "app.shell.playground_tab"]


def test_the_layering_line_names_every_app_package():
    """docs/architecture.md's "layering that results" line lists each top-level package of ``app`` once."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    line = next(p for p in text.split("\n\n") if "The layering that results" in p)
    named = set(re.findall(r"`app\.([a-z_]+)`", line))
    packages = {p.name for p in (ROOT / "app").iterdir() if (p / "__init__.py").is_file()} | {"cli"}
    assert named == packages


CITATION = re.compile(r"(?:(\S+)\s+)?\b[Ii]ssues? ?#?\d+")
UPSTREAM = {"pyqtgraph", "pyside6", "pyside", "qt", "torch", "pytorch", "transformers", "psygnal", "superqt", "numpy",
            "pyinstaller", "setuptools", "bertviz", "tokenizers", "safetensors"}  # another project's tracker
CODE = ("app", "attention_core", "tests", "scripts", "benchmarks")


def issue_citations(text: str, name: str = "<text>") -> list[str]:
    """Lines citing one of this project's issues: a comment says why, and the history is git's (an issue number
    means nothing to the next reader, and ages). An upstream project's issue ("pyqtgraph issue #3495") is a fact
    about that project and stays."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for m in CITATION.finditer(line):
            if (m.group(1) or "").strip("(\"'`,").lower().removesuffix("'s") not in UPSTREAM:
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_comments_say_why_not_which_issue():
    files = [p for top in CODE for p in (ROOT / top).rglob("*") if p.suffix in {".py", ".sh"}]
    found = [c for p in files for c in issue_citations(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not found, "\n".join(found)


def test_an_issue_citation_is_reported():
    planted = "\n".join(['"""Copy as code (iss' + 'ue 24): a script."""', "x = 1  # see iss" + "ue #12",
                         "# pyqtgraph iss" + "ue #3495 crashes the exporter", "y = 2  # tissue 3 is not one"])
    assert issue_citations(planted) == [f"<text>:{n}: {line}" for n, line in enumerate(planted.splitlines()[:2], 1)]
