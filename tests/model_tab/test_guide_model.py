"""docs/guide.md's "The window" section listed the tabs without the Model tab, and its contents list had no entry
for the Model section. Every tab the window shows is named there, and every section of the guide is listed."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_the_window_section_names_every_tab_the_window_shows(window):
    text = GUIDE.read_text(encoding="utf-8")
    first = _section(text, "The window").split("\n\n")[1]  # the paragraph that lists the tabs
    tabs = [window.tabs.tabText(i).replace("&", "") for i in range(window.tabs.count())]
    assert "Model" in tabs  # the premise
    missing = [t for t in tabs if f"**{t}**" not in first]
    assert not missing, f"the window section does not name {missing}"


def test_the_contents_list_every_section():
    text = GUIDE.read_text(encoding="utf-8")
    contents = text[: text.index("\n## ")]
    sections = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    anchors = {s: "#" + re.sub(r"[^a-z0-9 -]", "", s.lower()).replace(" ", "-") for s in sections}
    assert [s for s, a in anchors.items() if f"]({a})" not in contents] == []
