"""The documentation stays true to the tree: every relative link and image in README.md and docs/*.md points at a
file that exists, every #anchor at a heading of its target (GitHub's slug rules), and the README stays short."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    text = re.sub(r"<[^>]+>", "", heading.strip().lower())
    return "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN").replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(2).replace("`", ""))
            n = seen.get(s, 0)
            found.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return found


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for doc in DOCS:
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for link in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+://", link) or link.startswith("mailto:"):
                continue
            path, _, frag = link.partition("#")
            target = (doc.parent / path).resolve() if path else doc
            if not target.exists():
                broken.append(f"{doc.name}: no file {link}")
            elif frag and (target.suffix != ".md" or frag not in anchors(target)):
                broken.append(f"{doc.name}: no heading for {link}")
    assert broken == []


def test_the_readme_is_a_five_minute_read():
    assert (ROOT / "README.md").stat().st_size <= 15 * 1024
