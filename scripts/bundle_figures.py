"""The built bundle's figures, measured in one place and quoted by docs/packaging.md from there.

    .venv/bin/python scripts/bundle_figures.py [dist/attention-playground]          # print them, compare with docs
    .venv/bin/python scripts/bundle_figures.py [BUNDLE] --update-docs             # rewrite the docs' block

``scripts/smoke_test.py`` measures them on every run of a onedir bundle, writes them to ``bundle-figures.json``
beside the bundle (``dist/bundle-figures.json``), and fails its "documented figures" check when the size the docs
give is off by more than ``TOLERANCE``; ``smoke_test.py --update-docs`` (or this script's) rewrites the block between
``<!-- bundle-figures:start -->`` and ``<!-- bundle-figures:end -->`` in docs/packaging.md and, from the smoke
test, the sample of its output between ``<!-- smoke-output:start -->`` and ``<!-- smoke-output:end -->``.
tests/test_packaging_docs.py compares the docs with the figures file the last smoke test wrote.

Size: the bytes of every regular file under the bundle, symlinks not followed, in MiB (2**20), as
``benchmarks/run_all.py``'s budget row counts it. ELF files and the glibc floor: ``scripts/glibc_floor.py``
(needs objdump; left out without it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "packaging.md"
TOLERANCE = 0.10
"""How far the documented size may be from the measured one (a fraction) before the smoke test fails."""
FIGURES_BLOCK = ("<!-- bundle-figures:start -->", "<!-- bundle-figures:end -->")
OUTPUT_BLOCK = ("<!-- smoke-output:start -->", "<!-- smoke-output:end -->")
SIZE_ROW = re.compile(r"^\| onedir size \| \*\*([0-9.]+) MiB\*\*", re.M)


def figures_path(bundle: Path) -> Path:
    """Where the smoke test writes the figures of ``bundle``: beside it (``dist/bundle-figures.json``)."""
    return Path(bundle).resolve().parent / "bundle-figures.json"


def _files(bundle: Path) -> list[Path]:
    return [p for p in bundle.rglob("*") if not p.is_symlink() and p.is_file()]


def size_mib(bundle: Path) -> float:
    """The bytes of every regular file under ``bundle`` (symlinks not followed), in MiB."""
    return sum(p.stat().st_size for p in _files(bundle)) / 2**20


def largest_parts(bundle: Path, count: int = 6) -> list[tuple[str, float]]:
    """The ``count`` largest entries of the bundle (``_internal``'s folders and files, and the executable), MiB
    each, largest first."""
    tops: dict[str, float] = {}
    for path in _files(bundle):
        rel = path.relative_to(bundle).parts
        key = "/".join(rel[:2]) if rel[0] == "_internal" and len(rel) > 1 else rel[0]
        tops[key] = tops.get(key, 0.0) + path.stat().st_size / 2**20
    return sorted(tops.items(), key=lambda kv: -kv[1])[:count]


def measure(bundle: Path, timings: dict[str, float] | None = None) -> dict[str, Any]:
    """The figures of the onedir bundle at ``bundle``; ``timings`` (the smoke test's start-up medians, seconds)
    are carried along."""
    bundle = Path(bundle)
    files = _files(bundle)
    figures: dict[str, Any] = {
        "measured": datetime.date.today().isoformat(),
        "size_mib": round(size_mib(bundle), 1),
        "files": len(files),
        "largest_parts_mib": [[name, round(mib, 1)] for name, mib in largest_parts(bundle)],
        "load_average": round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None,
        "versions": _versions(),
    }
    if shutil.which("objdump"):
        sys.path.insert(0, str(ROOT / "scripts"))
        try:
            from glibc_floor import floor
        finally:
            sys.path.remove(str(ROOT / "scripts"))
        try:
            result = floor(bundle)
        except SystemExit:  # no ELF file with glibc symbols (not a real bundle): nothing to quote
            return _with_timings(figures, timings)
        figures.update(glibc_floor=str(result["floor"]).split()[-1], elf_files=result["elf_files"],
                       needing_the_floor=result["needing_the_floor"])
    return _with_timings(figures, timings)


def _with_timings(figures: dict[str, Any], timings: dict[str, float] | None) -> dict[str, Any]:
    if timings:
        figures["self_test_s"] = {k: round(v, 2) for k, v in timings.items()}
    return figures


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for shown, names in (("PyInstaller", ("pyinstaller",)), ("torch", ("torch",)),
                         ("PySide6", ("PySide6", "PySide6-Essentials"))):
        for name in names:
            try:
                found[shown] = metadata.version(name)
                break
            except metadata.PackageNotFoundError:
                continue
    return found


def render(figures: dict[str, Any]) -> str:
    """The docs' block (a table) for ``figures``."""
    versions = ", ".join(f"{k} {v}" for k, v in figures.get("versions", {}).items())
    parts = ", ".join(f"`{name}` {mib:.0f}" for name, mib in figures.get("largest_parts_mib", []))
    rows = [f"| onedir size | **{figures['size_mib']:.0f} MiB** (bytes of its files, symlinks not followed), "
            f"{figures['files']:,} files |",
            f"| largest parts, MiB | {parts} |"]
    if "glibc_floor" in figures:
        rows.append(f"| glibc floor (`scripts/glibc_floor.py`) | **{figures['glibc_floor']}**, "
                    f"{figures['elf_files']} ELF files read; needed by "
                    f"{', '.join(f'`{n}`' for n in figures['needing_the_floor'])} |")
    timing = figures.get("self_test_s")
    if timing:
        rows.append("| `--self-test` wall time, median of 3 (smoke test) | "
                    + ", ".join(f"{k} {v:.2f} s" for k, v in timing.items()) + " |")
    load = figures.get("load_average")
    return "\n".join([
        f"Measured {figures['measured']} by `scripts/smoke_test.py` ({versions}"
        + (f"; load average {load}" if load is not None else "") + "):",
        "",
        "| | figure |",
        "|---|---|",
        *rows,
    ])


def replace_block(text: str, markers: tuple[str, str], body: str) -> str:
    """``text`` with what stands between ``markers`` replaced by ``body``; raises ValueError without them."""
    start, end = markers
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"no {start} … {end} block")
    return text[:i + len(start)] + "\n" + body.strip("\n") + "\n" + text[j:]


def block(text: str, markers: tuple[str, str]) -> str:
    start, end = markers
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"no {start} … {end} block")
    return text[i + len(start):j]


def documented_size(text: str | None = None) -> float:
    """The onedir size docs/packaging.md's figures block gives, MiB."""
    match = SIZE_ROW.search(block(DOCS.read_text(encoding="utf-8") if text is None else text, FIGURES_BLOCK))
    if match is None:
        raise ValueError("the figures block has no '| onedir size | **N MiB**' row")
    return float(match.group(1))


def size_problem(documented: float, measured: float, tolerance: float = TOLERANCE) -> str:
    """Why ``documented`` MiB does not stand for ``measured`` ("" when within ``tolerance``)."""
    if abs(documented - measured) <= tolerance * measured:
        return ""
    return (f"docs/packaging.md gives {documented:.0f} MiB, the bundle is {measured:.0f} MiB (off by "
            f"{abs(documented - measured) / measured:.0%}, more than {tolerance:.0%}): run "
            "scripts/smoke_test.py --update-docs")


def update_docs(figures: dict[str, Any], output: str | None = None, docs: Path = DOCS) -> None:
    """Rewrite the figures block (and, given ``output``, the smoke test's sample output) in ``docs``."""
    text = replace_block(docs.read_text(encoding="utf-8"), FIGURES_BLOCK, render(figures))
    if output is not None:
        text = replace_block(text, OUTPUT_BLOCK, f"```\n{output.strip()}\n```")
    docs.write_text(text, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle", nargs="?", default=str(ROOT / "dist" / "attention-playground"))
    ap.add_argument("--update-docs", action="store_true", help="rewrite docs/packaging.md's figures block")
    args = ap.parse_args()
    bundle = Path(args.bundle)
    if not bundle.is_dir():
        print(f"bundle_figures: no bundle at {bundle}; build it with scripts/build.sh", file=sys.stderr)
        return 2
    figures = measure(bundle)
    print(json.dumps(figures, indent=2))
    if args.update_docs:
        update_docs(figures)
        print(f"bundle_figures: {DOCS.relative_to(ROOT)} updated")
        return 0
    problem = size_problem(documented_size(), figures["size_mib"])
    if problem:
        print(f"bundle_figures: {problem}", file=sys.stderr)
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main())
