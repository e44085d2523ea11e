"""The wheel and the sdist carry every file of resources/ (lessons, styles, icons), and an installed wheel finds them
with the checkout nowhere on sys.path. One build per session (sdist, then the wheel from the unpacked sdist, as an
index's users get it; no download: the venv's setuptools builds). The clean-venv install with every dependency and
the CLI run from it is scripts/check_wheel.sh (CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"

pytestmark = pytest.mark.slow


def resource_files() -> list[str]:
    """Every file under resources/, relative to it (caches left out: Python may write one beside __init__.py)."""
    return sorted(
        p.relative_to(RESOURCES).as_posix()
        for p in RESOURCES.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # setuptools' "Package would be ignored" for resources/'s data folders: every package is listed
    assert "would be ignored" not in proc.stdout + proc.stderr
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_the_wheel_carries_every_resource_inside_the_app(dists: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    expected = resource_files()
    assert any(f.startswith("lessons/") for f in expected) and "styles/light.qss" in expected  # the folder is real
    missing = [f for f in expected if f"app/resources/{f}" not in names]
    assert not missing, f"not in the wheel: {missing}"
    assert not any(n.startswith("resources/") for n in names), "resources/ must live inside the app, not beside it"
    meta = zipfile.ZipFile(dists["wheel"]).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for field in ("Requires-Python: >=3.10", "License-Expression: MIT", "Classifier: Framework :: Jupyter",
                  "Description-Content-Type: text/markdown", "# Attention Playground"):
        assert field in meta, field
    entry = zipfile.ZipFile(dists["wheel"]).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "attention-playground = app.__main__:main" in entry
    assert "[gui_scripts]" in entry and "attention-playground-gui = app.__main__:main" in entry


def test_the_sdist_carries_every_resource(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = [f for f in resource_files() if f"resources/{f}" not in names]
    assert not missing, f"not in the sdist: {missing}"
    assert {"setup.py", "pyproject.toml", "README.md", "LICENSE"} <= names


def test_an_installed_wheel_finds_every_resource_without_the_checkout(dists: dict[str, Path], tmp_path: Path) -> None:
    """Installed with --target (no dependencies: the lookup needs none), run with -S so that the venv's editable
    install (a .pth that maps app to the checkout) is not read, from a folder outside the checkout."""
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--disable-pip-version-check",
         "--target", str(site), str(dists["wheel"])],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    probe = """
import json, sys
from pathlib import Path
from app.common.resources import read_style, resource_path, resource_root
from app.learn.model.files import bundled_lessons
import app
root = resource_root()
files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
print(json.dumps({"app": app.__file__, "root": str(root), "files": files, "lessons": len(bundled_lessons()),
                  "style": len(read_style("light")), "icon": resource_path("icons", "app.png").is_file(),
                  "path": [str(Path(p or ".").resolve()) for p in sys.path],
                  "editable": [m for m in sys.modules if "editable" in m]}))
"""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    # site-packages comes after the wheel's folder, for the stdlib-only dependencies of the lesson loader
    env["PYTHONPATH"] = os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]])
    run = subprocess.run([sys.executable, "-S", "-c", probe], cwd=elsewhere, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout)
    assert Path(found["app"]).is_relative_to(site)
    assert Path(found["root"]) == site / "app" / "resources"
    # neither the checkout (nor its app/) on sys.path, nor the editable install's finder loaded
    assert str(ROOT) not in found["path"] and str(ROOT / "app") not in found["path"], found["path"]
    assert found["editable"] == []
    assert set(resource_files()) <= set(found["files"])
    assert found["lessons"] == len(list((RESOURCES / "lessons").glob("*.json")))
    assert found["style"] > 0 and found["icon"]


def paths_beside_the_code(root: Path) -> list[str]:
    """``module:line`` of every use of ``__file__`` under root/app: a path found from the code's own place works
    in a checkout only (an installed wheel has no resources/ two folders up; a bundle keeps no sources)."""
    import ast

    found = []
    for path in sorted((root / "app").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(root).as_posix()}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Name) and node.id == "__file__"]
    return found


def test_no_app_module_finds_files_beside_its_own_source() -> None:
    assert paths_beside_the_code(ROOT) == []


def test_a_planted_path_beside_the_code_is_reported(tmp_path: Path) -> None:
    (tmp_path / "app" / "common").mkdir(parents=True)
    (tmp_path / "app" / "common" / "ok.py").write_text("import importlib.resources\n")
    (tmp_path / "app" / "common" / "bad.py").write_text(
        "from pathlib import Path\n\nROOT = Path(__file__).resolve().parents[2]\n")
    assert paths_beside_the_code(tmp_path) == ["app/common/bad.py:3"]
