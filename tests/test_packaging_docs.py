"""docs/packaging.md's bundle figures come from the scripts that measure them (scripts/bundle_figures.py, run by
scripts/smoke_test.py), and agree with one another and with the figures file the last smoke test wrote.

Building the bundle takes minutes, so the size is compared with ``dist/bundle-figures.json`` where a smoke test
left one (CI's smoke test itself fails when the documented size is off by more than 10 %); the measuring and the
comparison are checked here on a small fake bundle whose size is known by construction."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "packaging.md"


@pytest.fixture(scope="module")
def figures_module() -> Any:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module("bundle_figures")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def _docs() -> str:
    return DOCS.read_text(encoding="utf-8")


def test_the_documented_size_is_the_last_smoke_tests(figures_module: Any) -> None:
    last = figures_module.figures_path(ROOT / "dist" / "attention-playground")
    if not last.is_file():
        pytest.skip(f"no smoke test has run here ({last.relative_to(ROOT)} missing); CI's smoke test checks it")
    measured = json.loads(last.read_text(encoding="utf-8"))["size_mib"]
    documented = figures_module.documented_size()
    assert figures_module.size_problem(documented, measured) == ""


def test_the_sample_output_the_figures_and_the_glibc_example_agree(figures_module: Any) -> None:
    """One run wrote the figures block and the smoke test's sample output: the same size in both; the glibc
    example quotes the floor and ELF count of the figures block."""
    text = _docs()
    documented = figures_module.documented_size(text)
    output = figures_module.block(text, figures_module.OUTPUT_BLOCK)
    shown = re.search(r"^Executable: \S+ \(onedir, (\d+) MiB\)$", output, re.M)
    assert shown is not None, output[:300]
    assert int(shown.group(1)) == round(documented)
    assert re.search(r"^documented figures +PASS", output, re.M)
    figures = figures_module.block(text, figures_module.FIGURES_BLOCK)
    floor = re.search(r"glibc floor .*\*\*([0-9.]+)\*\*, (\d+) ELF files read", figures)
    assert floor is not None, figures
    assert f"glibc {floor.group(1)}: the oldest glibc this bundle runs on ({floor.group(2)} ELF files read)" in text


def test_the_start_up_table_says_when_and_how_it_was_measured() -> None:
    text = _docs()
    table = text[text.index("Start-up, headless"):]
    header = table.split("\n\n")[0]  # the paragraph above the table
    assert "benchmarks/bench_bundle.py" in header and re.search(r"20\d\d-\d\d-\d\d", header), header


def _fake_bundle(root: Path) -> Path:
    """1 MiB executable, 2.5 MiB under _internal/torch, 0.5 MiB under _internal/PySide6, a symlink to the torch
    library (not counted): 4 MiB in 3 files."""
    bundle = root / "attention-playground"
    (bundle / "_internal" / "torch" / "lib").mkdir(parents=True)
    (bundle / "_internal" / "PySide6").mkdir()
    (bundle / "attention-playground").write_bytes(b"\0" * 2**20)
    (bundle / "_internal" / "torch" / "lib" / "libtorch.so").write_bytes(b"\0" * (5 * 2**19))
    (bundle / "_internal" / "PySide6" / "libQt.so").write_bytes(b"\0" * 2**19)
    (bundle / "_internal" / "libtorch.so").symlink_to(bundle / "_internal" / "torch" / "lib" / "libtorch.so")
    return bundle


def test_a_bundles_size_and_parts_are_measured_as_documented(tmp_path: Path, figures_module: Any) -> None:
    bundle = _fake_bundle(tmp_path)
    assert figures_module.size_mib(bundle) == 4.0
    assert figures_module.largest_parts(bundle) == [("_internal/torch", 2.5), ("attention-playground", 1.0),
                                                    ("_internal/PySide6", 0.5)]
    figures = figures_module.measure(bundle)
    assert (figures["size_mib"], figures["files"]) == (4.0, 3)
    assert figures_module.figures_path(bundle) == tmp_path / "bundle-figures.json"


def test_a_size_off_by_more_than_ten_percent_is_refused(figures_module: Any) -> None:
    assert figures_module.size_problem(600, 580) == ""
    assert figures_module.size_problem(638, 580) == ""  # 10.0 %
    problem = figures_module.size_problem(838, 580)
    assert "838 MiB" in problem and "580 MiB" in problem and "44%" in problem and "--update-docs" in problem
    assert figures_module.size_problem(500, 580) != ""


def test_update_docs_rewrites_the_blocks_and_nothing_else(tmp_path: Path, figures_module: Any) -> None:
    docs = tmp_path / "packaging.md"
    docs.write_text(_docs(), encoding="utf-8")
    figures = figures_module.measure(_fake_bundle(tmp_path))
    output = "Executable: x (onedir, 4 MiB)\ndocumented figures  PASS  0.0s  4 MiB"
    figures_module.update_docs(figures, output, docs=docs)
    text = docs.read_text(encoding="utf-8")
    assert figures_module.documented_size(text) == 4.0
    assert figures_module.block(text, figures_module.OUTPUT_BLOCK).strip() == f"```\n{output}\n```"

    def outside(t: str) -> str:
        for start, end in (figures_module.FIGURES_BLOCK, figures_module.OUTPUT_BLOCK):
            t = t[:t.index(start)] + t[t.index(end):]
        return t

    assert outside(text) == outside(_docs())
