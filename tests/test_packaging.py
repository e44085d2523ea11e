"""Packaging checks that do not build anything: build.spec's rules, the build/CI scripts, the smoke test's CSV
comparison, and the resource path helper under a fake PyInstaller bundle (sys._MEIPASS)."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "build.spec"


def spec_text() -> str:
    return SPEC.read_text(encoding="utf-8")


def filter_rules() -> dict:
    """Execute the spec's self-contained filter-rules block (DROP, DROP_UNLESS, wanted, prune)."""
    text = spec_text()
    start = text.index("# --- filter rules")
    end = text.index("# --- end of filter rules ---")
    namespace = {"os": os, "sys": sys, "fnmatch": fnmatch}
    exec(compile(text[start:end], str(SPEC), "exec"), namespace)
    return namespace


def test_spec_is_valid_python() -> None:
    ast.parse(spec_text(), filename=str(SPEC))


def test_spec_collects_lazy_imports_and_resources() -> None:
    text = spec_text()
    for needle in ('collect_submodules("app")', 'collect_submodules("attention_core")', '"safetensors.torch"',
                   '"safetensors"', '"tokenizers"', '"tokenizers.models"', '"huggingface_hub.hf_api"',
                   '"platformdirs"', '"pyqtgraph.exporters"', '"PySide6.QtSvg"',
                   'tree(ROOT / "resources", "resources")', '"bundle_entry.py"'):
        assert needle in text, needle
    assert (ROOT / "scripts" / "bundle_entry.py").is_file()
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    assert "strip=True" not in code.replace(" ", ""), "a global strip breaks numpy's OpenBLAS"


def test_spec_excludes_what_the_app_does_not_use() -> None:
    text = spec_text()
    excludes = re.search(r"excludes = \[(.*?)\n\]", text, re.S).group(1)
    for name in ("tkinter", "pytest", "PyInstaller", "networkx", "jinja2", "PySide6.QtQml", "PySide6.QtNetwork"):
        assert f'"{name}"' in excludes, name
    # torch.optim imports torch._dynamo on first use, which imports sympy, torch._inductor and torch.onnx.
    for needed in ("torch._dynamo", "torch._inductor", "sympy", "mpmath", "torch.onnx", "torch.testing"):
        assert f'"{needed}"' not in excludes, needed


@pytest.mark.parametrize("dest, keep", [
    ("torch/include/ATen/ATen.h", False),
    ("torch/test/apply_utils_test", False),
    ("torch/bin/test_api", False),
    ("torch/bin/protoc", False),
    ("torch/bin/torch_shm_manager", True),
    ("torch/lib/libtorch_cpu.so", True),
    ("torch/lib/libtorchbind_test.so", False),
    ("torch/_C.cpython-311-x86_64-linux-gnu.so", True),
    ("torch/testing/_internal/common_utils.py", True),
    ("PySide6/Qt/translations/qt_de.qm", False),
    ("PySide6/Qt/plugins/platforms/libqxcb.so", True),
    ("PySide6/Qt/plugins/platforms/libqoffscreen.so", True),
    ("PySide6/Qt/plugins/platforms/libqwayland-egl.so", False),
    ("PySide6/Qt/plugins/platforms/libqeglfs.so", False),
    ("PySide6/Qt/plugins/xcbglintegrations/libqxcb-glx-integration.so", True),
    ("PySide6/Qt/plugins/imageformats/libqsvg.so", True),
    ("PySide6/Qt/plugins/iconengines/libqsvgicon.so", True),
    ("PySide6/Qt/plugins/tls/libqopensslbackend.so", False),
    ("PySide6/Qt/lib/libQt6DBus.so.6", True),
    ("PySide6/Qt/lib/libQt6XcbQpa.so.6", True),
    ("PySide6/Qt/lib/libQt6Svg.so.6", True),
    ("PySide6/Qt/lib/libQt6WaylandClient.so.6", False),
    ("libscipy_openblas64_-32a4b2a6.so", True),
    ("resources/styles/light.qss", True),
    ("resources/icons/app.png", True),
])
def test_drop_rules(dest: str, keep: bool) -> None:
    assert filter_rules()["wanted"](dest) is keep


def test_prune_removes_symlinks_to_dropped_files() -> None:
    rules = filter_rules()
    binaries = [
        ("PySide6/Qt/lib/libQt6Gui.so.6", "/nonexistent/libQt6Gui.so.6", "BINARY"),
        ("PySide6/Qt/lib/libQt6WaylandClient.so.6", "/nonexistent/libQt6WaylandClient.so.6", "BINARY"),
    ]
    datas = [
        ("libQt6Gui.so.6", "PySide6/Qt/lib/libQt6Gui.so.6", "SYMLINK"),
        ("libQt6WaylandClient.so.6", "PySide6/Qt/lib/libQt6WaylandClient.so.6", "SYMLINK"),
        ("resources/presets/x.json", "/nonexistent/x.json", "DATA"),
    ]
    kept_bins, kept_datas = rules["prune"](binaries, datas)
    assert [e[0] for e in kept_bins] == ["PySide6/Qt/lib/libQt6Gui.so.6"]
    assert [e[0] for e in kept_datas] == ["libQt6Gui.so.6", "resources/presets/x.json"]


def test_spec_version_comes_from_the_app() -> None:
    from app import __version__

    version_file = (ROOT / "app" / "common" / "version.py").read_text()
    match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', version_file, re.M)
    assert match and match.group(1) == __version__


@pytest.mark.parametrize("script", ["build.sh", "ci_bundle.sh"])
def test_shell_scripts_parse_and_are_executable(script: str) -> None:
    path = ROOT / "scripts" / script
    assert os.access(path, os.X_OK), f"{path} is not executable"
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_ci_rule_matches_build_inputs() -> None:
    text = (ROOT / "scripts" / "ci_bundle.sh").read_text()
    pattern = re.search(r"inputs='([^']+)'", text).group(1)
    for path in ("build.spec", "pyproject.toml", "scripts/build.sh", "app/cli.py", "attention_core/steps.py",
                 "resources/styles/light.qss", "scripts/smoke_test.py"):
        assert re.match(pattern, path), path
    for path in ("README.md", "tests/test_cli.py", "docs/packaging.md", "benchmarks/bench_attention.py"):
        assert not re.match(pattern, path), path


def test_smoke_test_csv_comparison(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        smoke = importlib.import_module("smoke_test")
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    values = np.array([[0.1, 0.9], [1 / 3, 2 / 3]])
    good = tmp_path / "good.csv"
    rows = ["x," + ",".join(repr(float(v)) for v in values[0]), "y," + ",".join(repr(float(v)) for v in values[1])]
    good.write_text(",a,b\n" + "\n".join(rows) + "\n")
    assert smoke.compare_csv(good, values, ["x", "y"], ["a", "b"]) == 0.0
    bad = tmp_path / "bad.csv"
    bad.write_text(",a,b\nx,0.1,0.9\ny,0.333333,0.666667\n")
    with pytest.raises(smoke.Failure):
        smoke.compare_csv(bad, values, ["x", "y"], ["a", "b"])


def test_resource_helper_finds_source_and_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """app/common/resources.py finds resources/ in the checkout, and at <sys._MEIPASS>/resources in a bundle, which is
    where build.spec puts it."""
    resources = pytest.importorskip("app.common.resources")
    monkeypatch.delattr(sys, "_MEIPASS", raising=False)
    assert resources.resource_root() == ROOT / "resources"
    fake = tmp_path / "_internal"
    (fake / "resources" / "styles").mkdir(parents=True)
    (fake / "resources" / "styles" / "light.qss").write_text("QWidget { }", encoding="utf-8")
    monkeypatch.setattr(sys, "_MEIPASS", str(fake), raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert resources.resource_root() == fake / "resources"
    assert resources.resource_path("styles", "light.qss") == fake / "resources" / "styles" / "light.qss"
    assert resources.read_style("light") == "QWidget { }"
    # build.spec maps <repo>/resources/X to <bundle>/resources/X.
    assert 'tree(ROOT / "resources", "resources")' in spec_text()


def test_no_module_the_app_imports_is_excluded_from_the_bundle() -> None:
    """Import every app module (as the bundle's --self-test does, GUI included) and check sys.modules against the
    spec's excludes: superqt.utils imports pygments, and excluding it broke the bundle's start-up."""
    text = spec_text()
    excludes = re.findall(r'"([\w.]+)"', re.search(r"excludes = \[(.*?)\n\]", text, re.S).group(1))
    script = ("import pkgutil, importlib, sys, app, attention_core\n"
              "for pkg in (app, attention_core):\n"
              "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
              "        importlib.import_module(m.name)\n"
              "print('\\n'.join(sorted(sys.modules)))\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = set(r.stdout.split())
    assert "superqt.utils" in loaded and "torch" in loaded  # the walk really reached the GUI and the core
    hit = sorted(m for m in loaded for ex in excludes if m == ex or m.startswith(ex + "."))
    assert hit == [], f"modules the app imports but build.spec excludes: {hit}"


def test_torch_keeps_the_sources_it_reads() -> None:
    """The bundle keeps only a dozen of torch's .py sources (build.spec TORCH_SOURCES): every torch config module
    (``install_config_module`` reads its own source on import: ``import torch`` fails without it) must be among
    them, so a torch upgrade that adds one fails here rather than in the bundle."""
    import importlib.util

    text = spec_text()
    listed = set(re.findall(r'"(torch[\w.]*)"', re.search(r"TORCH_SOURCES = \[(.*?)\n\]", text, re.S).group(1)))
    torch_dir = Path(importlib.util.find_spec("torch").origin).parent
    needed = set()
    for path in torch_dir.rglob("*.py"):
        rel = path.relative_to(torch_dir.parent)
        if "testing" in rel.parts or rel.name == "_config_module.py":
            continue
        if "install_config_module(" in path.read_text(encoding="utf-8", errors="replace"):
            needed.add(".".join(rel.with_suffix("").parts))
    assert needed and needed <= listed, sorted(needed - listed)
    assert '"torch": "pyz"' in text
