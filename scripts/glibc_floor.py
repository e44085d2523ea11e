"""The oldest glibc a built bundle runs on: the highest ``GLIBC_x.y`` symbol version that any ELF file in it needs.

    .venv/bin/python scripts/glibc_floor.py [dist/attention-playground] [--top 8] [--json FILE]

Reads every ELF file under the bundle (the executable, libpython, torch's, Qt's, numpy's and the libraries copied
from the build machine: libstdc++, libexpat, the xcb libraries …) with ``objdump -T`` and collects the versions of
the glibc symbols each one imports (``GLIBC_2.34`` …; ``GLIBCXX_``/``CXXABI_`` are libstdc++'s own, which the bundle
carries, so they do not count). The floor is the highest version found; the files that need it are listed, so a
library copied from a newer build machine is found at once. ``scripts/build.sh`` runs it after every build and
docs/packaging.md quotes its output. Needs binutils' objdump (``build.sh`` installs it).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEEDED = re.compile(r"\(GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\)")


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def glibc_needs(path: Path) -> set[tuple[int, ...]]:
    """The glibc versions ``path`` imports symbols from (objdump -T: the dynamic symbol table)."""
    out = subprocess.run(["objdump", "-T", str(path)], capture_output=True, text=True).stdout
    found = set()
    for line in out.splitlines():
        if "*UND*" not in line:  # only what it imports, not what it defines
            continue
        for m in NEEDED.finditer(line):
            found.add(tuple(int(x) for x in m.groups() if x is not None))
    return found


def floor(bundle: Path) -> dict[str, object]:
    per_file: dict[str, tuple[int, ...]] = {}
    for path in sorted(bundle.rglob("*")):
        if path.is_symlink() or not path.is_file() or not is_elf(path):
            continue
        needs = glibc_needs(path)
        if needs:
            per_file[str(path.relative_to(bundle))] = max(needs)
    if not per_file:
        raise SystemExit(f"glibc_floor: no ELF file with glibc symbols under {bundle}")
    top = max(per_file.values())
    version = ".".join(map(str, top))
    return {"bundle": str(bundle), "floor": f"glibc {version}", "elf_files": len(per_file),
            "needing_the_floor": sorted(f for f, v in per_file.items() if v == top),
            "by_version": {".".join(map(str, v)): sum(1 for x in per_file.values() if x == v)
                           for v in sorted(set(per_file.values()), reverse=True)},
            "files": {f: ".".join(map(str, v)) for f, v in sorted(per_file.items(), key=lambda kv: kv[1],
                                                                     reverse=True)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle", nargs="?", default=str(ROOT / "dist" / "attention-playground"))
    ap.add_argument("--top", type=int, default=8, help="list this many of the most demanding files (default 8)")
    ap.add_argument("--json", help="also write the whole result (every file's need) to this JSON file")
    args = ap.parse_args()
    if shutil.which("objdump") is None:
        print("glibc_floor: objdump not found (apt install binutils)", file=sys.stderr)
        return 2
    bundle = Path(args.bundle)
    if not bundle.is_dir():
        print(f"glibc_floor: no bundle at {bundle}; build it with scripts/build.sh", file=sys.stderr)
        return 2
    result = floor(bundle)
    print(f"{result['floor']}: the oldest glibc this bundle runs on ({result['elf_files']} ELF files read)")
    needing = list(result["needing_the_floor"])  # type: ignore[call-overload]
    print("needed by: " + ", ".join(needing[:12]) + (f" and {len(needing) - 12} more" if len(needing) > 12 else ""))
    print("files per version: " + ", ".join(f"{v}: {n}" for v, n in result["by_version"].items()))  # type: ignore
    for name, version in list(result["files"].items())[: args.top]:  # type: ignore[union-attr]
        print(f"  {version:>6}  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
