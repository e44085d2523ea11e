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


# --- the front page and the lesson list name what ships ---------------------------------------------------------

NUMBERS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                      "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}


def _readme_bullet(place: str) -> str:
    """The README tour's bullet for ``place`` ("- **Playground** — …" up to the next top-level bullet)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(rf"^- \*\*{re.escape(place)}\*\*.*?(?=^- |^#|\Z)", text, re.M | re.S)
    assert m, f"README's tour has no bullet for {place}"
    return m.group(0)


def _bold(text: str) -> set[str]:
    return set(re.findall(r"\*\*([^*]+)\*\*", text))


def test_readme_names_every_command_the_parser_has():
    from app.cli import COMMANDS

    line = re.search(r"`attention-playground ([a-z |\n]+)`", _readme_bullet("Command line"))
    assert line, "README's Command line bullet lists no commands"
    named = [c.strip() for c in line.group(1).split("|")]
    assert named == list(COMMANDS), "README's commands, in --help's order"


def test_readme_counts_the_lessons_that_ship():
    lessons = sorted((ROOT / "resources" / "lessons").glob("*.json"))
    m = re.search(r"— (\w+) guided lessons", _readme_bullet("Learn mode"))
    assert m and NUMBERS.get(m.group(1)) == len(lessons), (m and m.group(1), len(lessons))


def test_readme_names_every_view_of_the_playground_and_the_model_tab():
    from app.playground.views.registry import VIEWS

    playground = {"Steps", *(v.title for v in VIEWS)}
    assert playground <= _bold(_readme_bullet("Playground")), playground - _bold(_readme_bullet("Playground"))
    tab = (ROOT / "app" / "model_tab" / "qt" / "tab.py").read_text(encoding="utf-8")
    model = set(re.findall(r"self\.views\.addTab\(self\.\w+, \"([^\"]+)\"\)", tab))
    assert {"Heads", "Detect", "Generate"} <= model  # the pattern still reads the tab
    assert model <= _bold(_readme_bullet("Model")), model - _bold(_readme_bullet("Model"))


def test_readme_names_the_modern_options():
    bullet = _readme_bullet("Playground").lower()
    for option in ("rotary", "alibi", "soft-cap", "k/v heads", "gqa", "sliding window", "sinks"):
        assert option in bullet, option


def test_lessons_md_lists_every_bundled_lesson():
    import json

    files = sorted((ROOT / "resources" / "lessons").glob("*.json"))
    ships = [(p.name, *(json.loads(p.read_text(encoding="utf-8"))[k] for k in ("id", "title"))) for p in files]
    doc = (ROOT / "docs" / "lessons.md").read_text(encoding="utf-8")
    listed = [(f, i.strip(), t.strip()) for f, i, t in re.findall(r"^\| `(\d\d-[\w-]+\.json)` \|([^|]+)\|([^|]+)\|$",
                                                                   doc, re.M)]
    assert listed == ships
    m = re.search(r"^(\w+), in the order the Learn dock lists them", doc, re.M)
    assert m and NUMBERS.get(m.group(1).lower()) == len(files)


def test_the_readme_and_the_notebook_say_how_to_install_the_cpu_build_of_torch():
    """The app is not on the package index: neither says ``pip install attention-playground``, and both give the
    pip, pipx and uv commands with torch's CPU wheel index (the default build on Linux brings CUDA, a 5 GB venv)."""
    import json

    notebook = json.loads((ROOT / "docs" / "notebook.ipynb").read_text(encoding="utf-8"))
    first = "".join(notebook["cells"][0]["source"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for text in (readme, first):
        assert "pip install attention-playground" not in text and "pipx install attention-playground" not in text
        for command in ("pip install --extra-index-url https://download.pytorch.org/whl/cpu .",
                        'pipx install --pip-args="--extra-index-url https://download.pytorch.org/whl/cpu" .',
                        "uv tool install --index https://download.pytorch.org/whl/cpu ."):
            assert command in text, command
